// 32-bit integer mixing for the limiter table's keys. Not cryptographic: the
// table seeds it per isolate so that nobody outside can aim keys at one set,
// and a collision costs at worst one shared limiter state, never a crash.

/** MurmurHash3's finaliser: every input bit reaches every output bit. */
export function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** Folds one 32-bit word into a running hash (MurmurHash3's block step). */
export function mix32(h: number, word: number): number {
  let k = Math.imul(word, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  h ^= Math.imul(k, 0x1b873593);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

/** Splits a whole number below 2^53 into two 32-bit words and folds both in. */
export function mixWhole(h: number, value: number): number {
  return mix32(mix32(h, value >>> 0), Math.floor(value / 4294967296) | 0);
}
