// The object name a quota route stores: the route's `:object`
// parameter, percent-decoded. Pure: no Workers API, no I/O, so the edge can
// check a name before it calls any Durable Object.
//
// Why decoded: `/objects/%61`, `/objects/a` and `/objects/%c3%a9` vs
// `/objects/%C3%A9` name one object at any origin that decodes its paths
// (nearly all do). Storing the raw spelling would count one stored object
// twice, and a delete spelled differently from its upload would leave the
// bytes counted. One decoded spelling per object avoids both. (The path has
// already been refused at pipeline step 0 when it holds `%2F`, `%5C` or `%00`, so a
// decoded name never holds a `/`, `\` or NUL that came from an escape.)

/** The most bytes (UTF-8, after decoding) an object name may have; S3's key limit. */
export const MAX_OBJECT_NAME_BYTES = 1024;

export type ObjectName = { kind: "ok"; name: string } | { kind: "invalid"; reason: string };

/**
 * Decodes and checks a raw `:object` parameter (as it appears in the path,
 * still percent-encoded). The reason never echoes the value: it may be
 * anything a client sent.
 */
export function parseObjectName(raw: string): ObjectName {
  if (raw.length === 0) return { kind: "invalid", reason: "the object name is empty" };
  // Every character of the raw form decodes to at least one third of a byte
  // (`%XX` is three characters for one byte), so a raw form this long is over
  // the limit whatever it holds; no need to decode megabytes of it.
  if (raw.length > 3 * MAX_OBJECT_NAME_BYTES) return tooLong();
  let name: string;
  try {
    name = decodeURIComponent(raw);
  } catch {
    // A `%` not followed by two hex digits, or escapes that are not UTF-8
    // (overlong forms, surrogates, a truncated sequence).
    return { kind: "invalid", reason: "the object name is not valid percent-encoded UTF-8" };
  }
  // A lone surrogate cannot come out of decodeURIComponent, but one can be in
  // the raw text itself when the caller did not get it from a URL.
  if (!name.isWellFormed()) return { kind: "invalid", reason: "the object name is not valid UTF-8" };
  if (name.length === 0) return { kind: "invalid", reason: "the object name is empty" };
  if (!fitsInBytes(name)) return tooLong();
  return { kind: "ok", name };
}

/**
 * Why the store cannot hold this raw `:object` parameter, or null when it
 * can. The edge answers 400 `invalid_request` with the reason, before any
 * reservation or remove and before anything is forwarded.
 */
export function objectNameError(raw: string): string | null {
  const parsed = parseObjectName(raw);
  return parsed.kind === "invalid" ? parsed.reason : null;
}

/**
 * Whether an already-decoded name is one the store holds. The quota objects
 * check every name they are sent with this; a failure there is a bug at the
 * edge, which should have refused the request with 400 first.
 */
export function storableObjectName(name: string): boolean {
  return name.length > 0 && name.isWellFormed() && fitsInBytes(name);
}

/** Whether a well-formed string is at most MAX_OBJECT_NAME_BYTES in UTF-8 (counted, not encoded). */
function fitsInBytes(s: string): boolean {
  // Every UTF-16 unit is at most 3 UTF-8 bytes: short names need no count.
  if (s.length * 3 <= MAX_OBJECT_NAME_BYTES) return true;
  let bytes = 0;
  for (let i = 0; i < s.length; i++) {
    const unit = s.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff) {
      // A surrogate pair (well-formed, so the low half follows): one 4-byte code point.
      bytes += 4;
      i++;
    } else bytes += 3;
    if (bytes > MAX_OBJECT_NAME_BYTES) return false;
  }
  return true;
}

function tooLong(): ObjectName {
  return { kind: "invalid", reason: `the object name is longer than ${MAX_OBJECT_NAME_BYTES} bytes` };
}
