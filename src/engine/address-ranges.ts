// Nested or disjoint blocks of addresses (CIDRs never overlap partly) turned
// into sorted disjoint ranges, each labelled with the most specific block
// covering it: what net-blocks.ts searches. Addresses are W unsigned 32-bit
// words (1 for IPv4, 4 for IPv6), most significant first, held flat in typed
// arrays so that compiling 10,000 blocks allocates a handful of arrays.

/** Flips the top bit so that unsigned 32-bit words compare in order as signed ones (Int32Array, small integers). */
export const SIGN = 0x80000000;

/** Blocks of one family: block i spans starts[i·W .. i·W+W) to ends[…], and is labelled labels[i]. */
export interface Spans {
  readonly words: number;
  readonly count: number;
  readonly starts: Uint32Array;
  readonly ends: Uint32Array;
  readonly labels: Int32Array;
}

/** The ranges in address order: range r starts at the address whose word w is columns[w][r] ^ SIGN, and is labelled labels[r] (−1: no block). The first starts at 0. */
export interface Ranges {
  readonly columns: readonly Int32Array[];
  readonly labels: Int32Array;
}

function compareAt(a: Uint32Array, i: number, b: Uint32Array, j: number, words: number): number {
  for (let w = 0; w < words; w++) {
    const x = a[i * words + w]!;
    const y = b[j * words + w]!;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/**
 * Sweeps the blocks in address order (an enclosing block before those inside
 * it; of two blocks of the same network, the first label wins) with a stack
 * of the blocks open at that point, and records each address where the
 * innermost open block changes.
 */
export function disjointRanges(spans: Spans): Ranges {
  const { words, count, starts, ends, labels } = spans;
  const order = Array.from({ length: count }, (_, i) => i);
  order.sort((i, j) => compareAt(starts, i, starts, j, words) || compareAt(ends, j, ends, i, words) || labels[i]! - labels[j]!);
  // At most two boundaries per block, and the range from 0.
  const out = new Uint32Array((2 * count + 1) * words);
  const outLabels = new Int32Array(2 * count + 1);
  outLabels[0] = -1;
  let ranges = 1;
  const next = new Uint32Array(words);
  // A range from the address at from[at·W …] labelled `label`; one at the same address as the last replaces it.
  const emit = (from: Uint32Array, at: number, label: number) => {
    const last = ranges - 1;
    if (compareAt(out, last, from, at, words) === 0) {
      outLabels[last] = label;
      if (last > 0 && outLabels[last - 1] === label) ranges--;
    } else if (outLabels[last] !== label) {
      out.set(from.subarray(at * words, at * words + words), ranges * words);
      outLabels[ranges++] = label;
    }
  };
  const open = new Int32Array(count);
  let depth = 0;
  // Closes the innermost open block: the range after its last address belongs to the block around it. False at the last address.
  const close = (): boolean => {
    const block = open[--depth]!;
    let carry = 1;
    for (let w = words - 1; w >= 0; w--) {
      const sum = ends[block * words + w]! + carry;
      next[w] = sum >>> 0;
      carry = sum > 0xffffffff ? 1 : 0;
    }
    if (carry === 1) return false; // it ends at the last address, and so does every block around it
    emit(next, 0, depth > 0 ? labels[open[depth - 1]!]! : -1);
    return true;
  };
  for (const block of order) {
    if (depth > 0) {
      const top = open[depth - 1]!;
      if (compareAt(starts, top, starts, block, words) === 0 && compareAt(ends, top, ends, block, words) === 0) continue;
    }
    while (depth > 0 && compareAt(ends, open[depth - 1]!, starts, block, words) < 0) close();
    open[depth++] = block;
    emit(starts, block, labels[block]!);
  }
  while (depth > 0 && close());
  const columns: Int32Array[] = [];
  for (let w = 0; w < words; w++) {
    const column = new Int32Array(ranges);
    for (let r = 0; r < ranges; r++) column[r] = (out[r * words + w]! ^ SIGN) | 0;
    columns.push(column);
  }
  return { columns, labels: outLabels.slice(0, ranges) };
}
