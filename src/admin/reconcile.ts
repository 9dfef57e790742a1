// POST /usage/reconcile[?apply=true]: each tenant's metered
// `bytes_stored` over its whole history (every usage_monthly row of the
// metric plus every adjustment) against its quota object's committed bytes,
// which are the truth (the object changes its counter in the same
// transaction as the owner records). The report lists the tenants that
// drift; `apply=true` appends one usage_adjustments row per drifting tenant
// (attribution `reconciliation`, in the current UTC month), with an audit
// event in the same transaction. Nothing is ever rewritten, and the append
// happens only if the metered total is still what was compared, so a second
// run — concurrent or later — finds no drift instead of correcting twice.
// A drift in a tenant whose stored bytes changed within the last
// usage.flush_interval_s (plus a margin) is reported `recent` and never
// applied: the edge's metering of that change may not have been written
// yet, and correcting it now would count it twice once it is.
//
// Tenants are checked a page at a time (`cursor`, `limit`): each is one
// quota-object call, and one invocation may make only so many.
import type { Hono } from "hono";
import { insertAuditEventWhere } from "../db/audit";
import { database } from "../db/client";
import { appendAdjustmentIfUnchanged, type MeteredTotal, meteredTotalIs, meteredTotals, RECONCILIATION } from "../db/usage-adjustments";
import { periodOf } from "../db/usage-monthly";
import type { AdminEnv } from "./admin-env";
import { DEFAULT_RECONCILE_PAGE, reconcileQuerySchema } from "./operation-schemas";
import { pageOf, rowsToRead } from "./paging";
import { stored } from "./storage";
import { errorName, log } from "../log/logger";
import { liveQuotaUsages, quotaStub } from "./usage";
import { validate } from "./validate";

const METRIC = "bytes_stored";

type Status = "drift" | "recent" | "adjusted" | "changed" | "unavailable";

/** Beyond the flush interval: the time a flush takes to land (at most the interval again). */
const FLUSH_MARGIN_MS = 5_000;

interface Entry {
  tenant: string;
  status: Status;
  metered_bytes: number;
  quota_bytes: number | null;
  drift_bytes: number | null;
  /** For `recent`: seconds until the drift is old enough to trust. */
  wait_s?: number;
}

async function compare(env: AdminEnv["Bindings"], totals: readonly MeteredTotal[], nowMs: number, settleMs: number): Promise<Entry[]> {
  const usages = await liveQuotaUsages(env, totals.map((t) => t.tenant));
  const entries = totals.map((t, i): Entry => {
    const usage = usages[i] ?? null;
    if (usage === null) return { tenant: t.tenant, status: "unavailable", metered_bytes: t.metered, quota_bytes: null, drift_bytes: null };
    return { tenant: t.tenant, status: "drift", metered_bytes: t.metered, quota_bytes: usage.bytes, drift_bytes: usage.bytes - t.metered };
  });
  // Only a drifting tenant costs a second call: when did its bytes last change?
  await Promise.all(
    entries.map(async (entry) => {
      if (entry.status !== "drift" || entry.drift_bytes === 0) return;
      let changedAtMs: number | null;
      try {
        changedAtMs = await quotaStub(env, entry.tenant).lastByteChangeMs();
      } catch (error) {
        log.error("quota_usage_failed", { error: errorName(error) });
        entry.status = "unavailable";
        return;
      }
      if (changedAtMs !== null && changedAtMs + settleMs > nowMs) {
        entry.status = "recent";
        entry.wait_s = Math.ceil((changedAtMs + settleMs - nowMs) / 1000);
      }
    }),
  );
  return entries;
}

/** How long after a change of stored bytes its metering may still be on its way to D1. */
function settleWindowMs(flushIntervalMs: number): number {
  return flushIntervalMs + Math.min(FLUSH_MARGIN_MS, flushIntervalMs);
}

export function registerReconcileRoutes(app: Hono<AdminEnv>): void {
  app.post("/usage/reconcile", async (c) => {
    const query = validate(reconcileQuerySchema, c.req.query(), "");
    if (!query.ok) return query.response;
    const apply = query.value.apply === "true";
    const limit = query.value.limit ?? DEFAULT_RECONCILE_PAGE;
    const db = database(c.env.DB);
    const totals = await stored(() => meteredTotals(db, { metric: METRIC, afterSlug: query.value.cursor, tenant: query.value.tenant, limit: rowsToRead(limit) }));
    const { items: page, nextCursor } = pageOf(totals, limit, (t) => t.tenant);

    const nowMs = Date.now();
    const compared = await compare(c.env, page, nowMs, settleWindowMs(c.get("config").usageFlushIntervalMs));
    const reported = compared.filter((e) => e.status === "unavailable" || e.drift_bytes !== 0);
    if (apply) {
      const period = periodOf(nowMs);
      const drifting = reported.filter((e) => e.status === "drift");
      const statements = drifting.flatMap((e) => {
        const drift = e.drift_bytes as number;
        const unchanged = meteredTotalIs(e.tenant, METRIC, e.metered_bytes);
        return [
          insertAuditEventWhere(
            db,
            { atMs: nowMs, kind: "usage_reconciled", actor: "admin", tenant: e.tenant, subject: null, detail: { metric: METRIC, period, metered_bytes: e.metered_bytes, quota_bytes: e.quota_bytes, adjustment: drift, attribution: RECONCILIATION } },
            unchanged,
          ),
          appendAdjustmentIfUnchanged(db, { tenant: e.tenant, period, metric: METRIC, value: drift, attribution: RECONCILIATION, createdAtMs: nowMs }, e.metered_bytes),
        ];
      });
      const [first, ...rest] = statements;
      if (first !== undefined) {
        const results = await stored(() => db.batch([first, ...rest]));
        // Each tenant's pair is (audit, adjustment); the adjustment's changes say whether it was written.
        drifting.forEach((e, i) => {
          e.status = results[2 * i + 1]?.meta.changes === 1 ? "adjusted" : "changed";
        });
      }
    }
    return c.json({
      metric: METRIC,
      apply,
      checked: page.length,
      drifting: compared.filter((e) => e.status !== "unavailable" && e.drift_bytes !== 0).length,
      tenants: reported,
      next_cursor: nextCursor,
    });
  });
}
