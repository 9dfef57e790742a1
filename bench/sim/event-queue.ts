// The simulation's clock: a binary heap of timed events, popped in time
// order (ties in the order they were scheduled), so a run is a pure function
// of its seed. Time is simulated Unix ms; nothing here reads a real clock.

interface Entry<E> {
  readonly atMs: number;
  readonly seq: number;
  readonly event: E;
}

export class EventQueue<E> {
  readonly #heap: Entry<E>[] = [];
  #seq = 0;
  /** The time of the event being handled: the clock every simulated isolate and object reads. */
  nowMs = 0;

  get size(): number {
    return this.#heap.length;
  }

  /** Schedules `event` at `atMs` (never before now: a model that asks for the past gets now). */
  push(atMs: number, event: E): void {
    const heap = this.#heap;
    heap.push({ atMs: Math.max(atMs, this.nowMs), seq: this.#seq++, event });
    for (let k = heap.length - 1; k > 0; ) {
      const parent = (k - 1) >> 1;
      if (!this.#before(k, parent)) break;
      this.#swap(k, parent);
      k = parent;
    }
  }

  /** The time of the next event, or Infinity when there is none. */
  peekMs(): number {
    return this.#heap[0]?.atMs ?? Number.POSITIVE_INFINITY;
  }

  /** Removes the next event and moves the clock to its time. */
  pop(): E {
    const heap = this.#heap;
    const top = heap[0];
    if (top === undefined) throw new Error("pop from an empty event queue");
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      for (let k = 0; ; ) {
        const l = 2 * k + 1;
        const r = l + 1;
        let m = k;
        if (l < heap.length && this.#before(l, m)) m = l;
        if (r < heap.length && this.#before(r, m)) m = r;
        if (m === k) break;
        this.#swap(k, m);
        k = m;
      }
    }
    this.nowMs = top.atMs;
    return top.event;
  }

  #before(a: number, b: number): boolean {
    const x = this.#heap[a]!;
    const y = this.#heap[b]!;
    return x.atMs < y.atMs || (x.atMs === y.atMs && x.seq < y.seq);
  }

  #swap(a: number, b: number): void {
    const heap = this.#heap;
    const x = heap[a]!;
    heap[a] = heap[b]!;
    heap[b] = x;
  }
}
