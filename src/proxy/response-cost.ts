// Reads a response's cost (DESIGN §14) from a header, or from the body as it
// streams to the client: the body passes through chunk by chunk, the same
// Uint8Array objects in the same order, and a scanner sees each one before
// it is handed on. Nothing is buffered beyond what the scanners keep.
//
// A client that hangs up (the consumer cancels the body) does not lose the
// cost: the tap keeps reading the origin's body, discarding it, up to
// `drainAfterCancelBytes` more bytes, so the cost is what the origin's whole
// answer says (DESIGN §3 keeps the origin request alive after a hang-up; an
// LLM API reports usage only in its last event, and a caller must not dodge
// it by leaving just before). Past that bound, or when `signal` aborts, it
// stops and the cost is what was seen.
//
// `cost` never rejects and settles exactly once: at the body's end, when it
// errors, when the JSON scanner can no longer change its answer, or after a
// hang-up as above. It settles only as the body is read or cancelled, so the
// gateway must either send the body or cancel it. Register it with
// `waitUntil` before returning the response: after a hang-up it is the
// only thing keeping the drain alive.
import type { JsonPath } from "./json-path";
import { JsonPathScanner, SCAN_COST, SCAN_TOO_LARGE, SCAN_ABSENT } from "./json-path-scanner";
import { type CostResult, costFound, MAX_RESPONSE_COST, NOT_FOUND } from "./response-cost-result";
import type { ResponseCharge } from "./response-cost-spec";
import { SseCostScanner } from "./sse-scanner";

/** A JSON body is inspected up to this many bytes; a longer one has no cost (`too_large`). */
export const MAX_JSON_INSPECT_BYTES = 1024 * 1024;
/** After a hang-up, the origin's body is read this much further for its cost, then cancelled. */
export const DEFAULT_DRAIN_AFTER_CANCEL_BYTES = 8 * 1024 * 1024;
const MAX_HEADER_DIGITS = 10;

export interface TapOptions {
  /** Bytes read from the origin after the consumer cancels, before giving up (default 8 MiB; 0: settle at once). */
  drainAfterCancelBytes?: number;
  /** Aborting it ends a drain after a cancel at once; the cost is what was seen. It does not touch a body still being read. */
  signal?: AbortSignal;
}

export interface TappedBody {
  /** The body to send instead of the origin's: the same bytes. Null when the origin's is null. */
  readonly body: ReadableStream<Uint8Array> | null;
  readonly cost: Promise<CostResult>;
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
  if (body === null || format === null) return { body, cost: Promise.resolve(NOT_FOUND.absent) };
  const sink = format === "sse" ? new SseCostScanner(path) : new JsonSink(path);
  return new CostTap(body, sink, options.drainAfterCancelBytes ?? DEFAULT_DRAIN_AFTER_CANCEL_BYTES, options.signal);
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
    return { body: response.body, cost: Promise.resolve(known), known };
  }
  const tapped = tapCost(response.body, source.path, response.headers.get("content-type"), options);
  return { body: tapped.body, cost: tapped.cost, known: null };
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

class CostTap implements TappedBody {
  readonly body: ReadableStream<Uint8Array>;
  readonly cost: Promise<CostResult>;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #sink: CostSink;
  readonly #drainBytes: number;
  readonly #signal: AbortSignal | undefined;
  #resolve: (result: CostResult) => void = () => {};
  #settled = false;
  #scanning = true;
  #cancelled = false;
  /** The tap is giving up: an end of the body from now on is a cut, not a clean end. */
  #cutting = false;
  /** The origin read in flight, if any (one at a time): a drain waits for the pull's. */
  #reading: Promise<Uint8Array | null> | null = null;

  constructor(origin: ReadableStream<Uint8Array>, sink: CostSink, drainBytes: number, signal: AbortSignal | undefined) {
    this.#reader = origin.getReader();
    this.#sink = sink;
    this.#drainBytes = drainBytes;
    this.#signal = signal;
    this.cost = new Promise<CostResult>((resolve) => {
      this.#resolve = resolve;
    });
    this.body = new ReadableStream<Uint8Array>({
      pull: (controller) => this.#pull(controller),
      cancel: () => {
        this.#cancelled = true;
        // Not awaited by the canceller: the drain's outcome reaches `cost`, which the gateway waits on.
        void this.#drain();
      },
    });
  }

  async #pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    let chunk: Uint8Array | null;
    try {
      chunk = await this.#read();
    } catch (error) {
      // The client sees the origin's failure as it would without the tap.
      if (!this.#cancelled) controller.error(error);
      return;
    }
    if (this.#cancelled) return;
    if (chunk === null) controller.close();
    else controller.enqueue(chunk);
  }

  #read(): Promise<Uint8Array | null> {
    const reading = this.#readOne();
    this.#reading = reading;
    return reading;
  }

  async #readOne(): Promise<Uint8Array | null> {
    let result: ReadableStreamReadResult<Uint8Array>;
    try {
      result = await this.#reader.read();
    } catch (error) {
      this.#settle(this.#sink.cut());
      throw error;
    } finally {
      this.#reading = null;
    }
    if (result.done) {
      this.#settle(this.#cutting ? this.#sink.cut() : this.#sink.end());
      return null;
    }
    const chunk = result.value;
    if (this.#scanning) {
      try {
        this.#sink.push(chunk);
        if (this.#sink.settled) this.#settle(this.#sink.end());
      } catch {
        // A scanner bug must not break the client's body: stop scanning; the reserve stands.
        this.#settle(NOT_FOUND.malformed);
      }
    }
    return chunk;
  }

  // After a cancel: read on (discarding) until the body ends, the bound is
  // reached, the outcome is fixed, or the signal aborts. Cancelling the
  // origin ends a read in flight with done, so a silent origin cannot hold
  // a drain that has to stop.
  async #drain(): Promise<void> {
    const signal = this.#signal;
    const stop = () => {
      this.#cutting = true;
      this.#reader.cancel().catch(() => {});
    };
    signal?.addEventListener("abort", stop, { once: true });
    try {
      let drainedBytes = 0;
      while (!this.#settled) {
        if (drainedBytes >= this.#drainBytes || signal?.aborted === true) {
          this.#cutting = true;
          await this.#reader.cancel().catch(() => {});
          this.#settle(this.#sink.cut());
          return;
        }
        // The read the cancelled pull started, if any, then reads of our own.
        const chunk = await (this.#reading ?? this.#read()).catch(() => null);
        if (chunk !== null) drainedBytes += chunk.byteLength;
      }
      // Settled before the body ended (the JSON answer was fixed): the origin's rest is of no use.
      await this.#reader.cancel().catch(() => {});
    } catch {
      this.#settle(this.#sink.cut());
    } finally {
      signal?.removeEventListener("abort", stop);
    }
  }

  #settle(result: CostResult): void {
    this.#scanning = false;
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve(result);
  }
}
