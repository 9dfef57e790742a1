// The isolate's limiter state: a fixed-size table of GCRA states in one
// preallocated ArrayBuffer. It never grows with the number of callers; when
// the small part of it a key may use is full, the state earned back soonest
// is forgotten, the incoming one included.
//
// Layout: sets of WAYS = 4 slots of 16 bytes (four 32-bit words), one set per
// 64-byte cache line. A slot holds
//   w0, w1  tatCeilMs in 53 bits (w0 the low 32, the low 21 bits of w1 the
//           rest): the state's TAT rounded up to a whole ms, absolute; the
//           slot is empty whenever tatCeilMs <= now (0 = never used). The top
//           11 bits of w1 carry 11 bits of the key's set hash (see below).
//   w2      tag: 32 bits of the key's hash, independent of the set hash (the
//           key string itself is never stored); never 0
//   w3      deficit: tatCeilMs − TAT in the limit's units (0 <= deficit < unitsPerMs)
// so TAT = tatCeilMs − deficit/unitsPerMs exactly. Rounding up makes "empty"
// one comparison against whole-ms now, and orders eviction by the whole ms at
// which each state is earned back. limit.ts keeps every state within 2^52 ms
// of now, so tatCeilMs fits 53 bits for any nowMs below 2^52.
//
// Two sets per key: its first (from the set hash), or its second, the first
// XOR (tag mod 64), in the same 4 KiB page, so a lookup costs one TLB entry
// and two independent cache lines at most. A new key takes a free slot in its
// first set, else in its second. With one set per key, 100k live keys spread
// over all 16 MiB (a random access there is a TLB miss on top of a cache
// miss) and some were already forgotten; with two, and moving a state to its
// other set to make room, they fit in 2-4 MiB.
//
// Active region: keys are spread over a prefix of the buffer (256 KiB at
// first) that doubles, rather than forget a live state, until it is the whole
// table, and halves when a sampled review finds it under 1/32 live
// (limiter-region.ts). Before doubling, a state in one of the key's full sets
// moves to its own other set if that has room (two steps at most). Only
// earned-back states are dropped while the region is smaller than the table,
// so until a key's two sets are full of live states in the whole table,
// decisions are exactly those of a table that never forgets.
import { fmix32 } from "./hash32";
import { KeyHasher } from "./key-hasher";
import type { Limit } from "./limit";
import { doubleRegion, halveRegion, SET_BYTES, sampledLiveShare, SLOT_HASH_SHIFT, tatCeilMsOf, TWO_POW_32, WAYS } from "./limiter-region";
import { PendingSpends } from "./pending-spends";

/** The active region at first: 4096 sets, 16,384 slots, 64 pages. */
const ACTIVE_START_BYTES = 256 * 1024;
/** Set-hash bits a slot keeps above the first active ones: the active region can double this many times. */
const SLOT_HASH_BITS = 11;
/** How often (by default) the active region is reviewed for halving. */
const REVIEW_EVERY_WRITES = 2 ** 18;
/** A key's second set is one of the 64 sets (one 4 KiB page) around its first. */
const PAGE_SETS = 64;
const BYTES_PER_MIB = 1024 * 1024;

export interface LimiterTableOptions {
  /** Seeds the key hash. Default: random per table, so outsiders cannot aim keys at one set. Tests pin it. */
  seed?: number;
  /** Bytes the active region starts with (default 256 KiB; the full size when larger). */
  activeStartBytes?: number;
  /** Writes between reviews for halving the active region (default 2^18; tests make it small). */
  reviewEveryWrites?: number;
}

export class LimiterTable {
  /** Bytes of slot storage, fixed at construction (besides it, a few hundred bytes of scratch). */
  readonly byteSize: number;
  readonly slotCount: number;
  readonly pending = new PendingSpends();
  readonly #hasher: KeyHasher;
  readonly #words: Int32Array;
  readonly #fullMask: number;
  /** Set-index mask of the active region. */
  #mask: number;
  /** Set-hash bits below the ones a slot keeps (log2 of the first active set count). */
  readonly #startBits: number;
  /** A key's second set is its first XOR (tag & #otherMask): below the first active bits, so both sets split alike. */
  readonly #otherMask: number;
  readonly #reviewEveryWrites: number;
  #writesUntilReview: number;

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
    this.#otherMask = Math.min(PAGE_SETS, 2 ** startBits) - 1;
    this.#reviewEveryWrites = Math.max(1, Math.floor(options.reviewEveryWrites ?? REVIEW_EVERY_WRITES));
    this.#writesUntilReview = this.#reviewEveryWrites;
    this.#hasher = new KeyHasher(options.seed ?? Math.floor(Math.random() * 4294967296));
  }

  /** Bytes of the region keys are currently spread over (doubles up to byteSize as live states crowd it). */
  get activeBytes(): number {
    return (this.#mask + 1) * SET_BYTES;
  }

  /** Hashes (subject, category) for setHashOf / tagOf (see KeyHasher). */
  hashKey(subject: string, category: string): void {
    this.#hasher.hash(subject, category);
  }

  /** The hashed key's 32-bit set hash under `limit`: its set is the low bits, in the active region. */
  setHashOf(limit: Limit): number {
    return fmix32(this.#hasher.keyA ^ limit.keySaltA);
  }

  /** The first slot of the hashed key's first set under `limit`, in the active region as it is now. */
  setBaseOf(limit: Limit): number {
    return (this.setHashOf(limit) & this.#mask) * WAYS;
  }

  /** The first slot of the other set of a key with `tag` whose set (first or second) starts at setBase; setBase itself when it has one set. */
  otherSetBase(setBase: number, tag: number): number {
    return setBase ^ ((tag & this.#otherMask) * WAYS);
  }

  /** The hashed key's tag under `limit` (from the other lane, so set and tag are independent). */
  tagOf(limit: Limit): number {
    // Never 0, the tag of a slot never used or emptied, which no key then matches.
    return fmix32(this.#hasher.keyB ^ limit.keySaltB) || 1;
  }

  /** The slot holding the key (setHash, tag) in either of its sets, or −1. */
  find(setHash: number, tag: number): number {
    const words = this.#words;
    const first = (setHash & this.#mask) * WAYS;
    for (let s = first; s < first + WAYS; s++) if (words[s * 4 + 2] === tag) return s;
    const second = first ^ ((tag & this.#otherMask) * WAYS);
    if (second !== first) for (let s = second; s < second + WAYS; s++) if (words[s * 4 + 2] === tag) return s;
    return -1;
  }

  /** TAT − t in units of 1/unitsPerMs ms held in `slot` (from find), or 0 when it holds no state at t. */
  relUnits(slot: number, t: number, unitsPerMs: number): number {
    const aheadMs = this.aheadMs(slot, t);
    return aheadMs === 0 ? 0 : aheadMs * unitsPerMs - this.#words[slot * 4 + 3]!;
  }

  /** Whole ms from t until the state in `slot` (from find) is earned back, rounded up: 0 when it holds no state at t. */
  aheadMs(slot: number, t: number): number {
    if (slot < 0) return 0;
    const aheadMs = tatCeilMsOf(this.#words, slot) - t;
    return aheadMs > 0 ? aheadMs : 0;
  }

  /** Empties `slot` (from find): its key holds no state until it is written again. */
  forget(slot: number): void {
    this.#words.fill(0, slot * 4, slot * 4 + 4);
  }

  /** The deficit (in the limit's units) of a slot whose aheadMs is not 0. */
  deficit(slot: number): number {
    return this.#words[slot * 4 + 3]!;
  }

  /**
   * Records TAT = t + resetMs − deficit/unitsPerMs for the key (setHash, tag),
   * with resetMs >= 1 and 0 <= deficit < unitsPerMs. The key's own slot is
   * reused (`slotHint` from find, if still its); otherwise a free slot in its
   * first set, else in its second, after making room (moving a state to its
   * other set, or doubling the active region) while the region is not yet the
   * whole table. When the whole table's two sets are full of live states, the
   * state earned back soonest is forgotten, the incoming one included: if no
   * live state there is earned back later than the incoming one, nothing is
   * written (the spend was admitted; only its record is dropped). The table
   * never refuses.
   */
  write(slotHint: number, setHash: number, tag: number, t: number, resetMs: number, deficit: number): void {
    const words = this.#words;
    const tatCeilMs = t + resetMs;
    let slot = slotHint;
    if (slot < 0 || words[slot * 4 + 2] !== tag || !this.#keeps(slot, setHash, tag, t)) slot = this.#place(setHash, tag, t, tatCeilMs);
    if (slot >= 0) {
      words[slot * 4] = tatCeilMs | 0;
      words[slot * 4 + 1] = Math.floor(tatCeilMs / TWO_POW_32) | ((setHash >>> this.#startBits) << SLOT_HASH_SHIFT);
      words[slot * 4 + 2] = tag;
      words[slot * 4 + 3] = deficit;
    }
    if (--this.#writesUntilReview === 0) this.#review(t);
  }

  // Whether the key's own `slot` (from find) is where its new state goes: in
  // its first set, or in its second while live. An earned-back state in the
  // second set is no state, so the key is placed afresh, first set first (a
  // hint can also be stale: an earlier write of the same decision may have
  // doubled the region or moved states).
  #keeps(slot: number, setHash: number, tag: number, t: number): boolean {
    const set = slot - (slot % WAYS);
    const first = (setHash & this.#mask) * WAYS;
    return set === first || (set === (first ^ ((tag & this.#otherMask) * WAYS)) && tatCeilMsOf(this.#words, slot) > t);
  }

  // The slot for the key when find()'s was not kept: a free one in its first
  // set, else in its second (its own earned-back slot counts as free, and is
  // cleared when the state goes elsewhere), making room while the region can
  // grow; when it cannot, the live state earned back soonest in both sets,
  // or −1 when that is the incoming one (earned back at tatCeilMs, no later
  // than all of them). Ties between live states go to the lowest tag, so what
  // is forgotten depends on the keys, not on where they sit.
  #place(setHash: number, tag: number, t: number, tatCeilMs: number): number {
    for (;;) {
      const own = this.find(setHash, tag);
      if (own >= 0 && this.#keeps(own, setHash, tag, t)) return own;
      const first = (setHash & this.#mask) * WAYS;
      const second = first ^ ((tag & this.#otherMask) * WAYS);
      let free = this.#freeIn(first, t);
      if (free >= 0 && own >= 0) this.forget(own);
      if (free < 0) free = own >= 0 ? own : second === first ? -1 : this.#freeIn(second, t);
      if (free >= 0) return free;
      if (this.#mask === this.#fullMask) return this.#victim(first, second, tatCeilMs);
      if (!this.#makeRoom(first, t, 2) && (second === first || !this.#makeRoom(second, t, 2))) {
        doubleRegion(this.#words, this.#mask + 1, this.#startBits);
        this.#mask = this.#mask * 2 + 1;
      }
    }
  }

  /** A slot of the set at setBase holding no state at t, or −1. */
  #freeIn(setBase: number, t: number): number {
    for (let s = setBase; s < setBase + WAYS; s++) if (tatCeilMsOf(this.#words, s) <= t) return s;
    return -1;
  }

  // Both sets full of live states in the whole table: the one earned back soonest (lowest tag on a tie), unless the incoming one is.
  #victim(first: number, second: number, tatCeilMs: number): number {
    const words = this.#words;
    let victim = first;
    let soonest = tatCeilMsOf(this.#words, first);
    for (let k = 1; k < 2 * WAYS; k++) {
      if (k === WAYS && second === first) break;
      const s = k < WAYS ? first + k : second + k - WAYS;
      const v = tatCeilMsOf(this.#words, s);
      if (v < soonest || (v === soonest && words[s * 4 + 2]! < words[victim * 4 + 2]!)) {
        soonest = v;
        victim = s;
      }
    }
    return tatCeilMs <= soonest ? -1 : victim;
  }

  // Frees a slot in the full set at setBase by moving one of its states to
  // that state's other set, if that has a free slot, or (depth 2) can be given
  // one the same way. True when a slot was freed. Only while the region grows:
  // a state moved keeps its words, so nothing is lost.
  #makeRoom(setBase: number, t: number, depth: number): boolean {
    const words = this.#words;
    for (let pass = 1; pass <= depth; pass++) {
      for (let s = setBase; s < setBase + WAYS; s++) {
        const other = setBase ^ ((words[s * 4 + 2]! & this.#otherMask) * WAYS);
        if (other === setBase) continue;
        let free = this.#freeIn(other, t);
        if (free < 0 && pass > 1 && this.#makeRoom(other, t, pass - 1)) free = this.#freeIn(other, t);
        if (free >= 0) {
          words.copyWithin(free * 4, s * 4, s * 4 + 4);
          words.fill(0, s * 4, s * 4 + 4);
          return true;
        }
      }
    }
    return false;
  }

  // Halves the active region when a sample of its sets is under 1/32 live.
  #review(t: number): void {
    this.#writesUntilReview = this.#reviewEveryWrites;
    const sets = this.#mask + 1;
    if (sets > 2 ** this.#startBits && sampledLiveShare(this.#words, sets, t) < 1 / 32 && halveRegion(this.#words, sets, t)) this.#mask = sets / 2 - 1;
  }

  /** Slots holding state not yet earned back at nowMs (a full scan: for tests and metrics, not the hot path). */
  liveEntries(nowMs: number): number {
    const t = Math.floor(nowMs);
    let live = 0;
    for (let s = 0; s < this.slotCount; s++) if (tatCeilMsOf(this.#words, s) > t) live++;
    return live;
  }

  /** The whole ms (rounded up) at which the key's state is earned back, or null when the table holds none for it at nowMs. */
  earnedBackAtMs(subject: string, category: string, limit: Limit, nowMs: number): number | null {
    const t = Math.floor(nowMs);
    this.hashKey(subject, category);
    const slot = this.find(this.setHashOf(limit), this.tagOf(limit));
    if (slot < 0) return null;
    const tatCeilMs = tatCeilMsOf(this.#words, slot);
    return tatCeilMs > t ? tatCeilMs : null;
  }
}
