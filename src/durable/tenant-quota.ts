// TenantQuota: one SQLite Durable Object per tenant (`idFromName(tenant)`)
// holding its storage quota exactly. The edge calls `reserve` before it reads
// an upload's body and `commit` or `release` after the origin answers; deletes
// call `remove`. Every quota decision reads and writes inside one
// `transactionSync` with no await before it, so concurrent calls from any
// number of isolates are serialised here and can never overshoot.
//
// State changes (owner rows, reservations, counters, ledger, audit windows)
// happen only inside `transactionSync`; the ledger's unique ref makes a
// replayed commit, release or remove a no-op. The alarm expires reservations
// nobody settled and writes one `reservation_expired` audit event each to D1.

import { DurableObject } from "cloudflare:workers";
import { commitInput, releaseInput, removeInput, reserveInput, type ReserveInput } from "./quota-input";
import { firstExceeded, overSoft, type Pending, type Usage } from "./quota-rules";
import type {
  AuditDue,
  CommitRequest,
  QuotaKind,
  QuotaLimits,
  ReindexResult,
  ReleaseRequest,
  RemoveRequest,
  ReserveRequest,
  ReserveResult,
  SettleResult,
  UsageResult,
} from "./quota-types";
import { INSERT_EXPIRED_AUDIT, migrate, SQL } from "./tenant-quota-sql";

/** How long a settled ref is remembered, so a replay within it changes nothing. */
const LEDGER_RETENTION_MS = 24 * 60 * 60 * 1000;
/** Audit rows per D1 batch when the alarm records expiries. */
const AUDIT_ROWS_PER_BATCH = 50;

type Outcome = "committed" | "dedup" | "released" | "expired" | "removed" | "unknown" | "reindexed";

type ReservationRow = { id: string; object: string; bytes: number; expires_at: number };

export class TenantQuota extends DurableObject<Env> {
  readonly #sql: SqlStorage;
  #tenant: string | null | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#sql = ctx.storage.sql;
    // Synchronous, so it completes before the first call is delivered; a
    // failure fails construction, and the edge answers 503 (fail closed).
    migrate(ctx.storage);
  }

  /** Reserves room for an upload, or says why not. See ReserveResult. */
  async reserve(req: ReserveRequest): Promise<ReserveResult> {
    const input = reserveInput(req);
    // The decision and its write happen before the first await.
    const result = this.ctx.storage.transactionSync(() => this.#reserve(input));
    if (result.status === "reserved") await this.#ensureAlarm(input.expiresAtMs);
    return result;
  }

  /** Turns a reservation into an owner record; counters change in the same transaction. */
  commit(req: CommitRequest): SettleResult {
    const { reservationId, nowMs, quota, auditWindowMs } = commitInput(req);
    return this.ctx.storage.transactionSync(() => {
      const held = this.#reservation(reservationId);
      if (!held) {
        const outcome = this.#ledgerOutcome(reservationId);
        if (outcome === "committed" || outcome === "dedup") return this.#result("replayed", 0, quota);
        return this.#result("unknown", 0);
      }
      this.#sql.exec(SQL.deleteReservation, reservationId);
      if (this.#ownerBytes(held.object) !== null) {
        // Two uploads of one object raced and the other committed first: the
        // tenant owns it once, so this one charges nothing.
        this.#ledger(reservationId, "dedup", held.object, 0, 0, nowMs);
        return this.#result("committed", 0, quota, nowMs, auditWindowMs);
      }
      this.#sql.exec(SQL.insertOwner, held.object, held.bytes, nowMs);
      this.#sql.exec(SQL.addToCounters, held.bytes, 1);
      this.#ledger(reservationId, "committed", held.object, held.bytes, 1, nowMs);
      return this.#result("committed", held.bytes, quota, nowMs, auditWindowMs);
    });
  }

  /** Drops a reservation (the origin refused the upload, or it failed). */
  release(req: ReleaseRequest): SettleResult {
    const { reservationId, nowMs } = releaseInput(req);
    return this.ctx.storage.transactionSync(() => {
      const held = this.#reservation(reservationId);
      if (!held) return this.#result(this.#ledgerOutcome(reservationId) === null ? "unknown" : "replayed", 0);
      this.#sql.exec(SQL.deleteReservation, reservationId);
      this.#ledger(reservationId, "released", held.object, 0, 0, nowMs);
      return this.#result("released", 0);
    });
  }

  /** Deletes an owner record after the origin deleted the object, giving back its bytes and 1 object. */
  remove(req: RemoveRequest): SettleResult {
    const { object, ref, nowMs } = removeInput(req);
    return this.ctx.storage.transactionSync(() => {
      if (this.#ledgerOutcome(ref) !== null) return this.#result("replayed", 0);
      const bytes = this.#ownerBytes(object);
      if (bytes === null) {
        // Remembered too, so a replay after the object is uploaded again does not delete it.
        this.#ledger(ref, "unknown", object, 0, 0, nowMs);
        return this.#result("unknown", 0);
      }
      const before = this.#counters();
      this.#sql.exec(SQL.deleteOwner, object);
      if (before.bytes < bytes || before.objects < 1) {
        // The counters drifted below the rows they count (corrupted by hand):
        // recount rather than go negative.
        const after = this.#recount();
        console.warn(JSON.stringify({ event: "quota_counter_drift", during: "remove", before, after }));
      } else {
        this.#sql.exec(SQL.addToCounters, -bytes, -1);
      }
      this.#ledger(ref, "removed", object, -bytes, -1, nowMs);
      return this.#result("removed", -bytes);
    });
  }

  usage(): UsageResult {
    const committed = this.#counters();
    const pending = this.#pending();
    return { bytes: committed.bytes, objects: committed.objects, reserved_bytes: pending.bytes, reservations: pending.count };
  }

  /** Recounts the counters from the owner rows, fixes them, and reports the drift. */
  reindex(): ReindexResult {
    return this.ctx.storage.transactionSync(() => {
      const before = this.#counters();
      const after = this.#recount();
      const drift = { bytes: after.bytes - before.bytes, objects: after.objects - before.objects };
      if (drift.bytes !== 0 || drift.objects !== 0) {
        this.#ledger(`reindex:${crypto.randomUUID()}`, "reindexed", null, drift.bytes, drift.objects, Date.now());
      }
      return { before, after, drift };
    });
  }

  /**
   * Expires every reservation whose `expires_at` has passed, prunes the
   * ledger, and reschedules itself only while reservations remain. Idempotent:
   * a second run finds nothing due. The D1 audit rows are written after the
   * expiry is durable; if D1 fails they are logged (counts only) and dropped,
   * never retried and never failing the alarm: the expiry itself stays in the
   * ledger, and a retried alarm could not find the expired rows again anyway.
   */
  override async alarm(): Promise<void> {
    const nowMs = Date.now();
    const expired = this.ctx.storage.transactionSync(() => {
      const due = this.#sql.exec<ReservationRow>(SQL.dueReservations, nowMs).toArray();
      for (const r of due) {
        this.#sql.exec(SQL.deleteReservation, r.id);
        this.#ledger(r.id, "expired", r.object, 0, 0, nowMs);
      }
      this.#sql.exec(SQL.pruneLedger, nowMs - LEDGER_RETENTION_MS);
      return due;
    });
    const next = this.#sql.exec<{ at: number | null }>(SQL.nextExpiry).one().at;
    if (next !== null) await this.ctx.storage.setAlarm(next);
    if (expired.length > 0) await this.#auditExpired(expired, nowMs);
  }

  #reserve(i: ReserveInput): ReserveResult {
    this.#rememberTenant(i.tenant);
    const held = this.#reservation(i.reservationId);
    if (held) {
      // A retried reserve whose first answer was lost: same reservation.
      if (held.object !== i.object || held.bytes !== i.bytes) {
        throw new TypeError("TenantQuota: reservationId reused for a different upload");
      }
      return { status: "reserved", reservationId: i.reservationId };
    }
    if (this.#ledgerOutcome(i.reservationId) !== null) {
      throw new TypeError("TenantQuota: reservationId was already settled");
    }
    if (this.#ownerBytes(i.object) !== null) return { status: "dedup" };
    const over = firstExceeded(this.#counters(), this.#pending(), i.quota, i.bytes);
    if (over) {
      const audit = this.#auditDue("quota_hard_exceeded", over.kind, over.usage, over.quota, i.nowMs, i.auditWindowMs, over.requested);
      return { status: "exceeded", ...over, audit };
    }
    this.#sql.exec(SQL.insertReservation, i.reservationId, i.object, i.bytes, i.expiresAtMs);
    return { status: "reserved", reservationId: i.reservationId };
  }

  /**
   * The settle answer, read after the change. With a quota it carries the
   * soft-quota warnings; with a time and window too (a real commit, not a
   * replay) the first kind whose audit window is open takes the one audit.
   */
  #result(status: SettleResult["status"], deltaBytes: number, quota?: QuotaLimits, nowMs?: number, auditWindowMs?: number): SettleResult {
    const committed = this.#counters();
    const soft = quota ? overSoft(committed, quota) : [];
    let audit: AuditDue | null = null;
    if (nowMs !== undefined && auditWindowMs !== undefined) {
      for (const s of soft) {
        audit = this.#auditDue("quota_soft_exceeded", s.kind, s.usage, s.soft, nowMs, auditWindowMs);
        if (audit) break;
      }
    }
    return { status, bytes: committed.bytes, objects: committed.objects, deltaBytes, warnings: soft.map((s) => s.warning), audit };
  }

  /** An audit event if none of this kind went out in the window, recording that one now does. */
  #auditDue(event: AuditDue["kind"], quotaKind: QuotaKind, usage: number, limit: number, nowMs: number, windowMs: number, requested?: number): AuditDue | null {
    const last = this.#sql.exec<{ last_at: number }>(SQL.auditWindow, event, quotaKind).toArray()[0]?.last_at;
    // Isolates' clocks differ a little: a `nowMs` just behind `last` is inside the window too.
    if (last !== undefined && nowMs < last + windowMs) return null;
    this.#sql.exec(SQL.setAuditWindow, event, quotaKind, nowMs);
    const audit: AuditDue = { kind: event, tenant: this.#tenantSlug() ?? "", quotaKind, usage, limit };
    if (requested !== undefined) audit.requested = requested;
    return audit;
  }

  async #ensureAlarm(atMs: number): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > atMs) await this.ctx.storage.setAlarm(atMs);
  }

  async #auditExpired(expired: ReservationRow[], nowMs: number): Promise<void> {
    const tenant = this.#tenantSlug();
    try {
      for (let start = 0; start < expired.length; start += AUDIT_ROWS_PER_BATCH) {
        const rows = expired.slice(start, start + AUDIT_ROWS_PER_BATCH);
        await this.env.DB.batch(
          rows.map((r) =>
            this.env.DB.prepare(INSERT_EXPIRED_AUDIT).bind(
              nowMs,
              tenant,
              r.object,
              JSON.stringify({ bytes: r.bytes, reservation_id: r.id, expires_at: r.expires_at }),
            ),
          ),
        );
      }
    } catch (err) {
      console.error(
        JSON.stringify({
          event: "quota_audit_write_failed",
          tenant,
          expired: expired.length,
          error: err instanceof Error ? err.name : typeof err,
        }),
      );
    }
  }

  #rememberTenant(tenant: string): void {
    const known = this.#tenantSlug();
    if (known === null) {
      this.#sql.exec(SQL.setMeta, "tenant", tenant);
      // Not cached yet: the transaction may still roll back.
      this.#tenant = undefined;
    } else if (known !== tenant) {
      throw new TypeError("TenantQuota: this object belongs to another tenant");
    }
  }

  #tenantSlug(): string | null {
    if (this.#tenant === undefined) {
      const row = this.#sql.exec<{ value: string }>(SQL.meta, "tenant").toArray()[0];
      this.#tenant = row?.value ?? null;
    }
    return this.#tenant;
  }

  #counters(): Usage {
    const row = this.#sql.exec<{ bytes: number; objects: number }>(SQL.counters).one();
    return { bytes: row.bytes, objects: row.objects };
  }

  #recount(): Usage {
    const after = this.#sql.exec<{ bytes: number; objects: number }>(SQL.sumOwners).one();
    this.#sql.exec(SQL.setCounters, after.bytes, after.objects);
    return { bytes: after.bytes, objects: after.objects };
  }

  #pending(): Pending {
    const row = this.#sql.exec<{ bytes: number; count: number }>(SQL.sumReservations).one();
    return { bytes: row.bytes, count: row.count };
  }

  #reservation(id: string): ReservationRow | null {
    const row = this.#sql.exec<Omit<ReservationRow, "id">>(SQL.reservation, id).toArray()[0];
    return row ? { ...row, id } : null;
  }

  #ownerBytes(object: string): number | null {
    return this.#sql.exec<{ bytes: number }>(SQL.ownerBytes, object).toArray()[0]?.bytes ?? null;
  }

  #ledgerOutcome(ref: string): Outcome | null {
    return (this.#sql.exec<{ outcome: string }>(SQL.ledgerOutcome, ref).toArray()[0]?.outcome as Outcome | undefined) ?? null;
  }

  #ledger(ref: string, outcome: Outcome, object: string | null, deltaBytes: number, deltaObjects: number, atMs: number): void {
    this.#sql.exec(SQL.insertLedger, ref, outcome, object, deltaBytes, deltaObjects, atMs);
  }
}
