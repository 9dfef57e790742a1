// docs/design.md step 7: a declared body over `max_request_bytes` is refused with
// 413 before anything is forwarded, naming both numbers. A body without a
// Content-Length is counted as it streams, in the forward
// (src/proxy/forward.ts, boundedBody): the origin never receives a complete
// body past the bound.
import type { Exchange } from "../context";
import { problem } from "../errors";
import type { Check } from "./check";

export interface SizeOptions {
  /** 0 = no bound. */
  readonly maxRequestBytes: number;
}

/** The 413 answer, for a declared size or for a streamed body counted past the bound. */
export function tooLargeResponse(limit: number, size: number | null): Response {
  return problem("request_too_large", {
    detail: size === null ? `The body passed ${limit} bytes, the most this gateway accepts; nothing complete was forwarded.` : `The body is ${size} bytes; this gateway accepts at most ${limit}.`,
    extras: { limit, size },
  });
}

/**
 * @example const size = sizeLimit({ maxRequestBytes: 1_000_000 }); // null when unbounded
 */
export function sizeLimit(options: SizeOptions): Check | null {
  const limit = options.maxRequestBytes;
  if (limit <= 0) return null;
  return function sizeStep(x: Exchange) {
    const size = x.declaredBytes;
    if (size !== null && size > limit) return x.refuse("request_too_large", tooLargeResponse(limit, size));
    return null;
  };
}
