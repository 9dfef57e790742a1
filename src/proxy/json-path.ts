// The path of a cost inside a JSON document (`response_charge.json`), as
// config writes it and as the scanners use it.
//
// Syntax: 1 to 8 segments joined by `.`, each 1 to 64 characters from
// [A-Za-z0-9_-]: `usage.total_tokens`, `usageMetadata.totalTokenCount`,
// `meta.billed_units.output_tokens`. A segment selects that key of an object.
// A segment that is a canonical whole number (`0`, `7`, `12`; not `01`) also
// selects that index of an array, so `choices.0.usage.total_tokens` reads
// the first choice; in an object it is still the key `"0"`. No quoting, no
// wildcards, no brackets: a key holding `.` or other characters cannot be
// named, which no usage field we know of needs.
//
// Keys are compared after JSON unescaping (`"\u0075sage"` is `usage`), byte
// for byte; path characters are ASCII, so a key with any other character
// never matches.

export const MAX_JSON_PATH_SEGMENTS = 8;
export const MAX_JSON_PATH_SEGMENT_CHARS = 64;
const SEGMENT = /^[A-Za-z0-9_-]{1,64}$/;
const INDEX = /^(0|[1-9][0-9]{0,8})$/;

export interface JsonPath {
  /** The path as written. */
  readonly text: string;
  /** Each segment's bytes (ASCII). */
  readonly keys: readonly Uint8Array[];
  /** Each segment's array index, or −1 when the segment is not a whole number. */
  readonly indexes: Int32Array;
  /**
   * `"<key>"` for the last segment that is not a whole number: every JSON
   * text carrying the path holds this text, unless the key is written with
   * a `\u` escape. Null when every segment is a whole number (then the path
   * may run through arrays only and no key need appear).
   */
  readonly keyLiteral: string | null;
}

/** Null when `path` is a valid cost path, else the reason. */
export function jsonPathError(path: unknown): string | null {
  if (typeof path !== "string") return "must be a string such as usage.total_tokens";
  const segments = path.split(".");
  if (segments.length > MAX_JSON_PATH_SEGMENTS) return `must have at most ${MAX_JSON_PATH_SEGMENTS} segments`;
  for (const segment of segments) {
    if (!SEGMENT.test(segment)) {
      return `segments are joined by . and hold 1 to ${MAX_JSON_PATH_SEGMENT_CHARS} of A-Z a-z 0-9 _ - (e.g. usage.total_tokens, choices.0.usage.total_tokens)`;
    }
  }
  return null;
}

/** Compiles a valid path. Throws on an invalid one: callers validate first, so that is a bug. */
export function compileJsonPath(path: string): JsonPath {
  const reason = jsonPathError(path);
  if (reason !== null) throw new TypeError(`invalid JSON path: ${reason}`);
  const segments = path.split(".");
  const encoder = new TextEncoder();
  const indexes = new Int32Array(segments.length);
  let literalKey: string | null = null;
  segments.forEach((segment, i) => {
    indexes[i] = INDEX.test(segment) ? Number(segment) : -1;
    if (indexes[i] === -1) literalKey = segment;
  });
  return Object.freeze({
    text: path,
    keys: Object.freeze(segments.map((s) => encoder.encode(s))),
    indexes,
    keyLiteral: literalKey === null ? null : `"${literalKey}"`,
  });
}
