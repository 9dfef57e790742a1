// The isolate's limiter state: a fixed-size, set-associative table of GCRA
// states in one preallocated ArrayBuffer. It never grows with the number of
// callers; when a set is full, the state earned back soonest is forgotten.
//
// Layout: sets of WAYS = 4 slots of 16 bytes (four 32-bit words), so one set
// is one 64-byte cache line and a lookup touches one line. A slot holds
//   w0, w1  tatCeilMs in 53 bits (w0 the low 32, the low 21 bits of w1 the
//           rest): the state's TAT rounded up to a whole ms, absolute; the
//           slot is empty whenever tatCeilMs <= now (0 = never used). The top
//           11 bits of w1 carry 11 bits of the key's set hash (see below).
//   w2      tag: 32 bits of the key's hash, independent of the set hash (the
//           key string itself is never stored)
//   w3      deficit: tatCeilMs − TAT in the limit's units (0 <= deficit < unitsPerMs)
// so TAT = tatCeilMs − deficit/unitsPerMs exactly. Rounding up makes "empty"
// one comparison against whole-ms now, and orders eviction by the whole ms at
// which each state is earned back. limit.ts keeps every state within 2^52 ms
// of now, so tatCeilMs fits 53 bits for any nowMs below 2^52 (year 144,000).
//
// Active region: the whole buffer is allocated up front, but keys are spread
// over a prefix of it (256 KiB at first) that doubles instead of evicting a
// live state, until it is the whole table; only then are live states evicted.
// A random access to the full 16 MiB costs ~130 ns on the benchmark VM (TLB
// and cache misses), one into 256 KiB almost nothing, so few callers stay
// cheap. Doubling splits every set on the next bit of its keys' set hashes,
// which the slots carry, so no state is lost or left behind: decisions are
// exactly those of a table that was full-size from the start.
import { fmix32, mix32 } from "./hash32";
import type { Limit } from "./limit";

const WAYS = 4;
const SLOT_BYTES = 16;
const SET_BYTES = WAYS * SLOT_BYTES;
const BYTES_PER_MIB = 1024 * 1024;
/** The active region at first: 4096 sets, 16,384 slots, 64 pages. */
const ACTIVE_START_BYTES = 256 * 1024;
/** Set-hash bits a slot keeps above the first active ones: the active region can double this many times. */
const SLOT_HASH_BITS = 11;
const TIME_HIGH_MASK = 0x1fffff;
const TWO_POW_32 = 4294967296;
/** Recent subjects' hash lanes (a power of two): callers seen lately skip rehashing. */
const MEMO_SIZE = 64;

/** ceil(a / b) for whole a >= 0, b >= 1 below 2^53, exact (the quotient is corrected after the float division). */
export function ceilDiv(a: number, b: number): number {
  if (b === 1) return a;
  let k = Math.ceil(a / b);
  if (k * b < a) k++;
  else if ((k - 1) * b >= a) k--;
  return k;
}

/** floor(a / b) for whole a >= 0, b >= 1 below 2^53, exact. */
export function floorDiv(a: number, b: number): number {
  if (b === 1) return a;
  let k = Math.floor(a / b);
  if (k * b > a) k--;
  else if ((k + 1) * b <= a) k++;
  return k;
}

/** Per-call scratch for admit(): one entry per distinct key checked so far. Grows with charges per call, never with callers. */
export class PendingSpends {
  capacity = 16;
  setHash = new Int32Array(this.capacity);
  tag = new Int32Array(this.capacity);
  /** The slot find() gave during the check (−1: none), reused when the spends are applied. */
  slot = new Int32Array(this.capacity);
  /** The key's state before this call, and after its spends (unchanged when they do not fit): TAT − now in the limit's units. */
  preRelUnits = new Float64Array(this.capacity);
  relUnits = new Float64Array(this.capacity);
  /** The summed cost of this call's spends on the key. */
  cost = new Float64Array(this.capacity);
  /** Where the key first appeared: charges[chargeIndex].limits[limitIndex]. */
  chargeIndex = new Int32Array(this.capacity);
  limitIndex = new Int32Array(this.capacity);

  grow(): void {
    const grown = <T extends Int32Array | Float64Array>(a: T): T => {
      const b = new (a.constructor as new (n: number) => T)(a.length * 2);
      b.set(a);
      return b;
    };
    this.setHash = grown(this.setHash);
    this.tag = grown(this.tag);
    this.slot = grown(this.slot);
    this.preRelUnits = grown(this.preRelUnits);
    this.relUnits = grown(this.relUnits);
    this.cost = grown(this.cost);
    this.chargeIndex = grown(this.chargeIndex);
    this.limitIndex = grown(this.limitIndex);
    this.capacity *= 2;
  }
}

export interface LimiterTableOptions {
  /** Seeds the key hash. Default: random per table, so outsiders cannot aim keys at one set. Tests pin it. */
  seed?: number;
  /** Bytes the active region starts with (default 256 KiB; the full size when larger). */
  activeStartBytes?: number;
}

export class LimiterTable {
  /** Bytes of slot storage: fixed at construction (plus a few KB of scratch and memo). */
  readonly byteSize: number;
  readonly slotCount: number;
  readonly pending = new PendingSpends();
  /** The hash lanes of the key last passed to hashKey (read by setHashOf / tagOf). */
  keyA = 0;
  keyB = 0;
  readonly #words: Int32Array;
  readonly #fullMask: number;
  /** Set-index mask of the active region. */
  #mask: number;
  /** Set-hash bits below the ones a slot keeps (log2 of the first active set count). */
  readonly #startBits: number;
  readonly #seedA: number;
  readonly #seedB: number;
  #lastSubject: string | null = null;
  #lastCategory: string | null = null;
  #subjectA = 0;
  #subjectB = 0;
  #categoryA = 0;
  #categoryB = 0;
  readonly #memoSubject: string[] = new Array<string>(MEMO_SIZE).fill("");
  readonly #memoA = new Int32Array(MEMO_SIZE);
  readonly #memoB = new Int32Array(MEMO_SIZE);

  /** @param maxMemoryMiB the slot storage budget; rounded down to a power-of-two number of 64-byte sets (at least one). */
  constructor(maxMemoryMiB: number, options: LimiterTableOptions = {}) {
    if (!(maxMemoryMiB > 0) || !Number.isFinite(maxMemoryMiB)) throw new RangeError("maxMemoryMiB must be a finite number > 0");
    let fullBits = 0;
    while (2 ** (fullBits + 1) * SET_BYTES <= maxMemoryMiB * BYTES_PER_MIB) fullBits++;
    if (fullBits > 30) throw new RangeError("maxMemoryMiB is too large");
    let startBits = 0;
    while (startBits < fullBits && 2 ** (startBits + 1) * SET_BYTES <= (options.activeStartBytes ?? ACTIVE_START_BYTES)) startBits++;
    // Slots carry SLOT_HASH_BITS bits of set hash: enough to double that many times.
    startBits = Math.max(startBits, fullBits - SLOT_HASH_BITS);
    const sets = 2 ** fullBits;
    this.byteSize = sets * SET_BYTES;
    this.slotCount = sets * WAYS;
    this.#words = new Int32Array(this.byteSize / 4);
    this.#fullMask = sets - 1;
    this.#startBits = startBits;
    this.#mask = 2 ** startBits - 1;
    const seed = options.seed ?? Math.floor(Math.random() * 4294967296);
    this.#seedA = fmix32(seed ^ 0x5bd1e995);
    this.#seedB = fmix32(Math.imul(seed, 0x27d4eb2f) ^ 0x165667b1);
  }

  /** Bytes of the region keys are currently spread over (doubles up to byteSize as live states crowd it). */
  get activeBytes(): number {
    return (this.#mask + 1) * SET_BYTES;
  }

  /**
   * Hashes (subject, category) into keyA / keyB: two independent 32-bit lanes
   * per string, combined. The last key, the last category and a small memo of
   * recent subjects skip rehashing, because hashing a 68-character
   * `key:<sha256>` costs more than the rest of a decision.
   */
  hashKey(subject: string, category: string): void {
    if (subject === this.#lastSubject && category === this.#lastCategory) return;
    if (category !== this.#lastCategory) {
      this.#lastCategory = category;
      let a = this.#seedA ^ 0x2545f491;
      let b = this.#seedB ^ category.length;
      for (let i = 0; i < category.length; i++) {
        const c = category.charCodeAt(i);
        a = mix32(a, c);
        b = Math.imul(b ^ c, 0x01000193);
      }
      this.#categoryA = fmix32(a ^ category.length);
      this.#categoryB = fmix32(b);
    }
    if (subject !== this.#lastSubject) {
      this.#lastSubject = subject;
      const length = subject.length;
      const m = (length + subject.charCodeAt(length - 1) * 7 + subject.charCodeAt(length >> 1) * 131) & (MEMO_SIZE - 1);
      if (this.#memoSubject[m] === subject) {
        this.#subjectA = this.#memoA[m]!;
        this.#subjectB = this.#memoB[m]!;
      } else {
        let a = this.#seedA;
        let b = this.#seedB ^ length;
        let i = 0;
        for (; i + 1 < length; i += 2) {
          const w = subject.charCodeAt(i) | (subject.charCodeAt(i + 1) << 16);
          a = Math.imul(a ^ w, 0xcc9e2d51);
          a = (a << 15) | (a >>> 17);
          b = Math.imul(b ^ w, 0x1b873593);
          b = (b << 13) | (b >>> 19);
        }
        if (i < length) {
          const w = subject.charCodeAt(i) | 0x10000;
          a = Math.imul(a ^ w, 0xcc9e2d51);
          b = Math.imul(b ^ w, 0x1b873593);
        }
        a = fmix32(a ^ length);
        b = fmix32(b ^ (length << 8));
        this.#subjectA = a;
        this.#subjectB = b;
        this.#memoSubject[m] = subject;
        this.#memoA[m] = a;
        this.#memoB[m] = b;
      }
    }
    this.keyA = this.#subjectA ^ this.#categoryA;
    this.keyB = this.#subjectB ^ this.#categoryB;
  }

  /** The hashed key's 32-bit set hash under `limit`: its set is the low bits, in the active region. */
  setHashOf(limit: Limit): number {
    return fmix32(this.keyA ^ limit.keySaltA);
  }

  /** The first slot of the set for a set hash, in the active region as it is now. */
  setBaseFor(setHash: number): number {
    return (setHash & this.#mask) * WAYS;
  }

  /** The first slot of the hashed key's set under `limit`. */
  setBaseOf(limit: Limit): number {
    return this.setBaseFor(this.setHashOf(limit));
  }

  /** The hashed key's tag under `limit` (from the other lane, so set and tag are independent). */
  tagOf(limit: Limit): number {
    return fmix32(this.keyB ^ limit.keySaltB);
  }

  /** The slot of the set at setBase holding `tag`, or −1. */
  find(setBase: number, tag: number): number {
    const words = this.#words;
    for (let s = setBase; s < setBase + WAYS; s++) if (words[s * 4 + 2] === tag) return s;
    return -1;
  }

  /** The whole ms (rounded up) at which the state in `slot` is earned back; 0 for a slot never used. */
  #tatCeilMs(slot: number): number {
    return (this.#words[slot * 4 + 1]! & TIME_HIGH_MASK) * TWO_POW_32 + (this.#words[slot * 4]! >>> 0);
  }

  /** TAT − t in units of 1/unitsPerMs ms held in `slot` (from find), or 0 when it holds no state at t. */
  relUnits(slot: number, t: number, unitsPerMs: number): number {
    if (slot < 0) return 0;
    const aheadMs = this.#tatCeilMs(slot) - t;
    return aheadMs <= 0 ? 0 : aheadMs * unitsPerMs - this.#words[slot * 4 + 3]!;
  }

  /**
   * Records TAT = t + relUnits/unitsPerMs for the key (setHash, tag), with
   * relUnits >= 1, and returns its reset delay (ms until earned back, rounded
   * up). The key's own slot is reused (`slotHint` from find, if still its);
   * otherwise the slot earned back soonest (an empty one first) is replaced,
   * after doubling the active region if that slot is live and the region is
   * not yet the whole table: the table never refuses.
   */
  write(slotHint: number, setHash: number, tag: number, t: number, relUnits: number, unitsPerMs: number): number {
    const words = this.#words;
    let setBase = (setHash & this.#mask) * WAYS;
    let slot = slotHint >= setBase && slotHint < setBase + WAYS && words[slotHint * 4 + 2] === tag ? slotHint : this.find(setBase, tag);
    while (slot < 0) {
      let victim = setBase;
      let soonest = this.#tatCeilMs(setBase);
      for (let s = setBase + 1; s < setBase + WAYS; s++) {
        const v = this.#tatCeilMs(s);
        if (v < soonest) {
          soonest = v;
          victim = s;
        }
      }
      if (soonest <= t || this.#mask === this.#fullMask) {
        slot = victim;
      } else {
        this.#double();
        setBase = (setHash & this.#mask) * WAYS;
        slot = this.find(setBase, tag);
      }
    }
    const resetMs = ceilDiv(relUnits, unitsPerMs);
    const tatCeilMs = t + resetMs;
    words[slot * 4] = tatCeilMs | 0;
    words[slot * 4 + 1] = Math.floor(tatCeilMs / TWO_POW_32) | ((setHash >>> this.#startBits) << 21);
    words[slot * 4 + 2] = tag;
    words[slot * 4 + 3] = resetMs * unitsPerMs - relUnits;
    return resetMs;
  }

  // Doubles the active region: every slot whose key has the new set-hash bit
  // moves to the same way of the set above it, which has never been used.
  #double(): void {
    const words = this.#words;
    const oldSets = this.#mask + 1;
    const bitShift = 21 + Math.log2(oldSets) - this.#startBits;
    const offsetWords = oldSets * WAYS * 4;
    for (let w = 0; w < offsetWords; w += 4) {
      if (((words[w + 1]! >>> bitShift) & 1) === 1) {
        words[w + offsetWords] = words[w]!;
        words[w + offsetWords + 1] = words[w + 1]!;
        words[w + offsetWords + 2] = words[w + 2]!;
        words[w + offsetWords + 3] = words[w + 3]!;
        words[w] = 0;
        words[w + 1] = 0;
        words[w + 2] = 0;
        words[w + 3] = 0;
      }
    }
    this.#mask = oldSets * 2 - 1;
  }

  /** Slots holding state not yet earned back at nowMs (a full scan: for tests and metrics, not the hot path). */
  liveEntries(nowMs: number): number {
    const t = Math.floor(nowMs);
    let live = 0;
    for (let s = 0; s < this.slotCount; s++) if (this.#tatCeilMs(s) > t) live++;
    return live;
  }

  /** The whole ms (rounded up) at which the key's state is earned back, or null when the table holds none for it at nowMs. */
  earnedBackAtMs(subject: string, category: string, limit: Limit, nowMs: number): number | null {
    const t = Math.floor(nowMs);
    this.hashKey(subject, category);
    const slot = this.find(this.setBaseOf(limit), this.tagOf(limit));
    if (slot < 0) return null;
    const tatCeilMs = this.#tatCeilMs(slot);
    return tatCeilMs > t ? tatCeilMs : null;
  }
}
