// TenantQuota: one SQLite Durable Object per tenant (`idFromName(tenant)`)
// holding its storage quota exactly. The edge calls `reserve` before it reads
// an upload's body and `commit` or `release` after the origin answers; deletes
// call `remove`. Every quota decision reads and writes inside one
// `transactionSync` with no await before it, so concurrent calls from any
// number of isolates are serialised here and can never overshoot.
//
// Overwrites: an object's owner record has one size, set by the last commit
// of it. Live reservations hold, per object, the largest upload in flight
// minus the stored size (quota-rules.ts `uploadGrowth`), which covers every
// order their commits can land in; so committed + held only grows at a
// reserve, where it is checked. Every upload is recorded, a dedup (the size
// already stored) too, as a reservation holding nothing: a delete or shrink
// landing while it is in flight moves the room it frees into what is held,
// and the dedup's commit records the object again. The exceptions are a late
// commit (its reservation expired first) and a forced reservation (shadow
// mode forwards every upload): the origin stored the bytes, so they are
// recorded even past the hard quota.
//
// State changes (owner rows, reservations, counters, ledger, audit windows)
// happen only inside `transactionSync`; the ledger's unique ref makes a
// replayed commit, release or remove a no-op. The alarm expires reservations
// nobody settled and writes one `reservation_expired` audit event each to D1.
// Every change bumps `seq`; settle results carry a TenantReport for the org.

import { DurableObject } from "cloudflare:workers";
import type { BudgetLeaseAccuracyReport } from "./budget-lease-accuracy";
import { BudgetLeaseStore } from "./budget-lease-store";
import type { BudgetAdjustRequest, BudgetLeaseRequest, BudgetLeaseResult } from "./budget-lease-types";
import { BudgetStore } from "./budget-store";
import type {
  BudgetPutRequest,
  BudgetPutResult,
  BudgetReserveRequest,
  BudgetReserveResult,
  BudgetSettleRequest,
  BudgetSettleResult,
  BudgetState,
  BudgetThresholdAudit,
  BudgetTopUpRequest,
  BudgetTopUpResult,
} from "./budget-types";
import { commitInput, type CommitInput, releaseInput, removeInput, reserveInput, type ReserveInput } from "./quota-input";
import { firstExceeded, overSoft, uploadGrowth } from "./quota-rules";
import { ensureAlarmBy } from "./quota-shared";
import type {
  AuditDue,
  CommitRequest,
  PurgeResult,
  QuotaKind,
  QuotaLimits,
  ReindexResult,
  ReleaseRequest,
  RemoveRequest,
  ReserveExceeded,
  ReserveRequest,
  ReserveResult,
  SettleResult,
  TenantReport,
  UsageResult,
} from "./quota-types";
import { migrate } from "./sql-migrations";
import { type OwnAudit, writeOwnAudits } from "./tenant-quota-audit";
import { MIGRATIONS } from "./tenant-quota-sql";
import { TenantQuotaStore, type Outcome, type ReservationRow } from "./tenant-quota-store";

/** How long a settled ref is remembered, so a replay within it changes nothing. */
const LEDGER_RETENTION_MS = 24 * 60 * 60 * 1000;
const NO_CHANGE = { bytes: 0, objects: 0 } as const;
/** A commit replayed after it was settled once as one of these changes nothing. */
const COMMITTED: ReadonlySet<Outcome> = new Set(["committed", "late_committed", "dedup"]);

export class TenantQuota extends DurableObject<Env> {
  readonly #store: TenantQuotaStore;
  readonly #budgets: BudgetStore;
  readonly #leases: BudgetLeaseStore;
  #tenant: string | null | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // Synchronous, so it completes before the first call is delivered; a
    // failure fails construction, and the edge answers 503 (fail closed).
    migrate(ctx.storage, MIGRATIONS);
    this.#store = new TenantQuotaStore(ctx.storage.sql);
    this.#budgets = new BudgetStore(ctx.storage);
    this.#leases = new BudgetLeaseStore(this.#budgets.rows);
  }

  /** Reserves room for an upload, or says why not. See ReserveResult. */
  async reserve(req: ReserveRequest): Promise<ReserveResult> {
    const input = reserveInput(req);
    // The decision and its write happen before the first await.
    const result = this.ctx.storage.transactionSync(() => this.#reserve(input));
    if (result.status === "reserved") await ensureAlarmBy(this.ctx.storage, input.expiresAtMs);
    return result;
  }

  /**
   * Sets the owner record to the reserved upload's size, counters in the same
   * transaction. A commit whose reservation expired still records the upload
   * when the request names it (`object`, `bytes`): a late commit, audited.
   */
  commit(req: CommitRequest): Promise<SettleResult> {
    // Checked before any promise, so a bad request throws at once.
    const input = commitInput(req);
    return this.#commit(input);
  }

  /** Drops a reservation (the origin refused the upload, or it failed). */
  release(req: ReleaseRequest): SettleResult {
    const { reservationId, nowMs } = releaseInput(req);
    return this.ctx.storage.transactionSync(() => {
      const held = this.#store.reservation(reservationId);
      if (!held) return this.#result(this.#store.ledgerEntry(reservationId) === null ? "unknown" : "replayed", NO_CHANGE);
      this.#store.deleteReservation(reservationId);
      this.#store.ledger(reservationId, "released", held.object, NO_CHANGE, nowMs);
      this.#store.changed();
      return this.#result("released", NO_CHANGE);
    });
  }

  /** Deletes an owner record after the origin deleted the object, giving back its bytes and 1 object. */
  remove(req: RemoveRequest): SettleResult {
    const { object, ref, nowMs } = removeInput(req);
    return this.ctx.storage.transactionSync(() => {
      if (this.#store.ledgerEntry(ref) !== null) return this.#result("replayed", NO_CHANGE);
      const bytes = this.#store.deleteOwner(object);
      if (bytes === null) {
        // Remembered too, so a replay after the object is uploaded again does not delete it.
        this.#store.ledger(ref, "unknown", object, NO_CHANGE, nowMs);
        return this.#result("unknown", NO_CHANGE);
      }
      const delta = { bytes: -bytes, objects: -1 };
      this.#store.ledger(ref, "removed", object, delta, nowMs);
      this.#store.changed();
      return this.#result("removed", delta);
    });
  }

  usage(): UsageResult {
    const committed = this.#store.counters();
    const held = this.#store.held();
    return { bytes: committed.bytes, objects: committed.objects, reserved_bytes: held.bytes, reserved_objects: held.objects, reservations: this.#store.liveCount() };
  }

  /** When the committed bytes last changed (Unix ms), or null: reconcile leaves a drift younger than the metering flush alone. */
  lastByteChangeMs(): number | null {
    return this.#store.lastByteChangeMs();
  }

  /** The tenant's figures now, for its org (OrgQuota pulls them when it joins the tenant or its view is old). */
  report(): TenantReport {
    return this.#store.report();
  }

  /** Recounts the counters from the owner rows, fixes them, and reports the drift. */
  reindex(): ReindexResult {
    return this.ctx.storage.transactionSync(() => {
      const c = this.#store.counters();
      const before = { bytes: c.bytes, objects: c.objects };
      const after = this.#store.recount();
      const drift = { bytes: after.bytes - before.bytes, objects: after.objects - before.objects };
      if (drift.bytes !== 0 || drift.objects !== 0) {
        this.#store.ledger(`reindex:${crypto.randomUUID()}`, "reindexed", null, drift, Date.now());
        this.#store.changed();
      }
      return { before, after, drift };
    });
  }

  /**
   * Empties the object for a deleted tenant: owners, reservations, counters,
   * ledger, audit windows, the tenant slug, and the alarm. Returns the
   * committed usage it dropped. Reservations in flight are remembered as
   * `purged`, so their commits count nothing in the tenant created again
   * under the same slug; `seq` keeps growing, so the org never mistakes an
   * older report for a newer one. Idempotent.
   */
  async purge(): Promise<PurgeResult> {
    const dropped = this.ctx.storage.transactionSync(() => {
      const c = this.#store.counters();
      const inFlight = this.#store.liveReservationIds();
      this.#store.purge();
      const nowMs = Date.now();
      for (const r of inFlight) this.#store.ledger(r.id, "purged", r.object, NO_CHANGE, nowMs);
      return { bytes: c.bytes, objects: c.objects };
    });
    this.#tenant = undefined;
    await this.ctx.storage.deleteAlarm();
    return dropped;
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
      const due = this.#store.dueReservations(nowMs);
      for (const r of due) {
        this.#store.deleteReservation(r.id);
        this.#store.ledger(r.id, "expired", r.object, NO_CHANGE, nowMs);
      }
      if (due.length > 0) this.#store.changed();
      this.#store.pruneLedger(nowMs - LEDGER_RETENTION_MS);
      return due;
    });
    const next = this.#store.nextExpiry();
    if (next !== null) await this.ctx.storage.setAlarm(next);
    if (expired.length > 0) await writeOwnAudits(this.env.DB, this.#tenantSlug(), expired.map(expiredAudit), nowMs);
  }

  #reserve(i: ReserveInput): ReserveResult {
    this.#rememberTenant(i.tenant);
    const held = this.#store.reservation(i.reservationId);
    if (held) {
      // A retried reserve whose first answer was lost: same reservation.
      if (held.object !== i.object || held.bytes !== i.bytes) {
        throw new TypeError("TenantQuota: reservationId reused for a different upload");
      }
      return this.#reserved(held);
    }
    if (this.#store.ledgerEntry(i.reservationId) !== null) {
      throw new TypeError("TenantQuota: reservationId was already settled");
    }
    // A dedup (the size stored) is recorded too, holding nothing: its commit
    // must record the object again if a delete or shrink lands meanwhile.
    const growth = uploadGrowth(this.#store.ownerBytes(i.object), this.#store.maxLiveBytes(i.object), i.bytes);
    const over = firstExceeded(this.#store.counters(), this.#store.held(), i.quota, growth.held);
    let exceeded: ReserveExceeded | null = null;
    if (over) {
      const audit = this.#auditDue("quota_hard_exceeded", over.kind, over.usage, over.quota, i.nowMs, i.auditWindowMs, over.requested);
      if (!i.force) return { status: "exceeded", ...over, audit };
      // Forced (shadow mode): the edge forwards the upload anyway, so it is held and counted like any other.
      exceeded = { ...over, audit };
    }
    this.#store.insertReservation(i.reservationId, i.object, i.bytes, i.expiresAtMs, growth.own);
    this.#store.changed();
    const reserved = this.#reserved({ id: i.reservationId, growth_bytes: growth.own.bytes, growth_objects: growth.own.objects });
    return exceeded === null ? reserved : { ...reserved, exceeded };
  }

  #reserved(r: Pick<ReservationRow, "id" | "growth_bytes" | "growth_objects">): Extract<ReserveResult, { status: "reserved" }> {
    return { status: "reserved", reservationId: r.id, growthBytes: r.growth_bytes, growthObjects: r.growth_objects, report: this.#store.report() };
  }

  async #commit(i: CommitInput): Promise<SettleResult> {
    const { result, late } = this.ctx.storage.transactionSync((): { result: SettleResult; late: OwnAudit | null } => {
      const held = this.#store.reservation(i.reservationId);
      if (held) {
        if (i.upload !== null && (i.upload.object !== held.object || i.upload.bytes !== held.bytes)) {
          throw new TypeError("TenantQuota: commit names another upload than its reservation");
        }
        this.#store.deleteReservation(i.reservationId);
        const delta = this.#store.setOwner(held.object, held.bytes, i.nowMs);
        this.#store.ledger(i.reservationId, "committed", held.object, delta, i.nowMs);
        this.#store.changed();
        return { result: this.#result("committed", delta, i.quota, i.nowMs, i.auditWindowMs), late: null };
      }
      const entry = this.#store.ledgerEntry(i.reservationId);
      if (entry !== null && COMMITTED.has(entry.outcome)) return { result: this.#result("replayed", NO_CHANGE, i.quota), late: null };
      // Released (the edge said the origin refused), purged (the tenant was
      // deleted meanwhile) or never made here (or forgotten: the ledger keeps
      // a day): nothing to record. Without the upload named, an expired
      // reservation cannot be recorded either (the first RPC shape).
      if (entry === null || entry.outcome !== "expired" || i.upload === null) return { result: this.#result("unknown", NO_CHANGE), late: null };
      if (entry.object !== i.upload.object) throw new TypeError("TenantQuota: commit names another object than its reservation");
      // Expired: the origin stored the upload anyway, so it is recorded, even
      // past the hard quota.
      const { object, bytes } = i.upload;
      const delta = this.#store.setOwner(object, bytes, i.nowMs);
      this.#store.relabelLedger(i.reservationId, "late_committed", delta, i.nowMs);
      this.#store.changed();
      return {
        result: { ...this.#result("committed", delta, i.quota, i.nowMs, i.auditWindowMs), late: true },
        late: { kind: "reservation_late_commit", object, detail: { bytes, delta_bytes: delta.bytes, reservation_id: i.reservationId } },
      };
    });
    if (late !== null) await writeOwnAudits(this.env.DB, this.#tenantSlug(), [late], i.nowMs);
    return result;
  }

  /**
   * The settle answer, read after the change. With a quota it carries the
   * soft-quota warnings; with a time and window too (a real commit, not a
   * replay) the first kind whose audit window is open takes the one audit.
   */
  #result(status: SettleResult["status"], delta: { bytes: number; objects: number }, quota?: QuotaLimits, nowMs?: number, auditWindowMs?: number): SettleResult {
    const committed = this.#store.counters();
    const soft = quota ? overSoft(committed, quota) : [];
    let audit: AuditDue | null = null;
    if (nowMs !== undefined && auditWindowMs !== undefined) {
      for (const s of soft) {
        audit = this.#auditDue("quota_soft_exceeded", s.kind, s.usage, s.soft, nowMs, auditWindowMs);
        if (audit) break;
      }
    }
    return {
      status,
      bytes: committed.bytes,
      objects: committed.objects,
      deltaBytes: delta.bytes,
      deltaObjects: delta.objects,
      late: false,
      warnings: soft.map((s) => s.warning),
      audit,
      report: this.#store.report(),
    };
  }

  /** An audit event if none of this kind went out in the window, recording that one now does. */
  #auditDue(event: AuditDue["kind"], quotaKind: QuotaKind, usage: number, limit: number, nowMs: number, windowMs: number, requested?: number): AuditDue | null {
    if (!this.#store.takeAuditWindow(event, quotaKind, nowMs, windowMs)) return null;
    const audit: AuditDue = { kind: event, tenant: this.#tenantSlug() ?? "", quotaKind, usage, limit };
    if (requested !== undefined) audit.requested = requested;
    return audit;
  }

  #rememberTenant(tenant: string): void {
    const known = this.#tenantSlug();
    if (known === null) {
      this.#store.setMeta("tenant", tenant);
      // Not cached yet: the transaction may still roll back.
      this.#tenant = undefined;
    } else if (known !== tenant) {
      throw new TypeError("TenantQuota: this object belongs to another tenant");
    }
  }

  #tenantSlug(): string | null {
    if (this.#tenant === undefined) this.#tenant = this.#store.meta("tenant");
    return this.#tenant;
  }

  // Budgets (tenant and key): budget-store.ts.

  /** Reserves a request's spends from the budgets here, all or nothing. */
  budgetReserve(req: BudgetReserveRequest): BudgetReserveResult {
    return this.#budgets.reserve(req);
  }

  /** Replaces a reservation by the actual units (refund or debt). */
  budgetSettle(req: BudgetSettleRequest): BudgetSettleResult {
    return this.#budgets.settle(req);
  }

  budgetPut(req: BudgetPutRequest): BudgetPutResult {
    return this.#budgets.put(req);
  }

  budgetTopUp(req: BudgetTopUpRequest): BudgetTopUpResult {
    return this.#budgets.topUp(req);
  }

  budgetList(owner: string | null, nowMs: number): BudgetState[] {
    return this.#budgets.list(owner, nowMs);
  }

  budgetDelete(owner: string, category: string): boolean {
    return this.#budgets.delete(owner, category);
  }

  /** Reports and closes an isolate's budget leases and grants new ones (budget-lease-store.ts). */
  budgetLease(req: BudgetLeaseRequest): BudgetLeaseResult {
    return this.#leases.lease(req);
  }

  /** Debts past a lease and refunds after one closed. */
  budgetAdjust(req: BudgetAdjustRequest): BudgetThresholdAudit[] {
    return this.#leases.adjust(req);
  }

  /** Its budgets' lease grants and refusals lately, and what they hold now, for GET /global/accuracy (budget-lease-accuracy.ts). */
  budgetLeaseAccuracy(req: { sinceMs: number; nowMs: number }): BudgetLeaseAccuracyReport {
    return this.#leases.accuracy(req);
  }

  budgetPurge(owner: string | null): number {
    return this.#budgets.purge(owner);
  }
}

function expiredAudit(r: ReservationRow): OwnAudit {
  return { kind: "reservation_expired", object: r.object, detail: { bytes: r.bytes, reservation_id: r.id, expires_at: r.expires_at } };
}
