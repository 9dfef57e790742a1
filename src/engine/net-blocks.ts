// Network blocks (`net:<CIDR>` targets, DESIGN §15): which block, if any,
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

/** Flips the top bit so that unsigned 32-bit words compare in order as signed ones (Int32Array, small integers). */
const SIGN = 0x80000000;

/** A block as its first and last address, each a list of unsigned 32-bit words (one for IPv4, four for IPv6), most significant first. */
interface Span {
  start: readonly number[];
  end: readonly number[];
  label: number;
}

function compare(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  return 0;
}

/** a + 1, or null when a is the last address. */
function successor(a: readonly number[]): number[] | null {
  const next = [...a];
  for (let i = next.length - 1; i >= 0; i--) {
    if (next[i] !== 0xffffffff) {
      next[i] = next[i]! + 1;
      return next;
    }
    next[i] = 0;
  }
  return null;
}

/** The disjoint ranges, each as its first address and the label covering it (−1: none), in order; the first starts at 0. */
function partition(spans: Span[], words: number): { starts: (readonly number[])[]; labels: number[] } {
  // Address order; an enclosing block before the blocks inside it; the first given first.
  spans.sort((a, b) => compare(a.start, b.start) || compare(b.end, a.end) || a.label - b.label);
  const starts: (readonly number[])[] = [new Array<number>(words).fill(0)];
  const labels: number[] = [-1];
  const emit = (at: readonly number[], label: number) => {
    const last = starts.length - 1;
    if (compare(starts[last]!, at) === 0) {
      labels[last] = label;
      if (last > 0 && labels[last - 1] === label) {
        starts.pop();
        labels.pop();
      }
    } else if (labels[last] !== label) {
      starts.push(at);
      labels.push(label);
    }
  };
  // Close every open block that ends before `before` (all of them when null), innermost first.
  const open: Span[] = [];
  const closeUntil = (before: readonly number[] | null) => {
    while (open.length > 0 && (before === null || compare(open[open.length - 1]!.end, before) < 0)) {
      const after = successor(open.pop()!.end);
      if (after === null) return; // it ends at the last address, and so does every block around it
      emit(after, open[open.length - 1]?.label ?? -1);
    }
  };
  for (const span of spans) {
    const top = open[open.length - 1];
    if (top !== undefined && compare(top.start, span.start) === 0 && compare(top.end, span.end) === 0) continue; // the same network again: the first given wins
    closeUntil(span.start);
    open.push(span);
    emit(span.start, span.label);
  }
  closeUntil(null);
  return { starts, labels };
}

/** Word `word` of each range start, top bit flipped. */
function column(starts: readonly (readonly number[])[], word: number): Int32Array {
  return Int32Array.from(starts, (s) => (s[word]! ^ SIGN) | 0);
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
 * per blocks snapshot, not per request.
 */
export function compileNetBlocks(entries: readonly NetBlockEntry[]): NetBlockMatcher {
  const v4: Span[] = [];
  const v6: Span[] = [];
  const invalid: number[] = [];
  entries.forEach((entry, index) => {
    const parsed = parseCidrs([entry.cidr]);
    if (!parsed.ok) {
      invalid.push(index);
      return;
    }
    const c4 = parsed.set.v4[0];
    const c6 = parsed.set.v6[0];
    if (c4 !== undefined) v4.push({ start: [c4.net], end: [(c4.net | ~c4.mask) >>> 0], label: index });
    else if (c6 !== undefined) v6.push({ start: c6.net, end: c6.net.map((w, i) => (w | ~c6.mask[i]!) >>> 0), label: index });
  });
  const p4 = partition(v4, 1);
  const p6 = partition(v6, 4);
  return new CompiledNetBlocks(
    entries.length - invalid.length,
    Object.freeze(invalid),
    entries.map((e) => e.id),
    withBuckets({ starts: [column(p4.starts, 0)], labels: Int32Array.from(p4.labels) }),
    withBuckets({ starts: [0, 1, 2, 3].map((w) => column(p6.starts, w)), labels: Int32Array.from(p6.labels) }),
  );
}

function withBuckets(family: { starts: readonly Int32Array[]; labels: Int32Array }) {
  return { ...family, buckets: bucketTable(family.starts[0]!) };
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
