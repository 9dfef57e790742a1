// Traffic: who is being admitted and refused, per minute (GET /traffic), the
// callers refused most (GET /traffic/top-refused), and what each shadow
// policy would have refused, and whom (GET /traffic/shadow). The isolates count in
// memory and flush with metering (src/db/traffic-recorder.ts); a read first
// flushes what this isolate holds, so an operator sees the latest minute
// that reached this isolate without waiting for the interval. Auditor may read.
import type { Context, Hono } from "hono";
import { z } from "zod";
import { database } from "../db/client";
import { shadowTopCallers, shadowTotals, topRefused, trafficSeries } from "../db/traffic";
import { recentAlerts } from "../db/alerts";
import { MINUTE_MS } from "../engine/traffic-counts";
import { decisionKind, trafficFlushOptionsFor } from "../limits/traffic";
import type { AdminEnv } from "./admin-env";
import { isoTimestamp, limitParam, tenantSlugSchema } from "./schemas";
import { stored } from "./storage";
import { invalid, validate } from "./validate";

/** The longest span one GET /traffic may ask for. */
export const MAX_TRAFFIC_SPAN_DAYS = 31;
export const DEFAULT_TRAFFIC_SPAN_MS = 3_600_000;
export const MAX_TOP_REFUSED_MINUTES = 7 * 24 * 60;
export const DEFAULT_TOP_REFUSED_MINUTES = 60;
export const TOP_REFUSED_LIMIT = 20;
/** Callers listed per shadow policy. */
export const SHADOW_TOP_CALLERS = 10;

const trafficQuerySchema = z.strictObject({
  from: isoTimestamp.optional(),
  to: isoTimestamp.optional(),
  tenant: z.union([tenantSlugSchema, z.literal("anonymous")]).optional(),
});

const topRefusedQuerySchema = z.strictObject({
  minutes: limitParam(MAX_TOP_REFUSED_MINUTES, "must be a whole number of minutes").optional(),
});

export function registerTrafficRoutes(app: Hono<AdminEnv>): void {
  app.get("/traffic", async (c) => {
    const query = validate(trafficQuerySchema, c.req.query(), "");
    if (!query.ok) return query.response;
    const nowMs = Date.now();
    const toMs = query.value.to === undefined ? nowMs : Date.parse(query.value.to);
    const fromMs = query.value.from === undefined ? toMs - DEFAULT_TRAFFIC_SPAN_MS : Date.parse(query.value.from);
    if (toMs <= fromMs) return invalid(query.value.to === undefined ? "from" : "to", "must be after from");
    if (toMs - fromMs > MAX_TRAFFIC_SPAN_DAYS * 86_400_000) return invalid("to", `must be at most ${MAX_TRAFFIC_SPAN_DAYS} days after from`);
    const db = database(c.env.DB);
    await flushThisIsolate(c);
    // Whole minutes: a minute that starts inside [from, to) is in.
    const rows = await stored(() => trafficSeries(db, fromMs - (fromMs % MINUTE_MS), toMs, query.value.tenant ?? null));
    const minutes = new Map<number, { minute: string; admitted: number; refused: number; decisions: Record<string, number> }>();
    for (const row of rows) {
      let minute = minutes.get(row.minuteMs);
      if (minute === undefined) {
        minute = { minute: new Date(row.minuteMs).toISOString(), admitted: 0, refused: 0, decisions: {} };
        minutes.set(row.minuteMs, minute);
      }
      minute.decisions[row.decision] = (minute.decisions[row.decision] ?? 0) + row.count;
      const kind = decisionKind(row.decision);
      if (kind === "admitted") minute.admitted += row.count;
      else if (kind === "refused") minute.refused += row.count;
    }
    return c.json({ from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString(), tenant: query.value.tenant ?? null, minutes: [...minutes.values()] });
  });

  app.get("/traffic/top-refused", async (c) => {
    const query = validate(topRefusedQuerySchema, c.req.query(), "");
    if (!query.ok) return query.response;
    const minutesBack = query.value.minutes ?? DEFAULT_TOP_REFUSED_MINUTES;
    const nowMs = Date.now();
    const sinceMs = nowMs - minutesBack * MINUTE_MS;
    await flushThisIsolate(c);
    const rows = await stored(() => topRefused(database(c.env.DB), sinceMs - (sinceMs % MINUTE_MS), TOP_REFUSED_LIMIT));
    return c.json({
      minutes: minutesBack,
      since: new Date(sinceMs).toISOString(),
      callers: rows.map((row) => ({ caller: row.caller, tenant: row.tenant, refused: row.count, overcount_at_most: row.error, explain: `/_tollgate/admin/v1/callers/${encodeURIComponent(row.caller)}` })),
    });
  });

  registerShadowTrafficRoute(app);
}

/** One shadow policy's would-be refusals over the span, as GET /traffic/shadow answers them. */
interface ShadowPolicyAnswer {
  policy: string;
  would_refuse: number;
  decisions: Record<string, number>;
  tenants: Record<string, number>;
  callers: { caller: string; tenant: string | null; would_refuse: number; overcount_at_most: number; explain: string }[];
}

/** GET /traffic/shadow: per shadow policy, how many requests it would have refused and whom (most first). */
function registerShadowTrafficRoute(app: Hono<AdminEnv>): void {
  app.get("/traffic/shadow", async (c) => {
    const query = validate(topRefusedQuerySchema, c.req.query(), "");
    if (!query.ok) return query.response;
    const minutesBack = query.value.minutes ?? DEFAULT_TOP_REFUSED_MINUTES;
    const sinceMs = Date.now() - minutesBack * MINUTE_MS;
    const fromMinuteMs = sinceMs - (sinceMs % MINUTE_MS);
    await flushThisIsolate(c);
    const db = database(c.env.DB);
    const [totals, callers] = await stored(() => Promise.all([shadowTotals(db, fromMinuteMs), shadowTopCallers(db, fromMinuteMs, SHADOW_TOP_CALLERS)]));
    const policies = new Map<string, ShadowPolicyAnswer>();
    const policyOf = (name: string): ShadowPolicyAnswer => {
      let p = policies.get(name);
      if (p === undefined) policies.set(name, (p = { policy: name, would_refuse: 0, decisions: {}, tenants: {}, callers: [] }));
      return p;
    };
    for (const row of totals) {
      const p = policyOf(row.policy);
      p.would_refuse += row.count;
      p.decisions[row.decision] = (p.decisions[row.decision] ?? 0) + row.count;
      p.tenants[row.tenant] = (p.tenants[row.tenant] ?? 0) + row.count;
    }
    for (const row of callers) {
      policyOf(row.policy).callers.push({ caller: row.caller, tenant: row.tenant, would_refuse: row.count, overcount_at_most: row.error, explain: `/_tollgate/admin/v1/callers/${encodeURIComponent(row.caller)}` });
    }
    return c.json({ minutes: minutesBack, since: new Date(sinceMs).toISOString(), policies: [...policies.values()].sort((a, b) => b.would_refuse - a.would_refuse || a.policy.localeCompare(b.policy)) });
  });
}

/** Writes what this isolate holds before a read. A failure leaves the counts held (the read shows what D1 has). */
async function flushThisIsolate(c: Context<AdminEnv>): Promise<void> {
  const runtime = c.get("runtime");
  const config = runtime.config;
  if (config === null || !config.traffic.enabled) return;
  await runtime.traffic.flushNow(database(c.env.DB), runtime.now(), trafficFlushOptionsFor(runtime, c.env, config.traffic.retentionMs));
}

export const DEFAULT_ALERTS_PAGE = 50;
export const MAX_ALERTS_PAGE = 200;

const alertsQuerySchema = z.strictObject({
  limit: limitParam(MAX_ALERTS_PAGE).optional(),
});

/** GET /alerts: the newest alerts with their delivery state and every attempt. */
export function registerAlertRoutes(app: Hono<AdminEnv>): void {
  app.get("/alerts", async (c) => {
    const query = validate(alertsQuerySchema, c.req.query(), "");
    if (!query.ok) return query.response;
    const rows = await stored(() => recentAlerts(database(c.env.DB), query.value.limit ?? DEFAULT_ALERTS_PAGE));
    return c.json({
      alerts: rows.map((row) => ({
        id: row.id,
        type: row.type,
        at: new Date(row.atMs).toISOString(),
        tenant: row.tenant,
        state: row.state,
        attempts: row.attemptList.map((a) => ({ attempt: a.attempt, at: new Date(a.atMs).toISOString(), outcome: a.outcome, status: a.status })),
        body: JSON.parse(row.body) as unknown,
      })),
    });
  });
}
