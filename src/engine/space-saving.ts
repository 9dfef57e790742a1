// The Space-Saving heavy-hitter sketch (Metwally, Agrawal, El Abbadi 2005):
// at most `capacity` counters; an item not held takes the place of the
// smallest counter and inherits its count (+1), remembering that count as
// its possible overcount (`error`). Every item whose true count is above
// N / capacity (N = all counted) is held, and each held item's count is
// within `error` of its true count, never below it. Fixed memory, O(capacity)
// per miss at worst (capacity ≤ 64 here, so a linear scan beats a heap).

export interface HeavyHitter {
  readonly item: string;
  /** What the caller attached to the item when it last counted it (a tenant), or null. */
  readonly tag: string | null;
  /** An upper bound of the item's true count. */
  readonly count: number;
  /** How much of `count` may belong to items it replaced: the true count is in [count − error, count]. */
  readonly error: number;
}

export const MAX_SKETCH_CAPACITY = 64;

export class SpaceSaving {
  readonly #capacity: number;
  readonly #index = new Map<string, number>();
  readonly #items: string[] = [];
  readonly #counts: number[] = [];
  readonly #errors: number[] = [];
  readonly #tags: (string | null)[] = [];
  #total = 0;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > MAX_SKETCH_CAPACITY) throw new RangeError(`capacity must be a whole number from 1 to ${MAX_SKETCH_CAPACITY}`);
    this.#capacity = capacity;
  }

  /** Everything counted, held or not. */
  get total(): number {
    return this.#total;
  }

  get size(): number {
    return this.#items.length;
  }

  /** Counts one occurrence (or `weight`) of `item`; `tag` is kept with it (the last one given). */
  add(item: string, weight = 1, tag: string | null = null): void {
    this.#total += weight;
    const at = this.#index.get(item);
    if (at !== undefined) {
      this.#counts[at]! += weight;
      this.#tags[at] = tag;
      return;
    }
    if (this.#items.length < this.#capacity) {
      this.#index.set(item, this.#items.length);
      this.#items.push(item);
      this.#counts.push(weight);
      this.#errors.push(0);
      this.#tags.push(tag);
      return;
    }
    let min = 0;
    for (let i = 1; i < this.#counts.length; i++) if (this.#counts[i]! < this.#counts[min]!) min = i;
    const floor = this.#counts[min]!;
    this.#index.delete(this.#items[min]!);
    this.#index.set(item, min);
    this.#items[min] = item;
    this.#counts[min] = floor + weight;
    this.#errors[min] = floor;
    this.#tags[min] = tag;
  }

  /** The held items, largest count first (ties by item, so the order is stable). */
  top(n = this.#capacity): HeavyHitter[] {
    const out: HeavyHitter[] = this.#items.map((item, i) => ({ item, tag: this.#tags[i]!, count: this.#counts[i]!, error: this.#errors[i]! }));
    out.sort((a, b) => b.count - a.count || (a.item < b.item ? -1 : a.item > b.item ? 1 : 0));
    return out.slice(0, Math.max(0, n));
  }
}
