// A tenant's storage quota as the contract states it: owner records and
// counters, uploads reserved before the body is read (a same-size re-upload
// is a free dedup, an overwrite reserves only its growth), committed after
// an origin 2xx so the object ends recorded at the uploaded size whatever
// landed meanwhile (a delete that won the race is charged back), released
// otherwise; a delete gives the bytes back after an origin 2xx.
import type { QuotaSpec } from "./scenario";

export interface Reservation {
  readonly object: string;
  readonly bytes: number;
  /** What the reservation holds against the hard quota. */
  readonly growth: number;
  readonly newObject: boolean;
}

export type ReserveOutcome = { ok: true; reservation: Reservation } | { ok: false; kind: "bytes" | "objects" };

export class ModelQuota {
  readonly owners = new Map<string, number>();
  bytes = 0;
  objects = 0;
  readonly #live = new Set<Reservation>();

  constructor(readonly spec: QuotaSpec | null) {}

  /** `forced` (shadow) records the reservation even past the hard quota, and says what enforce would have said. */
  reserve(object: string, bytes: number, forced: boolean): { outcome: ReserveOutcome; reservation: Reservation } {
    const old = this.owners.get(object);
    const growth = old === undefined ? bytes : Math.max(0, bytes - old);
    const reservation: Reservation = { object, bytes, growth: old === bytes ? 0 : growth, newObject: old === undefined };
    let outcome: ReserveOutcome = { ok: true, reservation };
    if (old !== bytes) {
      const reservedBytes = [...this.#live].reduce((sum, r) => sum + r.growth, 0);
      const reservedObjects = [...this.#live].filter((r) => r.newObject).length;
      const hardBytes = this.spec?.bytes?.hard;
      const hardObjects = this.spec?.objects?.hard;
      if (hardBytes !== undefined && this.bytes + reservedBytes + reservation.growth > hardBytes) outcome = { ok: false, kind: "bytes" };
      else if (hardObjects !== undefined && reservation.newObject && this.objects + reservedObjects + 1 > hardObjects) outcome = { ok: false, kind: "objects" };
    }
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
    return [...this.#live].reduce((sum, r) => sum + r.growth, 0);
  }
}
