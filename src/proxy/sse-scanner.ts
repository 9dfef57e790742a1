// Reads the cost out of a `text/event-stream` as it passes: the last event
// whose data, read as JSON, holds a usable number at the path (the shape of
// OpenAI-compatible streams with `stream_options.include_usage`: many
// `data: {...}` chunks with `"usage": null`, one with the usage, then
// `data: [DONE]`; Anthropic's `message_delta` events count the same way).
//
// Events are split as the HTML standard's event-stream parser splits them:
// the stream is UTF-8 (a leading BOM dropped, bad bytes replaced); lines end
// in CRLF, LF or CR; a blank line dispatches; `data` lines join with LF (one
// leading space after the colon dropped); comments and other fields are
// skipped; an event cut off by the end of the stream is not dispatched.
//
// Cost. Each chunk is decoded once (native) and searched with the engine's
// string search, which is several times cheaper than a JavaScript loop over
// the bytes (bench/response-cost.mjs): line breaks become LF, the last blank
// line splits complete events from the one still arriving, and only an event
// holding the quoted last key of the path (`"total_tokens"`) or a `\u`
// escape (which could spell that key) is parsed, line by line, and its data
// read by JsonPathScanner. The chunks of an OpenAI stream without usage
// cost a decode and three searches each. The event still arriving is kept
// (as text) until it completes: an event whose data passes
// MAX_SSE_EVENT_BYTES, or whose text passes MAX_SSE_EVENT_CHARS, is skipped.
// The stream as a whole has no bound.
import type { JsonPath } from "./json-path";
import { JsonPathScanner, SCAN_COST, SCAN_UNUSABLE } from "./json-path-scanner";
import { type CostResult, costFound, NOT_FOUND } from "./response-cost-result";

/** The data of one event, UTF-8 bytes with the LF after each line, read at most: a larger event is skipped. */
export const MAX_SSE_EVENT_BYTES = 64 * 1024;
/** The text of one event (fields, comments and all) held at most while it arrives. */
export const MAX_SSE_EVENT_CHARS = 4 * MAX_SSE_EVENT_BYTES;

const LF = 10;
const CR = 13;

export class SseCostScanner {
  readonly #decoder = new TextDecoder();
  readonly #encoder = new TextEncoder();
  readonly #json: JsonPathScanner;
  readonly #literal: string | null;
  /**
   * The text since the end of the last blank line, starting with that LF
   * (the stream starts as if after one): the event still arriving. Kept as
   * pieces so a long event is joined once, not once per chunk.
   */
  #carry: string[] = ["\n"];
  #carryChars = 1;
  #carryEndsWithLf = true;
  /** Inside an event past MAX_SSE_EVENT_CHARS: dropped until its end. */
  #skipping = false;
  /** The last text ended in CR: an LF starting the next one belongs to it. */
  #pendingCr = false;
  #found = false;
  #cost = 0;
  #sawUnusable = false;
  #sawTooLarge = false;

  constructor(path: JsonPath) {
    this.#json = new JsonPathScanner(path, MAX_SSE_EVENT_BYTES);
    this.#literal = path.keyLiteral;
  }

  /** Never: a later event may always carry a cost. */
  get settled(): boolean {
    return false;
  }

  push(chunk: Uint8Array): void {
    let text = this.#decoder.decode(chunk, { stream: true });
    if (this.#pendingCr && text.length > 0) {
      this.#pendingCr = false;
      if (text.charCodeAt(0) === LF) text = text.slice(1);
    }
    if (text.length === 0) return;
    if (text.includes("\r")) {
      this.#pendingCr = text.charCodeAt(text.length - 1) === CR;
      text = text.replaceAll("\r\n", "\n").replaceAll("\r", "\n");
    }
    if (this.#skipping) {
      // The oversized event ends at the first blank line; what follows starts afresh.
      let blank = 0;
      if (!this.#carryEndsWithLf || text.charCodeAt(0) !== LF) {
        const at = text.indexOf("\n\n");
        blank = at < 0 ? -1 : at + 1;
      }
      if (blank < 0) {
        this.#carryEndsWithLf = text.charCodeAt(text.length - 1) === LF;
        return;
      }
      this.#skipping = false;
      this.#carry = [];
      this.#carryChars = 0;
      this.#carryEndsWithLf = false;
      text = text.slice(blank);
    }
    // The last blank line in the text, or one straddling the carry and the text.
    const lastBlank = text.lastIndexOf("\n\n");
    if (lastBlank < 0 && !(this.#carryEndsWithLf && text.charCodeAt(0) === LF)) {
      this.#hold(text);
      return;
    }
    const head = this.#carry.length === 1 ? this.#carry[0]! : this.#carry.join("");
    const all = head + text;
    // Complete events fill [0, end): `end` is just past the LF that ends the last blank line.
    const end = lastBlank >= 0 ? head.length + lastBlank + 2 : head.length + 1;
    this.#readEvents(all, end);
    const rest = all.slice(end - 1);
    this.#carry = [rest];
    this.#carryChars = rest.length;
    this.#carryEndsWithLf = rest.charCodeAt(rest.length - 1) === LF;
    if (this.#carryChars - 1 > MAX_SSE_EVENT_CHARS) this.#skip();
  }

  /** The outcome when the stream ended cleanly (the event still arriving is not dispatched). */
  end(): CostResult {
    if (this.#found) return costFound(this.#cost);
    if (this.#sawTooLarge) return NOT_FOUND.too_large;
    return this.#sawUnusable ? NOT_FOUND.malformed : NOT_FOUND.absent;
  }

  /** The outcome when the stream broke off: the last cost seen, if any. */
  cut(): CostResult {
    return this.#found ? costFound(this.#cost) : NOT_FOUND.aborted;
  }

  #hold(text: string): void {
    this.#carry.push(text);
    this.#carryChars += text.length;
    this.#carryEndsWithLf = text.charCodeAt(text.length - 1) === LF;
    if (this.#carryChars - 1 > MAX_SSE_EVENT_CHARS) this.#skip();
  }

  #skip(): void {
    this.#sawTooLarge = true;
    this.#skipping = true;
    this.#carry = [];
    this.#carryChars = 0;
  }

  // Reads the events of all[0, end) that may carry the path, in order.
  // all[0] is the LF that ended the blank line before the first event; each
  // event's last line ends with the first LF of the blank line after it.
  #readEvents(all: string, end: number): void {
    const literal = this.#literal;
    if (literal === null) {
      // A path through arrays only: every event may carry it.
      for (let start = 1; start < end; ) {
        const stop = all.indexOf("\n\n", start - 1);
        this.#readEvent(all, start, stop + 1);
        start = stop + 2;
      }
      return;
    }
    let nextKey = all.indexOf(literal);
    let nextEscape = all.indexOf("\\u");
    let from = 0;
    for (;;) {
      if (nextKey >= 0 && nextKey < from) nextKey = all.indexOf(literal, from);
      if (nextEscape >= 0 && nextEscape < from) nextEscape = all.indexOf("\\u", from);
      const hit = nextKey < 0 ? nextEscape : nextEscape < 0 ? nextKey : Math.min(nextKey, nextEscape);
      if (hit < 0 || hit >= end) return;
      // Neither the key nor `\u` holds an LF, so the blank lines around the hit bound its event.
      const before = all.lastIndexOf("\n\n", hit);
      const stop = all.indexOf("\n\n", hit);
      this.#readEvent(all, before < 0 ? 1 : before + 2, stop + 1);
      from = stop + 2;
    }
  }

  // One event: the lines of all[start, stop), each ending in LF.
  #readEvent(all: string, start: number, stop: number): void {
    if (stop - start > MAX_SSE_EVENT_CHARS) {
      // As if held across chunks (see push), so chunking never decides whether a cost counts.
      this.#sawTooLarge = true;
      return;
    }
    let data: string | null = null;
    for (let at = start; at < stop; ) {
      const lineEnd = all.indexOf("\n", at);
      if (all.startsWith("data", at)) {
        const afterName = at + 4;
        if (afterName === lineEnd) data = `${data ?? ""}\n`;
        else if (all.charCodeAt(afterName) === 0x3a) {
          const valueStart = all.charCodeAt(afterName + 1) === 0x20 ? afterName + 2 : afterName + 1;
          data = `${data ?? ""}${all.slice(valueStart, lineEnd)}\n`;
        }
      }
      at = lineEnd + 1;
    }
    if (data === null) return;
    const bytes = this.#encoder.encode(data);
    if (bytes.length > MAX_SSE_EVENT_BYTES) {
      this.#sawTooLarge = true;
      return;
    }
    // The trailing LF is JSON whitespace: no need to drop it as the standard does.
    const json = this.#json;
    json.reset();
    json.push(bytes, 0, bytes.length);
    const outcome = json.finish();
    if (outcome === SCAN_COST) {
      this.#found = true;
      this.#cost = json.cost;
    } else if (outcome === SCAN_UNUSABLE) this.#sawUnusable = true;
  }
}
