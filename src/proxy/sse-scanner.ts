// Reads the cost out of a `text/event-stream` as it passes: the last event
// whose data, read as JSON, holds a usable number at the path (the shape of
// OpenAI-compatible streams with `stream_options.include_usage`: many
// `data: {...}` chunks with `"usage": null`, one with the usage, then
// `data: [DONE]`; Anthropic's `message_delta` events count the same way).
//
// Events are split as the HTML standard's event-stream parser splits them:
// lines end in CRLF, LF or CR; a blank line dispatches; `data` lines join
// with LF (one leading space after the colon dropped); comments and other
// fields are skipped; a leading byte order mark is dropped; an event cut off
// by the end of the stream (no blank line after it) is not dispatched.
//
// Cost: the stream is read once, byte by byte, without decoding. An event is
// read as JSON only if its data holds the quoted last key of the path
// (`"total_tokens"`) or a `\u` escape (which could spell that key); a small
// matcher runs over the data as it passes, so the chunks without usage cost
// one comparison loop. An event's data is held only while it is split
// across chunks or lines, and at most MAX_SSE_EVENT_BYTES of it: a larger
// event is skipped. The stream as a whole has no bound.
import type { JsonPath } from "./json-path";
import { JsonPathScanner, SCAN_COST, SCAN_UNUSABLE } from "./json-path-scanner";
import { type CostResult, costFound, NOT_FOUND } from "./response-cost-result";

/** The data of one event, LFs included, read at most: a larger event is skipped. */
export const MAX_SSE_EVENT_BYTES = 64 * 1024;
const FIRST_BUFFER_BYTES = 4096;

const L_FIELD = 0;
const L_SPACE = 1;
const L_DATA = 2;
const L_SKIP = 3;

const DATA = [0x64, 0x61, 0x74, 0x61];
const BOM = [0xef, 0xbb, 0xbf];
const LF = new Uint8Array([0x0a]);

function endOfLine(b: Uint8Array, from: number, end: number): number {
  let j = from;
  while (j < end) {
    const c = b[j]!;
    if (c === 0x0a || c === 0x0d) break;
    j++;
  }
  return j;
}

export class SseCostScanner {
  readonly #json: JsonPathScanner;
  readonly #literal: Uint8Array | null;
  // The line being read.
  #line = L_FIELD;
  #fieldLength = 0;
  #fieldIsData = true;
  /** The last chunk ended in CR: an LF starting the next one belongs to it. */
  #skipLf = false;
  /** Bytes of a leading BOM matched so far; −1 once past the start. */
  #bomPos = 0;
  // The event being read.
  #hasData = false;
  #dataBytes = 0;
  #tooLarge = false;
  #candidate = false;
  #literalPos = 0;
  #backslash = false;
  /** The event's data while it is one line inside the current chunk: read in place, not copied. */
  #direct: Uint8Array | null = null;
  #directStart = 0;
  #directEnd = 0;
  #directLf = false;
  #buffer: Uint8Array | null = null;
  #bufferLength = 0;
  // What the stream has said so far.
  #found = false;
  #cost = 0;
  #sawUnusable = false;
  #sawTooLarge = false;

  constructor(path: JsonPath) {
    this.#json = new JsonPathScanner(path, MAX_SSE_EVENT_BYTES + 1);
    this.#literal = path.keyLiteral;
  }

  /** Never: a later event may always carry a cost. */
  get settled(): boolean {
    return false;
  }

  push(b: Uint8Array): void {
    const n = b.length;
    let i = 0;
    if (this.#skipLf && n > 0) {
      this.#skipLf = false;
      if (b[0] === 0x0a) i = 1;
    }
    while (this.#bomPos >= 0 && i < n) {
      if (b[i] === BOM[this.#bomPos]) {
        i++;
        this.#bomPos = this.#bomPos === 2 ? -1 : this.#bomPos + 1;
      } else {
        // Not a BOM: the bytes taken for one begin a field name, which is then not "data".
        this.#fieldLength = this.#bomPos;
        this.#fieldIsData = this.#bomPos === 0;
        this.#bomPos = -1;
      }
    }
    while (i < n) {
      switch (this.#line) {
        case L_FIELD: {
          const c = b[i]!;
          if (c === 0x3a) {
            i++;
            if (this.#fieldIsData && this.#fieldLength === 4) {
              this.#hasData = true;
              this.#line = L_SPACE;
            } else this.#line = L_SKIP;
          } else if (c === 0x0a || c === 0x0d) {
            if (this.#fieldLength === 0) this.#dispatch();
            else if (this.#fieldIsData && this.#fieldLength === 4) {
              // `data` without a colon: an empty value.
              this.#hasData = true;
              this.#appendLf();
            }
            i = this.#endLine(b, i, n);
          } else {
            this.#fieldIsData = this.#fieldIsData && this.#fieldLength < 4 && c === DATA[this.#fieldLength];
            this.#fieldLength++;
            i++;
          }
          break;
        }
        case L_SPACE:
          if (b[i] === 0x20) i++;
          this.#line = L_DATA;
          break;
        case L_DATA: {
          const eol = this.#candidate || this.#tooLarge ? endOfLine(b, i, n) : this.#match(b, i, n);
          this.#appendData(b, i, eol);
          if (eol === n) i = n;
          else {
            this.#appendLf();
            i = this.#endLine(b, eol, n);
          }
          break;
        }
        default: {
          const eol = endOfLine(b, i, n);
          i = eol === n ? n : this.#endLine(b, eol, n);
        }
      }
    }
    // The chunk is the consumer's once this returns: keep a copy of a pending event, not the chunk.
    if (this.#direct !== null) this.#materialize();
  }

  /** The outcome when the stream ended cleanly. */
  end(): CostResult {
    if (this.#found) return costFound(this.#cost);
    if (this.#sawTooLarge) return NOT_FOUND.too_large;
    return this.#sawUnusable ? NOT_FOUND.malformed : NOT_FOUND.absent;
  }

  /** The outcome when the stream broke off: the last cost seen, if any. */
  cut(): CostResult {
    return this.#found ? costFound(this.#cost) : NOT_FOUND.aborted;
  }

  // Runs the key matcher over a data line from `from` until its end (or the
  // chunk's) and returns that position. The matcher knows the literal starts
  // and ends with `"` and holds no other, so after a mismatch a match can
  // only restart at a `"`.
  #match(b: Uint8Array, from: number, end: number): number {
    const literal = this.#literal;
    if (literal === null) {
      this.#candidate = true;
      return endOfLine(b, from, end);
    }
    const last = literal.length;
    let m = this.#literalPos;
    let backslash = this.#backslash;
    let j = from;
    for (; j < end; j++) {
      const c = b[j]!;
      if (c === literal[m]) {
        backslash = false;
        if (++m === last) {
          this.#candidate = true;
          return endOfLine(b, j + 1, end);
        }
        continue;
      }
      if (c === 0x0a || c === 0x0d) break;
      m = c === 0x22 ? 1 : 0;
      if (c === 0x5c) backslash = !backslash;
      else {
        if (backslash && c === 0x75) {
          this.#candidate = true;
          return endOfLine(b, j + 1, end);
        }
        backslash = false;
      }
    }
    this.#literalPos = m;
    this.#backslash = backslash;
    return j;
  }

  // Past the line ending at `eol` (CR, LF or CRLF); a CR ending the chunk may have its LF in the next.
  #endLine(b: Uint8Array, eol: number, n: number): number {
    this.#line = L_FIELD;
    this.#fieldLength = 0;
    this.#fieldIsData = true;
    this.#literalPos = 0;
    this.#backslash = false;
    if (b[eol] === 0x0d) {
      if (eol + 1 === n) this.#skipLf = true;
      else if (b[eol + 1] === 0x0a) return eol + 2;
    }
    return eol + 1;
  }

  #appendData(b: Uint8Array, start: number, end: number): void {
    if (this.#tooLarge) return;
    this.#dataBytes += end - start;
    if (this.#dataBytes > MAX_SSE_EVENT_BYTES) {
      this.#tooLarge = true;
      this.#direct = null;
      this.#bufferLength = 0;
      return;
    }
    if (this.#direct === null && this.#bufferLength === 0) {
      this.#direct = b;
      this.#directStart = start;
      this.#directEnd = end;
      this.#directLf = false;
      return;
    }
    if (this.#direct !== null) this.#materialize();
    this.#copy(b, start, end);
  }

  #appendLf(): void {
    if (this.#tooLarge) return;
    if (++this.#dataBytes > MAX_SSE_EVENT_BYTES) {
      this.#tooLarge = true;
      this.#direct = null;
      this.#bufferLength = 0;
      return;
    }
    if (this.#direct !== null && !this.#directLf) this.#directLf = true;
    else {
      if (this.#direct !== null) this.#materialize();
      this.#copy(LF, 0, 1);
    }
  }

  #materialize(): void {
    const direct = this.#direct!;
    this.#direct = null;
    this.#copy(direct, this.#directStart, this.#directEnd);
    if (this.#directLf) this.#copy(LF, 0, 1);
  }

  #copy(b: Uint8Array, start: number, end: number): void {
    const need = this.#bufferLength + (end - start);
    let buffer = this.#buffer;
    if (buffer === null || buffer.length < need) {
      let size = buffer === null ? FIRST_BUFFER_BYTES : buffer.length * 2;
      while (size < need) size *= 2;
      const grown = new Uint8Array(Math.min(size, MAX_SSE_EVENT_BYTES));
      if (buffer !== null) grown.set(buffer.subarray(0, this.#bufferLength));
      this.#buffer = buffer = grown;
    }
    if (end - start === 1) buffer[this.#bufferLength] = b[start]!;
    else buffer.set(b.subarray(start, end), this.#bufferLength);
    this.#bufferLength = need;
  }

  #dispatch(): void {
    if (this.#hasData) {
      if (this.#tooLarge) this.#sawTooLarge = true;
      else if (this.#candidate) {
        const json = this.#json;
        json.reset();
        // A trailing LF is JSON whitespace: no need to drop it as the standard does.
        if (this.#direct !== null) json.push(this.#direct, this.#directStart, this.#directEnd);
        else json.push(this.#buffer!, 0, this.#bufferLength);
        const outcome = json.finish();
        if (outcome === SCAN_COST) {
          this.#found = true;
          this.#cost = json.cost;
        } else if (outcome === SCAN_UNUSABLE) this.#sawUnusable = true;
      }
    }
    this.#hasData = false;
    this.#dataBytes = 0;
    this.#tooLarge = false;
    this.#candidate = false;
    this.#direct = null;
    this.#bufferLength = 0;
  }
}
