// Per-call scratch for admit(): typed arrays reused across calls, so a
// decision allocates nothing but its result.
/** Per-call scratch for admit(): one entry per distinct key checked so far. Grows with charges per call, never with callers. */
export class PendingSpends {
  capacity = 16;
  setHash = new Int32Array(this.capacity);
  tag = new Int32Array(this.capacity);
  /** The slot find() gave during the check (−1: none), reused when the spends are applied. */
  slot = new Int32Array(this.capacity);
  /** The key's state before this call as TAT = now + preAheadMs − preDeficit/unitsPerMs (0 and 0: no state). */
  preAheadMs = new Float64Array(this.capacity);
  preDeficit = new Float64Array(this.capacity);
  /** The state after this call's spends (unchanged when they do not fit): TAT − now in the limit's units. */
  relUnits = new Float64Array(this.capacity);
  /** The summed cost of this call's spends on the key. */
  cost = new Float64Array(this.capacity);
  /** Where the key first appeared: charges[chargeIndex].limits[limitIndex]. */
  chargeIndex = new Int32Array(this.capacity);
  limitIndex = new Int32Array(this.capacity);

  /** Makes room for `entries` entries (the old contents are not kept: call before a decision). */
  reserve(entries: number): void {
    if (entries <= this.capacity) return;
    let capacity = this.capacity;
    while (capacity < entries) capacity *= 2;
    this.capacity = capacity;
    this.setHash = new Int32Array(capacity);
    this.tag = new Int32Array(capacity);
    this.slot = new Int32Array(capacity);
    this.preAheadMs = new Float64Array(capacity);
    this.preDeficit = new Float64Array(capacity);
    this.relUnits = new Float64Array(capacity);
    this.cost = new Float64Array(capacity);
    this.chargeIndex = new Int32Array(capacity);
    this.limitIndex = new Int32Array(capacity);
  }

  grow(): void {
    const grown = <T extends Int32Array | Float64Array>(a: T): T => {
      const b = new (a.constructor as new (n: number) => T)(a.length * 2);
      b.set(a);
      return b;
    };
    this.setHash = grown(this.setHash);
    this.tag = grown(this.tag);
    this.slot = grown(this.slot);
    this.preAheadMs = grown(this.preAheadMs);
    this.preDeficit = grown(this.preDeficit);
    this.relUnits = grown(this.relUnits);
    this.cost = grown(this.cost);
    this.chargeIndex = grown(this.chargeIndex);
    this.limitIndex = grown(this.limitIndex);
    this.capacity *= 2;
  }
}
