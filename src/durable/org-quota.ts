// OrgQuota: one SQLite Durable Object per org (`idFromName(org)`), holding
// the org's storage quota across its tenants.
//
// Each tenant's own TenantQuota stays the truth for its usage. The org keeps,
// per member, the newest TenantReport it has seen: committed bytes and
// objects, and the room that tenant's uploads in flight hold. An upload
// reserves at its tenant first (that report includes the new reservation),
// then asks the org to admit it: the org's sum with that report must fit the
// org's hard quota, decided in one `transactionSync` with no await before
// it. Refused, the edge releases the tenant reservation. Settles send the
// tenant's next report.
//
// Why this is exact under concurrency. Take, per tenant, its committed usage
// plus the room held by the uploads the org admitted (per object, the largest
// admitted upload in flight over the stored size). At the tenant that sum
// never grows on a commit, release, expiry or remove (quota-rules.ts), so it
// grows only when the org admits an upload, or when an upload skips the org
// because it grows nothing over the stored object (then it adds nothing).
// The org admits only when the total with the tenant's report fits, and that
// report counts every upload in flight at the tenant, admitted or not: an
// upload covered at the tenant by another in-flight upload of the same object
// is still asked for its own growth, because the org may refuse the other.
// Every report the org keeps is at least that sum for its tenant (later
// changes only lower it, until a later admit, which is checked). So the sum
// over the org's tenants never passes the org's hard quota, whatever order
// the calls of many isolates arrive in. Reports carry the tenant's `seq`: the
// org keeps the newest, so a late, replayed or retried report changes
// nothing. What does pass it: a late commit (its reservation expired; the
// origin stored the bytes), an upload forced through in shadow mode, and
// uploads admitted by an isolate that has not yet seen the tenant join the
// org (within cache_ttl_s). A dedup (an upload of the size stored) grows
// nothing, so it is not asked here; its tenant still records it, and the
// report after a delete that lands while it is in flight shows the freed
// room as held, so the org keeps counting it until the dedup settles.
//
// A report kept while the tenant held room is pulled again from the tenant
// after reservation_ttl_s (the alarm), so room held by uploads that expired
// at the tenant does not stay held at the org when that tenant goes quiet.

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
import { errorName, log } from "../log/logger";
import { migrate } from "./sql-migrations";
import { ORG_MIGRATIONS, ORG_SQL } from "./org-quota-sql";
import { orgAdmitInput, type OrgReportInput, orgReportInput, tenantSlug } from "./org-quota-input";
import { DEFAULT_RESERVATION_TTL_S } from "./quota-input";
import type { MemberResult, OrgAdmitRequest, OrgAdmitResult, OrgReportRequest, OrgReportResult, OrgUsageResult } from "./org-quota-types";
import { firstExceeded, overSoft } from "./quota-rules";
import { ensureAlarmBy, readMeta, takeAuditWindow, writeMeta } from "./quota-shared";
import type { AuditDue, PurgeResult, QuotaKind, TenantReport } from "./quota-types";

/** After a failed pull, when to try again. */
const PULL_RETRY_MS = 60_000;
/** A kept report is pulled again this long after reservation_ttl_s, so the tenant's alarm has run. */
const PULL_SLACK_MS = 1_000;

type Sums = { bytes: number; objects: number; heldBytes: number; heldObjects: number };
type MemberRow = { member: number; seq: number; bytes: number; objects: number; heldBytes: number; heldObjects: number };

export class OrgQuota extends DurableObject<Env> {
  readonly #sql: SqlStorage;
  readonly #budgets: BudgetStore;
  readonly #leases: BudgetLeaseStore;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    migrate(ctx.storage, ORG_MIGRATIONS);
    this.#sql = ctx.storage.sql;
    this.#budgets = new BudgetStore(ctx.storage);
    this.#leases = new BudgetLeaseStore(this.#budgets.rows);
  }

  /** Admits a tenant's reservation if the org's usage with it fits the org's hard quota. */
  async admit(req: OrgAdmitRequest): Promise<OrgAdmitResult> {
    const i = orgAdmitInput(req);
    const { result, pullAt } = this.ctx.storage.transactionSync(() => {
      this.#rememberOrg(i.org);
      const row = this.#member(i.tenant);
      if (row !== null && row.member === 0) return { result: { status: "not_member" } as const, pullAt: null };
      // A newer report than the kept one is what this upload would make the
      // tenant's figures; an older one is already included in the kept one.
      const fresh = row === null || i.report.seq > row.seq;
      const total = add(this.#sums(i.tenant), fresh || row === null ? i.report : row);
      const without = { bytes: Math.max(0, total.heldBytes - i.growth.bytes), objects: Math.max(0, total.heldObjects - i.growth.objects) };
      const over = firstExceeded(total, without, i.quota, i.growth);
      if (over) {
        const audit = this.#auditDue("quota_hard_exceeded", i, over.kind, over.usage, over.quota, over.requested);
        // Forced (shadow mode): the upload goes ahead anyway, so the org counts it.
        const pullAt = i.force && fresh ? this.#keep(i.tenant, i.report, i.nowMs, i.ttlMs) : null;
        return { result: { status: "exceeded", ...over, audit } as const, pullAt };
      }
      const pullAt = fresh ? this.#keep(i.tenant, i.report, i.nowMs, i.ttlMs) : null;
      return { result: { status: "admitted" } as const, pullAt };
    });
    if (pullAt !== null) await ensureAlarmBy(this.ctx.storage, pullAt);
    return result;
  }

  /** Keeps a tenant's report from a commit, release or remove when it is newer; answers the org's warnings. */
  async report(req: OrgReportRequest): Promise<OrgReportResult> {
    const i = orgReportInput(req);
    const { result, pullAt } = this.ctx.storage.transactionSync(() => {
      this.#rememberOrg(i.org);
      const row = this.#member(i.tenant);
      let status: OrgReportResult["status"] = "stale";
      let pullAt: number | null = null;
      if (row !== null && row.member === 0) status = "not_member";
      else if (row === null || i.report.seq > row.seq) {
        status = "applied";
        pullAt = this.#keep(i.tenant, i.report, i.nowMs, i.ttlMs);
      }
      const sums = this.#sums(null);
      const soft = overSoft(sums, i.quota);
      let audit: AuditDue | null = null;
      if (status === "applied") {
        for (const s of soft) {
          audit = this.#auditDue("quota_soft_exceeded", i, s.kind, s.usage, s.soft);
          if (audit) break;
        }
      }
      const warnings = soft.map((s) => ({ ...s.warning, org: i.org }));
      return { result: { status, bytes: sums.bytes, objects: sums.objects, warnings, audit }, pullAt };
    });
    if (pullAt !== null) await ensureAlarmBy(this.ctx.storage, pullAt);
    return result;
  }

  /**
   * Takes a tenant into the org (again) with its figures now, read from its
   * TenantQuota: call when a tenant's `org` is set to this org. Idempotent.
   */
  async setMember(tenant: string): Promise<MemberResult> {
    const slug = tenantSlug(tenant);
    const report = await this.env.TENANT_QUOTA.get(this.env.TENANT_QUOTA.idFromName(slug)).report();
    const nowMs = Date.now();
    const pullAt = this.ctx.storage.transactionSync(() => {
      const row = this.#member(slug);
      // A report that reached the org while this one was read may be newer: keep that.
      if (row !== null && row.member === 1 && row.seq >= report.seq) return null;
      return this.#keep(slug, report, nowMs, this.#ttlMs());
    });
    if (pullAt !== null) await ensureAlarmBy(this.ctx.storage, pullAt);
    return this.#memberResult(slug);
  }

  /**
   * Takes a tenant out of the org: its figures stop counting, and reports for
   * it are refused until setMember. Call when a tenant's `org` changes away
   * from this org or the tenant is deleted. Idempotent.
   */
  dropMember(tenant: string): MemberResult {
    const slug = tenantSlug(tenant);
    this.ctx.storage.transactionSync(() => {
      this.#sql.exec(ORG_SQL.dropMember, slug, Date.now());
    });
    return this.#memberResult(slug);
  }

  usage(): OrgUsageResult {
    const row = this.#sql.exec<Sums & { members: number }>(ORG_SQL.sums).one();
    return { bytes: row.bytes, objects: row.objects, reserved_bytes: row.heldBytes, reserved_objects: row.heldObjects, members: row.members };
  }

  /** Empties the object for a deleted org: members, audit windows, slug, alarm. Returns the committed usage it dropped. */
  async purge(): Promise<PurgeResult> {
    const dropped = this.ctx.storage.transactionSync(() => {
      const sums = this.#sums(null);
      for (const statement of ORG_SQL.purge) this.#sql.exec(statement);
      return { bytes: sums.bytes, objects: sums.objects };
    });
    await this.ctx.storage.deleteAlarm();
    return dropped;
  }

  /**
   * Pulls a fresh report from each member whose kept one held room and is
   * older than reservation_ttl_s. Idempotent: a pull keeps a report only when
   * it is newer. A tenant that does not answer is tried again later.
   */
  override async alarm(): Promise<void> {
    const nowMs = Date.now();
    const due = this.#sql.exec<{ tenant: string }>(ORG_SQL.duePulls, nowMs).toArray();
    for (const { tenant } of due) {
      let report: TenantReport | null = null;
      try {
        report = await this.env.TENANT_QUOTA.get(this.env.TENANT_QUOTA.idFromName(tenant)).report();
      } catch (err) {
        log.error("org_quota_pull_failed", { error: errorName(err) });
      }
      this.ctx.storage.transactionSync(() => {
        const row = this.#member(tenant);
        if (row === null || row.member === 0) return;
        if (report === null) this.#sql.exec(ORG_SQL.setPullAt, nowMs + PULL_RETRY_MS, tenant);
        else if (report.seq > row.seq) this.#keep(tenant, report, nowMs, this.#ttlMs());
        else this.#sql.exec(ORG_SQL.setPullAt, row.heldBytes > 0 || row.heldObjects > 0 ? nowMs + this.#ttlMs() + PULL_SLACK_MS : null, tenant);
      });
    }
    const next = this.#sql.exec<{ at: number | null }>(ORG_SQL.nextPull).one().at;
    if (next !== null) await this.ctx.storage.setAlarm(next);
  }

  /** Keeps a report as the tenant's figures (a member from now on); returns when to pull again, or null. */
  #keep(tenant: string, r: TenantReport, nowMs: number, ttlMs: number): number | null {
    const pullAt = r.heldBytes > 0 || r.heldObjects > 0 ? nowMs + ttlMs + PULL_SLACK_MS : null;
    this.#sql.exec(ORG_SQL.upsertMember, tenant, r.seq, r.bytes, r.objects, r.heldBytes, r.heldObjects, pullAt, nowMs);
    writeMeta(this.#sql, "ttl_ms", String(ttlMs));
    return pullAt;
  }

  #member(tenant: string): MemberRow | null {
    return this.#sql.exec<MemberRow>(ORG_SQL.member, tenant).toArray()[0] ?? null;
  }

  /** The members' sums, without `except` when given. */
  #sums(except: string | null): Sums {
    const row = except === null ? this.#sql.exec<Sums>(ORG_SQL.sums).one() : this.#sql.exec<Sums>(ORG_SQL.sumsExcept, except).one();
    return { bytes: row.bytes, objects: row.objects, heldBytes: row.heldBytes, heldObjects: row.heldObjects };
  }

  #memberResult(tenant: string): MemberResult {
    const row = this.#member(tenant);
    const member = row !== null && row.member === 1;
    return { tenant, member, bytes: row?.bytes ?? 0, objects: row?.objects ?? 0, heldBytes: row?.heldBytes ?? 0, heldObjects: row?.heldObjects ?? 0 };
  }

  /** An audit event naming the org, if none of this kind went out in the window. */
  #auditDue(event: AuditDue["kind"], i: OrgReportInput, quotaKind: QuotaKind, usage: number, limit: number, requested?: number): AuditDue | null {
    if (!takeAuditWindow(this.#sql, event, quotaKind, i.nowMs, i.auditWindowMs)) return null;
    const audit: AuditDue = { kind: event, tenant: i.tenant, org: i.org, quotaKind, usage, limit };
    if (requested !== undefined) audit.requested = requested;
    return audit;
  }

  #rememberOrg(org: string): void {
    const known = readMeta(this.#sql, "org");
    if (known === null) writeMeta(this.#sql, "org", org);
    else if (known !== org) throw new TypeError("OrgQuota: this object belongs to another org");
  }

  #ttlMs(): number {
    const stored = readMeta(this.#sql, "ttl_ms");
    return stored === null ? DEFAULT_RESERVATION_TTL_S * 1000 : Number(stored);
  }

  // Budgets (org): budget-store.ts.

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

function add(a: Sums, b: Sums): Sums {
  return { bytes: a.bytes + b.bytes, objects: a.objects + b.objects, heldBytes: a.heldBytes + b.heldBytes, heldObjects: a.heldObjects + b.heldObjects };
}
