// TenantQuota's reads and writes over its SQLite tables (tenant-quota-sql.ts).
// Every method is synchronous and is meant to run inside the caller's
// `transactionSync`: the object makes its decisions, this keeps the rows and
// the counters that count them in step.
import { log } from "../log/logger";
import type { Pending, Usage } from "./quota-rules";
import type { AuditDue, QuotaKind, TenantReport } from "./quota-types";
import { readMeta, takeAuditWindow, writeMeta } from "./quota-shared";
import { SQL } from "./tenant-quota-sql";

export type Outcome =
  | "committed"
  | "late_committed"
  | "dedup" // written by the first version for the loser of a race; read as committed
  | "released"
  | "expired"
  | "purged"
  | "removed"
  | "unknown"
  | "reindexed";

// A type, not an interface: SqlStorage rows need an index signature.
export type ReservationRow = {
  id: string;
  object: string;
  bytes: number;
  expires_at: number;
  growth_bytes: number;
  growth_objects: number;
};

export class TenantQuotaStore {
  readonly #sql: SqlStorage;

  constructor(sql: SqlStorage) {
    this.#sql = sql;
  }

  counters(): Usage & { seq: number } {
    const row = this.#sql.exec<{ bytes: number; objects: number; seq: number }>(SQL.counters).one();
    return { bytes: row.bytes, objects: row.objects, seq: row.seq };
  }

  /** What live reservations hold (see UsageResult). */
  held(): Pending {
    const row = this.#sql.exec<{ bytes: number; objects: number }>(SQL.held).one();
    return { bytes: row.bytes, objects: row.objects };
  }

  liveCount(): number {
    return this.#sql.exec<{ n: number }>(SQL.liveCount).one().n;
  }

  /** When the committed bytes last changed (Unix ms), as far back as the ledger keeps; null when it holds no change. */
  lastByteChangeMs(): number | null {
    return this.#sql.exec<{ at: number | null }>(SQL.lastByteChange).one().at;
  }

  /** Marks a change, so the org can tell this report from older ones. */
  changed(): void {
    this.#sql.exec(SQL.bumpSeq);
  }

  report(): TenantReport {
    const c = this.counters();
    const h = this.held();
    return { seq: c.seq, bytes: c.bytes, objects: c.objects, heldBytes: h.bytes, heldObjects: h.objects };
  }

  ownerBytes(object: string): number | null {
    return this.#sql.exec<{ bytes: number }>(SQL.ownerBytes, object).toArray()[0]?.bytes ?? null;
  }

  maxLiveBytes(object: string): number | null {
    return this.#sql.exec<{ bytes: number | null }>(SQL.maxLiveBytes, object).one().bytes;
  }

  /**
   * Sets the owner record of `object` to `bytes` (inserting it when new) and
   * moves the counters by the difference; returns that difference.
   */
  setOwner(object: string, bytes: number, nowMs: number): Usage {
    const before = this.ownerBytes(object);
    if (before === null) {
      this.#sql.exec(SQL.insertOwner, object, bytes, nowMs);
      this.#sql.exec(SQL.addToCounters, bytes, 1);
      return { bytes, objects: 1 };
    }
    this.#sql.exec(SQL.setOwnerBytes, bytes, object);
    this.#addOrRecount(bytes - before, 0, "commit");
    return { bytes: bytes - before, objects: 0 };
  }

  /** Deletes the owner record of `object`, giving its bytes and one object back; null when not owned. */
  deleteOwner(object: string): number | null {
    const bytes = this.ownerBytes(object);
    if (bytes === null) return null;
    this.#sql.exec(SQL.deleteOwner, object);
    this.#addOrRecount(-bytes, -1, "remove");
    return bytes;
  }

  /** Sets the counters from the owner records; returns them. */
  recount(): Usage {
    const after = this.#sql.exec<{ bytes: number; objects: number }>(SQL.sumOwners).one();
    this.#sql.exec(SQL.setCounters, after.bytes, after.objects);
    return { bytes: after.bytes, objects: after.objects };
  }

  reservation(id: string): ReservationRow | null {
    const row = this.#sql.exec<Omit<ReservationRow, "id">>(SQL.reservation, id).toArray()[0];
    return row ? { ...row, id } : null;
  }

  insertReservation(id: string, object: string, bytes: number, expiresAtMs: number, growth: Usage): void {
    this.#sql.exec(SQL.insertReservation, id, object, bytes, expiresAtMs, growth.bytes, growth.objects);
  }

  deleteReservation(id: string): void {
    this.#sql.exec(SQL.deleteReservation, id);
  }

  dueReservations(nowMs: number): ReservationRow[] {
    return this.#sql.exec<ReservationRow>(SQL.dueReservations, nowMs).toArray();
  }

  liveReservationIds(): Array<{ id: string; object: string }> {
    return this.#sql.exec<{ id: string; object: string }>(SQL.liveReservations).toArray();
  }

  nextExpiry(): number | null {
    return this.#sql.exec<{ at: number | null }>(SQL.nextExpiry).one().at;
  }

  ledgerEntry(ref: string): { outcome: Outcome; object: string | null } | null {
    const row = this.#sql.exec<{ outcome: string; object: string | null }>(SQL.ledgerOutcome, ref).toArray()[0];
    return row ? { outcome: row.outcome as Outcome, object: row.object } : null;
  }

  ledger(ref: string, outcome: Outcome, object: string | null, delta: Usage, atMs: number): void {
    this.#sql.exec(SQL.insertLedger, ref, outcome, object, delta.bytes, delta.objects, atMs);
  }

  /** Settles again a ref the ledger holds (an expired reservation committed late). */
  relabelLedger(ref: string, outcome: Outcome, delta: Usage, atMs: number): void {
    this.#sql.exec(SQL.updateLedger, outcome, delta.bytes, delta.objects, atMs, ref);
  }

  pruneLedger(beforeMs: number): void {
    this.#sql.exec(SQL.pruneLedger, beforeMs);
  }

  /** Whether an audit event of this kind may go out at `nowMs`, recording that one does (quota-shared.ts). */
  takeAuditWindow(event: AuditDue["kind"], quotaKind: QuotaKind, nowMs: number, windowMs: number): boolean {
    return takeAuditWindow(this.#sql, event, quotaKind, nowMs, windowMs);
  }

  meta(key: string): string | null {
    return readMeta(this.#sql, key);
  }

  setMeta(key: string, value: string): void {
    writeMeta(this.#sql, key, value);
  }

  /** Empties every table but the schema; `seq` keeps growing. */
  purge(): void {
    for (const statement of SQL.purge) this.#sql.exec(statement);
    this.changed();
  }

  #addOrRecount(bytes: number, objects: number, during: string): void {
    const before = this.counters();
    if (before.bytes + bytes < 0 || before.objects + objects < 0) {
      // The counters drifted below the rows they count (corrupted by hand):
      // recount rather than go negative. The rows are already changed.
      const after = this.recount();
      log.warn("quota_counter_drift", { during, before: { bytes: before.bytes, objects: before.objects }, after: { bytes: after.bytes, objects: after.objects } });
      return;
    }
    this.#sql.exec(SQL.addToCounters, bytes, objects);
  }
}
