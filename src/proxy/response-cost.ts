// Reads a response's cost from a header, or from the body as it
// streams to the client.
//
// The body is teed: the client gets one branch, untouched (in workerd a
// fetch body's branch stays a native stream, pumped to the client without
// passing through JavaScript or waiting on it), and the scanner reads the
// other. Two measured facts (bench/response-cost.mjs and the workerd
// variants behind docs/performance.md) shape how:
//
// - A read of the scanner's branch that asks for a minimum (workerd's
//   `readAtLeast(32 KiB)`) makes the tee pull the origin until that much has
//   arrived, and the client's branch gets nothing before: an LLM stream's
//   events would reach the client in 32 KiB bursts, or only at its end. So
//   every read takes what is there (`read(view)`), and the client's bytes
//   flow as the origin sends them.
// - Each read that returns is a trip into JavaScript, which in workerd costs
//   far more than the bytes: one per event of a stream that trickles in
//   would cost several times the stream's own CPU. So after a read that had
//   to wait for the network (the runtime's clock moved: in workerd it only
//   moves with I/O) and brought less than COALESCE_BELOW_BYTES, the scanner
//   pauses COALESCE_MS before its next read, and the events that arrived
//   meanwhile come in one read. The pause never holds the client back (its
//   branch is pumped on its own) and bounds what waits in the scanner's
//   branch to what the origin sends in COALESCE_MS at less than
//   COALESCE_BELOW_BYTES per pause; a faster origin is read without pauses.
//
// In workerd a branch left behind buffers up to the runtime's buffering
// limit (past it both branches fail): the scanner keeps up with the bytes as
// they come, so only a client branch nobody reads can get that far behind.
//
// A client that hangs up cancels only its branch: the scanner's branch keeps
// the origin's answer coming and reads it to its end, so the cost is what
// the whole answer says (docs/design.md keeps the origin request alive after a
// hang-up; an LLM API reports usage only in its last event, and a caller
// must not dodge it by leaving just before). `stop` ends that reading early;
// the cost is then what was seen.
//
// `cost` never rejects and settles once: at the body's end, when it errors,
// when the JSON scanner's answer can no longer change (its branch is then
// cancelled, or with `drain` read on to its end unscanned, so that `ended`
// marks the body's end), or when `stop` aborts. Register it with `waitUntil` before
// returning the response: after a hang-up it is what keeps the reading
// alive. Send the body or cancel it: a client branch nobody reads is
// buffered for until the runtime gives up on both branches.
import type { JsonPath } from "./json-path";
import { JsonPathScanner, SCAN_COST, SCAN_TOO_LARGE, SCAN_ABSENT } from "./json-path-scanner";
import { type CostResult, costFound, MAX_RESPONSE_COST, NOT_FOUND } from "./response-cost-result";
import type { ResponseCharge } from "./response-cost-spec";
import { SseCostScanner } from "./sse-scanner";

/** A JSON body is inspected up to this many bytes; a longer one has no cost (`too_large`). */
export const MAX_JSON_INSPECT_BYTES = 1024 * 1024;
const READ_BUFFER_BYTES = 64 * 1024;
/** A read that waited for the network and brought less than this is followed by a pause (see the top of this file). */
export const COALESCE_BELOW_BYTES = 16 * 1024;
/** The pause: what a trickling stream sends meanwhile is read at once. Delays only the settlement, never the client. */
export const COALESCE_MS = 100;
const MAX_HEADER_DIGITS = 10;

export interface TapOptions {
  /** Aborting it stops the scanner reading: its branch is cancelled and the cost is what was seen. The client's branch is not touched. */
  stop?: AbortSignal;
  /**
   * Read the origin's body to its end even once the cost is fixed (the
   * rest is read without scanning), so that `ended` marks the body's end:
   * the gateway holds an in-flight slot until then instead of piping the
   * client's branch through a second stream to learn it.
   */
  drain?: boolean;
}

export interface TappedBody {
  /** The body to send instead of the origin's: the same bytes, as they come. Null when the origin's is null. */
  readonly body: ReadableStream<Uint8Array> | null;
  readonly cost: Promise<CostResult>;
  /**
   * With `drain`, when the scanner's branch has been read to its end (or
   * broke off, or `stop` aborted); null when no branch is read (no body, a
   * type no scanner reads, a header cost). Never rejects.
   */
  readonly ended: Promise<void> | null;
}

export interface PricedResponse extends TappedBody {
  /** The cost when it is known before the body is sent (a header source), else null: then wait for `cost`. */
  readonly known: CostResult | null;
}

/**
 * The cost in header `name` (lower case): a whole number of digits, 0 to
 * MAX_RESPONSE_COST, surrounding spaces allowed; null for anything else
 * (absent, signed, fractional, a list, too large).
 */
export function costFromHeader(headers: Headers, name: string): number | null {
  const value = headers.get(name);
  if (value === null) return null;
  const text = value.trim();
  if (text.length === 0 || text.length > MAX_HEADER_DIGITS || !/^[0-9]+$/.test(text)) return null;
  const cost = Number(text);
  return cost <= MAX_RESPONSE_COST ? cost : null;
}

/** Which scanner reads a body of this Content-Type: `application/json` and any `+json` type, `text/event-stream`; null for others. */
export function bodyFormatOf(contentType: string | null): "json" | "sse" | null {
  if (contentType === null) return null;
  const semicolon = contentType.indexOf(";");
  const essence = (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  if (essence === "text/event-stream") return "sse";
  if (essence === "application/json") return "json";
  const slash = essence.indexOf("/");
  return slash > 0 && essence.endsWith("+json") && essence.length > slash + 6 ? "json" : null;
}

/**
 * Reads the cost at `path` from `body` as it passes (a JSON body, or the
 * data of SSE events, by `contentType`). A body of any other type passes
 * untouched, with cost `absent`.
 */
export function tapCost(body: ReadableStream<Uint8Array> | null, path: JsonPath, contentType: string | null, options: TapOptions = {}): TappedBody {
  const format = bodyFormatOf(contentType);
  if (body === null || format === null) return { body, cost: Promise.resolve(NOT_FOUND.absent), ended: null };
  const [client, scanned] = body.tee();
  const sink = format === "sse" ? new SseCostScanner(path) : new JsonSink(path);
  let settle!: (result: CostResult) => void;
  const cost = new Promise<CostResult>((resolve) => (settle = resolve));
  const read = readCost(scanned, sink, options.stop, options.drain === true, settle);
  return { body: client, cost, ended: options.drain === true ? read : null };
}

/**
 * The cost of `response` for `charge`: from its header at once, or from its
 * body through tapCost(). Send `body` in place of `response.body`.
 */
export function priceResponse(response: Response, charge: ResponseCharge, options: TapOptions = {}): PricedResponse {
  const source = charge.source;
  if (source.kind === "header") {
    const cost = costFromHeader(response.headers, source.name);
    const known = cost === null ? (response.headers.has(source.name) ? NOT_FOUND.malformed : NOT_FOUND.absent) : costFound(cost);
    return { body: response.body, cost: Promise.resolve(known), known, ended: null };
  }
  const tapped = tapCost(response.body, source.path, response.headers.get("content-type"), options);
  return { body: tapped.body, cost: tapped.cost, known: null, ended: tapped.ended };
}

/** What a tap feeds: the scanners behind one shape. */
interface CostSink {
  push(chunk: Uint8Array): void;
  /** The outcome at a clean end. */
  end(): CostResult;
  /** The outcome when the body broke off. */
  cut(): CostResult;
  /** True once more bytes cannot change the outcome. */
  readonly settled: boolean;
}

class JsonSink implements CostSink {
  readonly #scanner: JsonPathScanner;

  constructor(path: JsonPath) {
    this.#scanner = new JsonPathScanner(path, MAX_JSON_INSPECT_BYTES);
  }

  get settled(): boolean {
    return this.#scanner.settled;
  }

  push(chunk: Uint8Array): void {
    this.#scanner.push(chunk, 0, chunk.length);
  }

  end(): CostResult {
    const outcome = this.#scanner.finish();
    if (outcome === SCAN_COST) return costFound(this.#scanner.cost);
    if (outcome === SCAN_ABSENT) return NOT_FOUND.absent;
    return outcome === SCAN_TOO_LARGE ? NOT_FOUND.too_large : NOT_FOUND.malformed;
  }

  cut(): CostResult {
    // Half a JSON text has no cost, unless its answer was already fixed.
    return this.settled ? this.end() : NOT_FOUND.aborted;
  }
}

type BranchReader = { kind: "byob"; reader: ReadableStreamBYOBReader } | { kind: "default"; reader: ReadableStreamDefaultReader<Uint8Array> };

function readerOf(branch: ReadableStream<Uint8Array>): BranchReader {
  try {
    // A byte stream (any fetch body) can be read into a buffer of ours, many chunks at a time.
    return { kind: "byob", reader: branch.getReader({ mode: "byob" }) };
  } catch {
    return { kind: "default", reader: branch.getReader() };
  }
}

/** Waits `ms`, or less if `stop` aborts. */
function pause(ms: number, stop: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      stop?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    stop?.addEventListener("abort", done, { once: true });
  });
}

// Reads the scanner's branch to its end (or until the answer is fixed or
// `stop` aborts) and settles the cost once; with `drain`, reads on past a
// fixed answer, without scanning, to the body's end. Never rejects.
async function readCost(branch: ReadableStream<Uint8Array>, sink: CostSink, stop: AbortSignal | undefined, drain: boolean, settle: (result: CostResult) => void): Promise<void> {
  const branchReader = readerOf(branch);
  const reader = branchReader.reader;
  let stopped = false;
  const onStop = () => {
    stopped = true;
    // Ends a read in flight with done.
    reader.cancel().catch(() => {});
  };
  if (stop?.aborted === true) onStop();
  else stop?.addEventListener("abort", onStop, { once: true });
  let view = new Uint8Array(branchReader.kind === "byob" ? READ_BUFFER_BYTES : 0);
  // Once the answer is fixed and the rest is only read to its end (drain).
  let draining = false;
  try {
    for (;;) {
      let result: ReadableStreamReadResult<Uint8Array>;
      const askedAtMs = Date.now();
      try {
        result = branchReader.kind === "byob" ? await branchReader.reader.read(view) : await branchReader.reader.read();
      } catch {
        // The origin's body broke off; the client's branch sees the same error.
        if (!draining) settle(sink.cut());
        return;
      }
      const chunk = result.value;
      // A BYOB read may end the stream and hand over its last bytes at once.
      if (chunk !== undefined && chunk.byteLength > 0) {
        if (!draining) {
          try {
            sink.push(chunk);
          } catch {
            // A scanner bug must not hold the client's branch back: stop reading; the reserve stands.
            settle(NOT_FOUND.malformed);
            if (!drain) {
              await reader.cancel().catch(() => {});
              return;
            }
            draining = true;
          }
          if (!draining && sink.settled) {
            settle(sink.end());
            if (!drain) {
              await reader.cancel().catch(() => {});
              return;
            }
            draining = true;
          }
        }
        // The read took our buffer over; read into it again.
        if (branchReader.kind === "byob") view = new Uint8Array(chunk.buffer as ArrayBuffer);
      }
      if (result.done) {
        if (!draining) settle(stopped ? sink.cut() : sink.end());
        return;
      }
      if (!stopped && (chunk?.byteLength ?? 0) < COALESCE_BELOW_BYTES && Date.now() > askedAtMs) await pause(COALESCE_MS, stop);
    }
  } finally {
    stop?.removeEventListener("abort", onStop);
  }
}
