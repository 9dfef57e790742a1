// Network blocks (`net:<CIDR>` targets, docs/design.md): which block, if any,
// covers a client address. Checked on every request before anything else,
// against up to tens of thousands of blocks, so the blocks are compiled once
// per snapshot into sorted disjoint ranges and a lookup is one binary search,
// with no allocation. A table of 4,096 entries, by the address's top 12 bits,
// narrows the search first: 10,000 blocks then take a few steps, not 15.
//
// CIDRs are nested or disjoint, never partly overlapping, so the address
// space splits into ranges each covered by one most specific block (or none).
// compileNetBlocks sweeps the blocks in address order with a stack of the
// blocks open at that point and records where the innermost one changes.
//
// Addresses are the full address, not the /64 a client is rate-limited by: a
// block may be any prefix length (a /128 blocks one host, a /64 a subscriber,
// a /32 a provider). IPv4-mapped IPv6 is IPv4 here as everywhere (cidr.ts):
// `::ffff:10.0.0.0/104` is the block 10.0.0.0/8, and `::/0` does not cover
// IPv4 clients.
import { disjointRanges, type Ranges, SIGN } from "./address-ranges";
import { type ParsedAddress, parseCidrs } from "./cidr";

export interface NetBlockEntry {
  /** What match() returns for an address the block covers (a block's id). */
  readonly id: string;
  /** `203.0.113.0/24`, `2001:db8::/48`, or a bare address (one host); host bits are masked off. */
  readonly cidr: string;
}

export interface NetBlockMatcher {
  /** How many entries were compiled (those whose cidr parsed). */
  readonly size: number;
  /** Indexes (into the entries given) whose cidr is not a CIDR: they block nothing. */
  readonly invalid: readonly number[];
  /**
   * The id of the most specific block covering `addr` (the longest prefix;
   * among blocks of the same network, the first given), or null.
   */
  match(addr: ParsedAddress): string | null;
}

/** Top bits of an address (of its first word) that pick its entry in the bucket table. */
const BUCKET_BITS = 12;

/**
 * For each bucket b (first words whose top BUCKET_BITS bits are b), the last
 * range starting at or below the bucket's first address; entry b + 1 bounds
 * the search from above. `firstWords` holds the ranges' first words, flipped.
 */
function bucketTable(firstWords: Int32Array): Int32Array {
  const table = new Int32Array(2 ** BUCKET_BITS + 1);
  let range = 0;
  for (let b = 0; b < 2 ** BUCKET_BITS; b++) {
    const first = ((b * 2 ** (32 - BUCKET_BITS)) ^ SIGN) | 0;
    // Ranges starting before the bucket's first address: their first word is smaller (an equal one starts at or after it).
    while (range + 1 < firstWords.length && firstWords[range + 1]! < first) range++;
    table[b] = range;
  }
  table[2 ** BUCKET_BITS] = firstWords.length - 1;
  return table;
}

/**
 * Compiles blocks for match(). Entries whose cidr does not parse are left
 * out and listed in `invalid` (the admin API validates targets when they are
 * written; a bad one in storage must not take the others down). Build it once
 * per change of the block list, not per request.
 */
export function compileNetBlocks(entries: readonly NetBlockEntry[]): NetBlockMatcher {
  const v4 = { words: 1, count: 0, starts: new Uint32Array(entries.length), ends: new Uint32Array(entries.length), labels: new Int32Array(entries.length) };
  const v6 = { words: 4, count: 0, starts: new Uint32Array(entries.length * 4), ends: new Uint32Array(entries.length * 4), labels: new Int32Array(entries.length) };
  const invalid: number[] = [];
  const ids: string[] = [];
  for (let index = 0; index < entries.length; index++) {
    const entry = entries[index]!;
    ids.push(entry.id);
    const parsed = parseCidrs([entry.cidr]);
    const c4 = parsed.ok ? parsed.set.v4[0] : undefined;
    const c6 = parsed.ok ? parsed.set.v6[0] : undefined;
    if (c4 !== undefined) {
      v4.starts[v4.count] = c4.net;
      v4.ends[v4.count] = c4.net | ~c4.mask;
      v4.labels[v4.count++] = index;
    } else if (c6 !== undefined) {
      for (let w = 0; w < 4; w++) {
        v6.starts[v6.count * 4 + w] = c6.net[w]!;
        v6.ends[v6.count * 4 + w] = c6.net[w]! | ~c6.mask[w]!;
      }
      v6.labels[v6.count++] = index;
    } else {
      invalid.push(index);
    }
  }
  return new CompiledNetBlocks(entries.length - invalid.length, Object.freeze(invalid), ids, withBuckets(disjointRanges(v4)), withBuckets(disjointRanges(v6)));
}

function withBuckets(ranges: Ranges): Compiled {
  return { starts: ranges.columns, labels: ranges.labels, buckets: bucketTable(ranges.columns[0]!) };
}

interface Compiled {
  starts: readonly Int32Array[];
  labels: Int32Array;
  buckets: Int32Array;
}

class CompiledNetBlocks implements NetBlockMatcher {
  readonly size: number;
  readonly invalid: readonly number[];
  readonly #ids: readonly string[];
  /** First address of each IPv4 range, top bit flipped; ascending, the first is 0. */
  readonly #v4Starts: Int32Array;
  /** The entry covering each IPv4 range, or −1. */
  readonly #v4Labels: Int32Array;
  /** Per top-12-bit bucket, the first and (next entry) last range the search need look at (see bucketTable). */
  readonly #v4Buckets: Int32Array;
  /** The same for IPv6, one array per 32-bit word, most significant first. */
  readonly #v6Starts0: Int32Array;
  readonly #v6Starts1: Int32Array;
  readonly #v6Starts2: Int32Array;
  readonly #v6Starts3: Int32Array;
  readonly #v6Labels: Int32Array;
  readonly #v6Buckets: Int32Array;

  constructor(size: number, invalid: readonly number[], ids: readonly string[], v4: Compiled, v6: Compiled) {
    this.size = size;
    this.invalid = invalid;
    this.#ids = ids;
    this.#v4Starts = v4.starts[0]!;
    this.#v4Labels = v4.labels;
    this.#v4Buckets = v4.buckets;
    this.#v6Starts0 = v6.starts[0]!;
    this.#v6Starts1 = v6.starts[1]!;
    this.#v6Starts2 = v6.starts[2]!;
    this.#v6Starts3 = v6.starts[3]!;
    this.#v6Labels = v6.labels;
    this.#v6Buckets = v6.buckets;
  }

  match(addr: ParsedAddress): string | null {
    let label: number;
    if (addr.family === 4) {
      label = this.#matchV4((addr.v4 ^ SIGN) | 0);
    } else {
      const w = addr.words;
      // A hand-built mapped address is IPv4 too (parseIp already makes it so).
      if (w[0] === 0 && w[1] === 0 && w[2] === 0xffff) label = this.#matchV4((w[3] ^ SIGN) | 0);
      else label = this.#matchV6((w[0] ^ SIGN) | 0, (w[1] ^ SIGN) | 0, (w[2] ^ SIGN) | 0, (w[3] ^ SIGN) | 0);
    }
    return label < 0 ? null : this.#ids[label]!;
  }

  // The last range starting at or below x.
  #matchV4(x: number): number {
    const starts = this.#v4Starts;
    const bucket = (x ^ SIGN) >>> (32 - BUCKET_BITS);
    let lo = this.#v4Buckets[bucket]!;
    let hi = this.#v4Buckets[bucket + 1]!;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (starts[mid]! <= x) lo = mid;
      else hi = mid - 1;
    }
    return this.#v4Labels[lo]!;
  }

  #matchV6(x0: number, x1: number, x2: number, x3: number): number {
    const s0 = this.#v6Starts0;
    const s1 = this.#v6Starts1;
    const s2 = this.#v6Starts2;
    const s3 = this.#v6Starts3;
    const bucket = (x0 ^ SIGN) >>> (32 - BUCKET_BITS);
    let lo = this.#v6Buckets[bucket]!;
    let hi = this.#v6Buckets[bucket + 1]!;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      const a = s0[mid]!;
      let atOrBelow: boolean;
      if (a !== x0) atOrBelow = a < x0;
      else if (s1[mid] !== x1) atOrBelow = s1[mid]! < x1;
      else if (s2[mid] !== x2) atOrBelow = s2[mid]! < x2;
      else atOrBelow = s3[mid]! <= x3;
      if (atOrBelow) lo = mid;
      else hi = mid - 1;
    }
    return this.#v6Labels[lo]!;
  }
}
