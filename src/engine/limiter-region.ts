// The limiter table's slot layout (see limiter-table.ts) and the resizing of
// its active region: doubling when a key's sets are full of live states,
// halving when a sampled review finds it mostly empty. Pure functions over
// the table's words; the table keeps the region's size.

/** Slots per set: one 64-byte cache line of four 16-byte slots. */
export const WAYS = 4;
export const SET_BYTES = WAYS * 16;
/** Where a slot's set-hash bits start in its second word (below them, the high 21 bits of tatCeilMs). */
export const SLOT_HASH_SHIFT = 21;
const TIME_HIGH_MASK = 0x1fffff;
export const TWO_POW_32 = 4294967296;
/** How many sets a review samples. */
const REVIEW_SAMPLE_SETS = 256;

/** The whole ms (rounded up) at which the state in `slot` is earned back; 0 for a slot never used. */
export function tatCeilMsOf(words: Int32Array, slot: number): number {
  return (words[slot * 4 + 1]! & TIME_HIGH_MASK) * TWO_POW_32 + (words[slot * 4]! >>> 0);
}

/** Slots of the set at setBase holding state at t. */
function liveIn(words: Int32Array, setBase: number, t: number): number {
  let live = 0;
  for (let s = setBase; s < setBase + WAYS; s++) if (tatCeilMsOf(words, s) > t) live++;
  return live;
}

/**
 * Doubles a region of `sets` sets: every slot whose key has the next set-hash
 * bit moves to the same way of the set above it, which has never been used.
 * A key's two sets differ only below the first active bits (`startBits`), so
 * both split alike. The caller doubles its set mask.
 */
export function doubleRegion(words: Int32Array, sets: number, startBits: number): void {
  const bitShift = SLOT_HASH_SHIFT + Math.log2(sets) - startBits;
  const offsetWords = sets * WAYS * 4;
  for (let w = 0; w < offsetWords; w += 4) {
    if (((words[w + 1]! >>> bitShift) & 1) === 1) {
      words.copyWithin(w + offsetWords, w, w + 4);
      words.fill(0, w, w + 4);
    }
  }
}

/** The share of live slots in a sample of REVIEW_SAMPLE_SETS sets spread over the region. */
export function sampledLiveShare(words: Int32Array, sets: number, t: number): number {
  const stride = Math.max(1, Math.floor(sets / REVIEW_SAMPLE_SETS));
  let live = 0;
  let sampled = 0;
  for (let set = 0; set < sets; set += stride, sampled++) live += liveIn(words, set * WAYS, t);
  return live / (sampled * WAYS);
}

/**
 * Merges each set of the upper half of a region of `sets` sets into its twin
 * below, keeping only live states; true when done. Gives up, changing
 * nothing, if some pair holds more live states than one set can.
 */
export function halveRegion(words: Int32Array, sets: number, t: number): boolean {
  const half = sets / 2;
  const offsetSlots = half * WAYS;
  for (let set = 0; set < half; set++) {
    if (liveIn(words, set * WAYS, t) + liveIn(words, set * WAYS + offsetSlots, t) > WAYS) return false;
  }
  for (let set = 0; set < half; set++) {
    let to = set * WAYS;
    for (let from = set * WAYS; from < set * WAYS + 2 * WAYS; from++) {
      const slot = from < set * WAYS + WAYS ? from : from - WAYS + offsetSlots;
      if (tatCeilMsOf(words, slot) > t) {
        if (slot !== to) {
          words.copyWithin(to * 4, slot * 4, slot * 4 + 4);
          words.fill(0, slot * 4, slot * 4 + 4);
        }
        to++;
      } else {
        words.fill(0, slot * 4, slot * 4 + 4);
      }
    }
  }
  return true;
}
