// A tenant's storage quota as the contract states it: owner records and
// counters, uploads reserved before the body is read (a same-size re-upload
// is a free dedup, an overwrite reserves only its growth, uploads of one name
// in flight together hold only what the largest could add), committed after
// an origin 2xx so the object ends recorded at the uploaded size whatever
// landed meanwhile (a delete that won the race is charged back), released
// otherwise; a delete gives the bytes back after an origin 2xx.
import type { QuotaSpec } from "./scenario";

export interface Reservation {
  readonly object: string;
  readonly bytes: number;
}

export type ReserveOutcome = { ok: true; reservation: Reservation } | { ok: false; kind: "bytes" | "objects" };

export class ModelQuota {
  readonly owners = new Map<string, number>();
  bytes = 0;
  objects = 0;
  readonly #live = new Set<Reservation>();

  constructor(readonly spec: QuotaSpec | null) {}

  /** The largest upload of `object` in flight, or null. */
  #largestLive(object: string): number | null {
    let largest: number | null = null;
    for (const r of this.#live) if (r.object === object && (largest === null || r.bytes > largest)) largest = r.bytes;
    return largest;
  }

  /**
   * What the uploads in flight hold, per object: the largest minus the
   * stored size (when positive), and one object while it is not stored.
   * Uploads of one name hold only what the largest could add, since one
   * size ends up stored, whichever commit lands last (docs/quotas.md,
   * "Several uploads of one object at once").
   */
  held(): { bytes: number; objects: number } {
    let bytes = 0;
    let objects = 0;
    for (const object of new Set([...this.#live].map((r) => r.object))) {
      const stored = this.owners.get(object);
      bytes += Math.max(0, this.#largestLive(object)! - (stored ?? 0));
      if (stored === undefined) objects += 1;
    }
    return { bytes, objects };
  }

  /**
   * Refused when what is stored, plus what uploads in flight hold, plus what
   * this upload adds to that would pass a hard quota (a kind it adds nothing
   * to never refuses: a dedup, a shrink, an overwrite a larger upload in
   * flight covers). `forced` (shadow) records the reservation even past the
   * hard quota, and says what enforce would have said.
   */
  reserve(object: string, bytes: number, forced: boolean): { outcome: ReserveOutcome; reservation: Reservation } {
    const stored = this.owners.get(object);
    const largest = this.#largestLive(object);
    const before = largest === null ? 0 : Math.max(0, largest - (stored ?? 0));
    const after = Math.max(0, Math.max(largest ?? 0, bytes) - (stored ?? 0));
    const adds = { bytes: after - before, objects: largest === null && stored === undefined ? 1 : 0 };
    const held = this.held();
    const reservation: Reservation = { object, bytes };
    let outcome: ReserveOutcome = { ok: true, reservation };
    const hardBytes = this.spec?.bytes?.hard;
    const hardObjects = this.spec?.objects?.hard;
    if (hardBytes !== undefined && adds.bytes > 0 && this.bytes + held.bytes + adds.bytes > hardBytes) outcome = { ok: false, kind: "bytes" };
    else if (hardObjects !== undefined && adds.objects > 0 && this.objects + held.objects + adds.objects > hardObjects) outcome = { ok: false, kind: "objects" };
    if (outcome.ok || forced) this.#live.add(reservation);
    return { outcome, reservation };
  }

  /** After an origin 2xx: the object is recorded at the uploaded size. */
  commit(r: Reservation): void {
    this.#live.delete(r);
    const old = this.owners.get(r.object);
    this.bytes += r.bytes - (old ?? 0);
    if (old === undefined) this.objects += 1;
    this.owners.set(r.object, r.bytes);
  }

  release(r: Reservation): void {
    this.#live.delete(r);
  }

  /** A delete the origin answered 2xx. */
  remove(object: string): void {
    const old = this.owners.get(object);
    if (old === undefined) return;
    this.owners.delete(object);
    this.bytes -= old;
    this.objects -= 1;
  }

  get reservedBytes(): number {
    return this.held().bytes;
  }
}
