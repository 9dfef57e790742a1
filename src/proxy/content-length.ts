// The request's declared body size, and a body that keeps to it.

/** Content-Length as a whole number of bytes, or null when absent or malformed. */
export function declaredLength(headers: Headers): number | null {
  const raw = headers.get("content-length");
  if (raw === null) return null;
  const trimmed = raw.trim();
  if (!/^\d{1,16}$/.test(trimmed)) return null;
  const n = Number(trimmed);
  return Number.isSafeInteger(n) ? n : null;
}

/**
 * The body re-framed to exactly `bytes`: the origin is sent a Content-Length,
 * and a body that ends early (the client went away) or runs long aborts the
 * origin request instead of arriving as a shorter, complete-looking upload.
 * (A stream of unknown length is otherwise sent chunked, and an error in it
 * would close the chunked body as if it were whole.)
 */
export function fixedLengthBody(body: ReadableStream<Uint8Array>, bytes: number): ReadableStream<Uint8Array> {
  const fixed = new FixedLengthStream(bytes);
  // A failed pipe errors fixed.readable, which fails the origin fetch; the
  // rejection itself needs no handling here.
  body.pipeTo(fixed.writable).catch(() => {});
  return fixed.readable;
}
