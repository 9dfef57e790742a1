// Reads the number at a JSON path out of a JSON text that arrives in pieces,
// without building the object: a byte-level state machine that checks the
// whole text is well-formed JSON (RFC 8259) and follows only the keys and
// indexes on the path. Memory is fixed (a container stack of MAX_JSON_DEPTH
// bytes, a 64-byte number buffer); any split of the input, inside a string,
// an escape, a number or a multi-byte character, gives the same outcome.
//
// The outcome is what `JSON.parse` of the whole text would give at the path
// (the last of duplicate keys wins), with two bounds: at most `maxBytes` are
// inspected, and containers nest at most MAX_JSON_DEPTH deep (both TOO_LARGE).
// String contents are not checked as UTF-8: a decoder would replace bad bytes
// and JSON.parse would accept the result, so nothing changes.
import type { JsonPath } from "./json-path";
import { costOfNumber } from "./response-cost-result";

/** finish() outcomes. COST: `cost` holds it. UNUSABLE: the path holds a non-number or a number costOfNumber refuses. INVALID: not well-formed JSON. */
export const SCAN_COST = 0;
export const SCAN_ABSENT = 1;
export const SCAN_UNUSABLE = 2;
export const SCAN_INVALID = 3;
export const SCAN_TOO_LARGE = 4;
export type ScanOutcome = typeof SCAN_COST | typeof SCAN_ABSENT | typeof SCAN_UNUSABLE | typeof SCAN_INVALID | typeof SCAN_TOO_LARGE;

export const MAX_JSON_DEPTH = 512;
/** A number at the path longer than this many characters is UNUSABLE (no usage figure is written that way). */
const MAX_NUMBER_CHARS = 64;

const S_VALUE = 0;
const S_OBJ_FIRST = 1;
const S_OBJ_KEY = 2;
const S_COLON = 3;
const S_ARR_FIRST = 4;
const S_AFTER = 5;
const S_END = 6;
const S_STRING = 7;
const S_ESCAPE = 8;
const S_UNICODE = 9;
const S_NUM_MINUS = 10;
const S_NUM_ZERO = 11;
const S_NUM_INT = 12;
const S_NUM_DOT = 13;
const S_NUM_FRAC = 14;
const S_NUM_E = 15;
const S_NUM_E_SIGN = 16;
const S_NUM_EXP = 17;
const S_LITERAL = 18;
const S_BOM = 19;
const S_FAILED = 20;
const S_TOO_LARGE = 21;

const K_OBJECT = 1;
const K_ARRAY = 2;

const T_NONE = 0;
const T_COST = 1;
const T_UNUSABLE = 2;

const TRUE = new Uint8Array([0x74, 0x72, 0x75, 0x65]);
const FALSE = new Uint8Array([0x66, 0x61, 0x6c, 0x73, 0x65]);
const NULL = new Uint8Array([0x6e, 0x75, 0x6c, 0x6c]);
/** The byte each one-character escape stands for (0: not an escape). */
const ESCAPED = new Uint8Array(128);
ESCAPED[0x22] = 0x22;
ESCAPED[0x5c] = 0x5c;
ESCAPED[0x2f] = 0x2f;
ESCAPED[0x62] = 0x08;
ESCAPED[0x66] = 0x0c;
ESCAPED[0x6e] = 0x0a;
ESCAPED[0x72] = 0x0d;
ESCAPED[0x74] = 0x09;
/** A key character that matches no path byte (path keys are ASCII). */
const NON_ASCII = 0x100;

function isWhitespace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x57 : -1;
}

export class JsonPathScanner {
  /** The cost when finish() answers SCAN_COST. */
  cost = 0;
  readonly #keys: readonly Uint8Array[];
  readonly #indexes: Int32Array;
  readonly #pathLength: number;
  readonly #maxBytes: number;
  readonly #kinds = new Uint8Array(MAX_JSON_DEPTH + 1);
  readonly #arrayIndex: Int32Array;
  readonly #number = new Uint8Array(MAX_NUMBER_CHARS);
  #bytes = 0;
  #state = S_VALUE;
  #depth = 0;
  /** Depth of the deepest open container the path runs through (0: none). */
  #pathDepth = 0;
  /** The value about to start is the one the path selects at this depth. */
  #selected = true;
  #seen = false;
  #inKey = false;
  #keyCompare = false;
  #keyOk = false;
  #keyPos = 0;
  #key: Uint8Array = new Uint8Array(0);
  #capture = false;
  #numberLength = 0;
  #hexLeft = 0;
  #hex = 0;
  #literal: Uint8Array = TRUE;
  #literalPos = 0;
  #bomPos = 0;
  #target = T_NONE;

  /** @param maxBytes bytes inspected at most; input past it makes the outcome SCAN_TOO_LARGE. */
  constructor(path: JsonPath, maxBytes: number) {
    this.#keys = path.keys;
    this.#indexes = path.indexes;
    this.#pathLength = path.keys.length;
    this.#maxBytes = maxBytes;
    this.#arrayIndex = new Int32Array(this.#pathLength + 1);
  }

  /** Ready for another text (an SSE event), keeping the buffers. */
  reset(): void {
    this.cost = 0;
    this.#bytes = 0;
    this.#state = S_VALUE;
    this.#depth = 0;
    this.#pathDepth = 0;
    this.#selected = true;
    this.#seen = false;
    this.#capture = false;
    this.#target = T_NONE;
  }

  /** True once more input cannot change the outcome (not well-formed, or past a bound). */
  get settled(): boolean {
    return this.#state === S_FAILED || this.#state === S_TOO_LARGE;
  }

  /** Feeds bytes [start, end) of `bytes`. */
  push(bytes: Uint8Array, start: number, end: number): void {
    if (this.settled) return;
    let stop = end;
    const room = this.#maxBytes - this.#bytes;
    if (end - start > room) stop = start + room;
    let from = start;
    if (this.#bytes === 0 && from < stop && bytes[from] === 0xef) {
      // A UTF-8 byte order mark, which a decoder drops, as Response.json() does.
      this.#state = S_BOM;
      this.#bomPos = 1;
      from++;
    }
    this.#bytes += stop - start;
    this.#run(bytes, from, stop);
    if (stop < end && this.#state !== S_FAILED) this.#state = S_TOO_LARGE;
  }

  /** The outcome at the end of the text. */
  finish(): ScanOutcome {
    let state = this.#state;
    if (state === S_FAILED) return SCAN_INVALID;
    if (state === S_TOO_LARGE) return SCAN_TOO_LARGE;
    if (!this.#seen) return SCAN_ABSENT;
    // A root number ends with the text.
    if (this.#depth === 0 && (state === S_NUM_ZERO || state === S_NUM_INT || state === S_NUM_FRAC || state === S_NUM_EXP)) state = S_END;
    if (state !== S_END) return SCAN_INVALID;
    return this.#target === T_COST ? SCAN_COST : this.#target === T_UNUSABLE ? SCAN_UNUSABLE : SCAN_ABSENT;
  }

  #run(b: Uint8Array, start: number, end: number): void {
    let state = this.#state;
    let i = start;
    while (i < end && state < S_FAILED) {
      const c = b[i]!;
      switch (state) {
        case S_STRING: {
          if (!this.#keyCompare || !this.#inKey) {
            // Most bytes of a JSON text are string contents: skip them in one loop.
            let j = i;
            let d = c;
            while (d !== 0x22 && d !== 0x5c && d >= 0x20) {
              if (++j === end) break;
              d = b[j]!;
            }
            i = j;
            if (j === end) continue;
            if (d === 0x22) {
              i++;
              state = this.#endString();
            } else if (d === 0x5c) {
              i++;
              state = S_ESCAPE;
            } else state = S_FAILED;
            continue;
          }
          i++;
          if (c === 0x22) state = this.#endString();
          else if (c === 0x5c) state = S_ESCAPE;
          else if (c < 0x20) state = S_FAILED;
          else this.#keyByte(c);
          continue;
        }
        case S_ESCAPE: {
          i++;
          if (c === 0x75) {
            this.#hexLeft = 4;
            this.#hex = 0;
            state = S_UNICODE;
          } else if (c < 128 && ESCAPED[c] !== 0) {
            if (this.#inKey && this.#keyCompare) this.#keyByte(ESCAPED[c]!);
            state = S_STRING;
          } else state = S_FAILED;
          continue;
        }
        case S_UNICODE: {
          i++;
          const v = hexValue(c);
          if (v < 0) {
            state = S_FAILED;
            continue;
          }
          this.#hex = this.#hex * 16 + v;
          if (--this.#hexLeft === 0) {
            if (this.#inKey && this.#keyCompare) this.#keyByte(this.#hex < 0x80 ? this.#hex : NON_ASCII);
            state = S_STRING;
          }
          continue;
        }
        case S_NUM_MINUS:
        case S_NUM_ZERO:
        case S_NUM_INT:
        case S_NUM_DOT:
        case S_NUM_FRAC:
        case S_NUM_E:
        case S_NUM_E_SIGN:
        case S_NUM_EXP: {
          const next = numberStep(state, c);
          if (next === S_FAILED) {
            state = S_FAILED;
            continue;
          }
          if (next < 0) {
            // The byte ends the number: finish it, then read the byte again as what follows a value.
            if (this.#capture) this.#endCapture();
            state = this.#depth === 0 ? S_END : S_AFTER;
            continue;
          }
          if (this.#capture) this.#captureByte(c);
          state = next;
          i++;
          continue;
        }
        case S_LITERAL: {
          i++;
          if (c !== this.#literal[this.#literalPos]) state = S_FAILED;
          else if (++this.#literalPos === this.#literal.length) state = this.#depth === 0 ? S_END : S_AFTER;
          continue;
        }
        case S_BOM: {
          i++;
          if (c !== (this.#bomPos === 1 ? 0xbb : 0xbf)) state = S_FAILED;
          else if (++this.#bomPos === 3) state = S_VALUE;
          continue;
        }
        default:
          break;
      }
      // The structural states: whitespace first.
      if (isWhitespace(c)) {
        i++;
        continue;
      }
      switch (state) {
        case S_ARR_FIRST:
          if (c === 0x5d) {
            i++;
            state = this.#close(K_ARRAY);
            continue;
          }
          this.#selectIndex();
          state = S_VALUE;
          continue; // read the byte again as a value
        case S_VALUE:
          i++;
          state = this.#beginValue(c);
          continue;
        case S_AFTER: {
          i++;
          const kind = this.#kinds[this.#depth];
          if (c === 0x2c) {
            if (kind === K_OBJECT) state = S_OBJ_KEY;
            else {
              if (this.#depth <= this.#pathLength) this.#arrayIndex[this.#depth]!++;
              this.#selectIndex();
              state = S_VALUE;
            }
          } else if (c === 0x7d && kind === K_OBJECT) state = this.#close(K_OBJECT);
          else if (c === 0x5d && kind === K_ARRAY) state = this.#close(K_ARRAY);
          else state = S_FAILED;
          continue;
        }
        case S_OBJ_FIRST:
        case S_OBJ_KEY:
          i++;
          if (c === 0x22) state = this.#beginKey();
          else if (c === 0x7d && state === S_OBJ_FIRST) state = this.#close(K_OBJECT);
          else state = S_FAILED;
          continue;
        case S_COLON:
          i++;
          state = c === 0x3a ? S_VALUE : S_FAILED;
          continue;
        default:
          // S_END: only whitespace may follow the root value.
          state = S_FAILED;
          continue;
      }
    }
    this.#state = state;
  }

  #beginValue(c: number): number {
    this.#seen = true;
    const selected = this.#selected;
    this.#selected = false;
    const target = selected && this.#depth === this.#pathLength;
    // A new value on the path replaces what an earlier duplicate key held, as in JSON.parse.
    if (selected && !target) this.#target = T_NONE;
    if (c === 0x7b || c === 0x5b) {
      if (this.#depth === MAX_JSON_DEPTH) return S_TOO_LARGE;
      const depth = ++this.#depth;
      if (target) this.#target = T_UNUSABLE;
      else if (selected) this.#pathDepth = depth;
      if (c === 0x7b) {
        this.#kinds[depth] = K_OBJECT;
        return S_OBJ_FIRST;
      }
      this.#kinds[depth] = K_ARRAY;
      if (depth <= this.#pathLength) this.#arrayIndex[depth] = 0;
      return S_ARR_FIRST;
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      this.#capture = target;
      if (target) {
        this.#numberLength = 0;
        this.#captureByte(c);
      }
      return c === 0x2d ? S_NUM_MINUS : c === 0x30 ? S_NUM_ZERO : S_NUM_INT;
    }
    if (target) this.#target = T_UNUSABLE;
    if (c === 0x22) {
      this.#inKey = false;
      return S_STRING;
    }
    if (c === 0x74 || c === 0x66 || c === 0x6e) {
      this.#literal = c === 0x74 ? TRUE : c === 0x66 ? FALSE : NULL;
      this.#literalPos = 1;
      return S_LITERAL;
    }
    return S_FAILED;
  }

  #beginKey(): number {
    this.#inKey = true;
    const depth = this.#depth;
    this.#keyCompare = depth === this.#pathDepth && depth <= this.#pathLength;
    if (this.#keyCompare) {
      this.#key = this.#keys[depth - 1]!;
      this.#keyPos = 0;
      this.#keyOk = true;
    }
    return S_STRING;
  }

  #keyByte(c: number): void {
    if (this.#keyOk) this.#keyOk = this.#keyPos < this.#key.length && this.#key[this.#keyPos] === c;
    this.#keyPos++;
  }

  #endString(): number {
    if (!this.#inKey) return this.#depth === 0 ? S_END : S_AFTER;
    this.#selected = this.#keyCompare && this.#keyOk && this.#keyPos === this.#key.length;
    return S_COLON;
  }

  #selectIndex(): void {
    const depth = this.#depth;
    this.#selected = depth === this.#pathDepth && depth <= this.#pathLength && this.#arrayIndex[depth] === this.#indexes[depth - 1];
  }

  #close(kind: number): number {
    if (this.#kinds[this.#depth] !== kind) return S_FAILED;
    if (this.#pathDepth === this.#depth) this.#pathDepth--;
    this.#depth--;
    return this.#depth === 0 ? S_END : S_AFTER;
  }

  #captureByte(c: number): void {
    if (this.#numberLength < MAX_NUMBER_CHARS) this.#number[this.#numberLength] = c;
    this.#numberLength++;
  }

  #endCapture(): void {
    this.#capture = false;
    const length = this.#numberLength;
    const cost = length > MAX_NUMBER_CHARS ? null : costOfNumber(Number(String.fromCharCode(...this.#number.subarray(0, length))));
    if (cost === null) this.#target = T_UNUSABLE;
    else {
      this.#target = T_COST;
      this.cost = cost;
    }
  }
}

/** The number state after byte `c`: S_FAILED when `c` cannot follow, −1 when `c` ends a complete number. */
function numberStep(state: number, c: number): number {
  const digit = c >= 0x30 && c <= 0x39;
  switch (state) {
    case S_NUM_MINUS:
      return c === 0x30 ? S_NUM_ZERO : digit ? S_NUM_INT : S_FAILED;
    case S_NUM_ZERO:
      return c === 0x2e ? S_NUM_DOT : c === 0x65 || c === 0x45 ? S_NUM_E : -1;
    case S_NUM_INT:
      return digit ? S_NUM_INT : c === 0x2e ? S_NUM_DOT : c === 0x65 || c === 0x45 ? S_NUM_E : -1;
    case S_NUM_DOT:
      return digit ? S_NUM_FRAC : S_FAILED;
    case S_NUM_FRAC:
      return digit ? S_NUM_FRAC : c === 0x65 || c === 0x45 ? S_NUM_E : -1;
    case S_NUM_E:
      return c === 0x2b || c === 0x2d ? S_NUM_E_SIGN : digit ? S_NUM_EXP : S_FAILED;
    case S_NUM_E_SIGN:
      return digit ? S_NUM_EXP : S_FAILED;
    default:
      return digit ? S_NUM_EXP : -1;
  }
}
