// GET /global/accuracy: how close global limits stay to exact, from the
// ledgers' own records (src/durable/ledger-accuracy.ts). Which ledgers to
// read: the directory every LimitLedger with calls registers with (every ten
// minutes, with its calls since), busiest first, at most `limit` of them;
// each is asked for its minutes since `minutes` ago. Per global limit with
// traffic: the units it admitted (granted less given back: every admitted
// unit is in it, and a unit that expired unspent without going back too, so
// it never under-states), the exact GCRA's figure B + Δ·C/W for the minutes
// with traffic, and the published bound, which adds L·C/W; the same for
// the busiest minute; and per ledger, its calls per second. A key is named
// by its id (looked up by digest), an address only as `ip`.
//
// Leased budgets: the quota objects of owners with budgets, busiest first by
// their tenants' traffic (src/db/budget-objects.ts), at most `limit`, each
// asked for its budgets' lease grants and refusals in the span (counted in
// the object's memory: `counted_since` says from when) and the units its
// isolates hold in leases now. Auditor may read.
import type { Hono } from "hono";
import { z } from "zod";
import { database } from "../db/client";
import { busiestBudgetObjects } from "../db/budget-objects";
import { keysByDigests } from "../db/keys";
import type { BudgetLeaseAccuracyReport } from "../durable/budget-lease-accuracy";
import { budgetLeaseAccuracyOf } from "../durable/budget-client";
import { MINUTE_MS, minuteOf, REGISTER_EVERY_MS } from "../durable/ledger-accuracy";
import { ledgerAccuracyOf, listLedgers } from "../durable/ledger-client";
import type { LedgerAccuracy, LedgerLimitAccuracy } from "../durable/ledger-types";
import { boundUnits, leaseMsFor } from "../engine/lease-types";
import { compileLimit, limitError } from "../engine/limit";
import { problem } from "../errors";
import { errorName, log } from "../log/logger";
import type { AdminEnv } from "./admin-env";
import { limitParam } from "./schemas";
import { stored } from "./storage";
import { validate } from "./validate";

export const DEFAULT_ACCURACY_MINUTES = 60;
export const MAX_ACCURACY_MINUTES = 60;
export const DEFAULT_ACCURACY_LEDGERS = 50;
export const MAX_ACCURACY_LEDGERS = 200;
/** D1 binds at most 100 parameters a statement. */
const DIGESTS_PER_QUERY = 90;

const accuracyQuerySchema = z.strictObject({
  minutes: limitParam(MAX_ACCURACY_MINUTES, "must be a whole number of minutes").optional(),
  limit: limitParam(MAX_ACCURACY_LEDGERS).optional(),
});

/** Figures against the exact GCRA and the bound, over `spanMs`. */
interface Measured {
  admitted: number;
  exact: number;
  bound: number;
  within_bound: boolean;
}

interface LimitAnswer extends Measured {
  category: string;
  limit: { count: number; window_s: number; burst: number };
  lease_ms: number;
  granted: number;
  given_back: number;
  asks: number;
  refused_asks: number;
  from: string;
  busiest_minute: Measured & { at: string };
}

interface LedgerAnswer {
  caller: string | null;
  kind: "key" | "tenant" | "jwt" | "anonymous" | "ip" | "other";
  tenant: string | null;
  explain: string | null;
  calls: number;
  calls_per_s: number;
  peak_calls_per_s: number;
  limits: LimitAnswer[];
}

interface BudgetAnswer {
  owner: string;
  category: string;
  period: string;
  amount: number;
  used: number;
  held_in_leases: number;
  lease_grants: number;
  leased_units: number;
  refused: number;
  refused_while_held_elsewhere: number;
  counted_since: string;
}

function budgetAnswers(report: BudgetLeaseAccuracyReport, sinceMs: number): BudgetAnswer[] {
  const counted = new Date(Math.max(sinceMs, report.countingSinceMs)).toISOString();
  return report.budgets.map((b) => ({
    owner: b.owner,
    category: b.category,
    period: b.period,
    amount: b.amount,
    used: b.used,
    held_in_leases: b.leased,
    lease_grants: b.grants,
    leased_units: b.grantedUnits,
    refused: b.refused,
    refused_while_held_elsewhere: b.refusedWhileLeased,
    counted_since: counted,
  }));
}

function kindOf(label: string): LedgerAnswer["kind"] {
  if (label === "anonymous" || label === "ip") return label;
  const prefix = label.slice(0, label.indexOf(":"));
  return prefix === "key" || prefix === "tenant" || prefix === "jwt" ? prefix : "other";
}

function measured(admitted: number, exact: number, bound: number): Measured {
  return { admitted, exact, bound, within_bound: admitted <= bound };
}

/** One limit's answer, or null for a limit the engine would not compile (never written by this code). */
function limitAnswer(entry: LedgerLimitAccuracy, global: { maxOvershoot: number; minLeaseMs: number }): LimitAnswer | null {
  if (limitError(entry.limit) !== null) return null;
  const limit = compileLimit(entry.limit, "global");
  const leaseMs = leaseMsFor(limit, global.maxOvershoot, global.minLeaseMs);
  const spanMs = entry.lastMinuteMs + MINUTE_MS - entry.firstMinuteMs;
  const admitted = Math.max(0, entry.grantedUnits - entry.returnedUnits);
  return {
    category: entry.category,
    limit: entry.limit,
    lease_ms: leaseMs,
    ...measured(admitted, boundUnits(limit, spanMs, 0), boundUnits(limit, spanMs, leaseMs)),
    granted: entry.grantedUnits,
    given_back: entry.returnedUnits,
    asks: entry.asks,
    refused_asks: entry.refusedAsks,
    from: new Date(entry.firstMinuteMs).toISOString(),
    busiest_minute: {
      at: new Date(entry.busiestMinuteMs).toISOString(),
      ...measured(Math.max(0, entry.busiestMinuteUnits), boundUnits(limit, MINUTE_MS, 0), boundUnits(limit, MINUTE_MS, leaseMs)),
    },
  };
}

export function registerGlobalAccuracyRoutes(app: Hono<AdminEnv>): void {
  app.get("/global/accuracy", async (c) => {
    const query = validate(accuracyQuerySchema, c.req.query(), "");
    if (!query.ok) return query.response;
    const minutes = query.value.minutes ?? DEFAULT_ACCURACY_MINUTES;
    const nowMs = Date.now();
    const sinceMs = nowMs - minutes * MINUTE_MS;
    const ns = c.env.LIMIT_LEDGER;
    let listing: Awaited<ReturnType<typeof listLedgers>>;
    try {
      // A ledger registers every REGISTER_EVERY_MS: one busy since `since` registered at most that long before it.
      listing = await listLedgers(ns, sinceMs - REGISTER_EVERY_MS, query.value.limit ?? DEFAULT_ACCURACY_LEDGERS);
    } catch (err) {
      log.warn("ledger_directory_unavailable", { error: errorName(err) });
      return problem("limits_unavailable", { detail: "The directory of global-limit ledgers could not be read; retry.", headers: { "retry-after": "1" } });
    }
    const reports = await Promise.allSettled(listing.ledgers.map((l) => ledgerAccuracyOf(ns, l.ledgerId, sinceMs, nowMs)));
    const digests = [...new Set(listing.ledgers.filter((l) => /^key:[0-9a-f]{64}$/.test(l.label)).map((l) => l.label.slice(4)))];
    const keys = new Map<string, { id: string; tenant: string }>();
    for (let i = 0; i < digests.length; i += DIGESTS_PER_QUERY) {
      for (const row of await stored(() => keysByDigests(database(c.env.DB), digests.slice(i, i + DIGESTS_PER_QUERY)))) keys.set(row.digest, row);
    }
    const global = c.get("config").global;
    const ledgers: LedgerAnswer[] = [];
    let unreachable = 0;
    reports.forEach((report, i) => {
      if (report.status === "rejected") {
        unreachable++;
        return;
      }
      const answer = ledgerAnswer(listing.ledgers[i]!.label, report.value, keys, global, sinceMs, nowMs);
      if (answer.limits.length > 0) ledgers.push(answer);
    });
    if (unreachable > 0) log.warn("ledger_accuracy_unreachable", { ledgers: unreachable });
    ledgers.sort((a, b) => b.calls - a.calls);

    const objects = await stored(() => busiestBudgetObjects(database(c.env.DB), minuteOf(sinceMs), query.value.limit ?? DEFAULT_ACCURACY_LEDGERS));
    const budgetNs = { tenant: c.env.TENANT_QUOTA, org: c.env.ORG_QUOTA };
    const budgetReports = await Promise.allSettled(objects.map((o) => budgetLeaseAccuracyOf(budgetNs, o.object, sinceMs, nowMs)));
    const budgets = budgetReports.flatMap((r) => (r.status === "fulfilled" ? budgetAnswers(r.value, sinceMs) : []));
    budgets.sort((a, b) => b.refused_while_held_elsewhere - a.refused_while_held_elsewhere || b.lease_grants - a.lease_grants || a.owner.localeCompare(b.owner));
    const budgetObjectsUnreachable = budgetReports.filter((r) => r.status === "rejected").length;
    if (budgetObjectsUnreachable > 0) log.warn("budget_accuracy_unreachable", { objects: budgetObjectsUnreachable });
    return c.json({
      minutes,
      since: new Date(sinceMs).toISOString(),
      to: new Date(nowMs).toISOString(),
      settings: { max_overshoot: global.maxOvershoot, min_lease_ms: global.minLeaseMs },
      ledgers_seen: listing.seen,
      ledgers_read: listing.ledgers.length - unreachable,
      unreachable,
      ledgers,
      budget_objects_read: objects.length - budgetObjectsUnreachable,
      budget_objects_unreachable: budgetObjectsUnreachable,
      budgets,
    });
  });
}

function ledgerAnswer(label: string, report: LedgerAccuracy, keys: ReadonlyMap<string, { id: string; tenant: string }>, global: { maxOvershoot: number; minLeaseMs: number }, sinceMs: number, nowMs: number): LedgerAnswer {
  const kind = kindOf(label);
  let caller: string | null = kind === "ip" ? null : label;
  let tenant: string | null = kind === "tenant" ? label.slice("tenant:".length) : null;
  if (kind === "key") {
    const key = keys.get(label.slice(4));
    // A key deleted since: its digest is not shown.
    caller = key === undefined ? null : `key:${key.id}`;
    tenant = key?.tenant ?? null;
  }
  const fromMs = Math.max(sinceMs, report.firstCallMinuteMs ?? nowMs);
  const spanS = Math.max(60, (nowMs - fromMs) / 1000);
  return {
    caller,
    kind,
    tenant,
    explain: caller === null ? null : `/_tollgate/admin/v1/callers/${encodeURIComponent(caller)}`,
    calls: report.calls,
    calls_per_s: Math.round((report.calls / spanS) * 100) / 100,
    peak_calls_per_s: report.peakCallsPerS,
    limits: report.limits.map((entry) => limitAnswer(entry, global)).filter((a): a is LimitAnswer => a !== null),
  };
}
