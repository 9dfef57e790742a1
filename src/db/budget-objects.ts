// The quota objects that hold budgets, busiest first: which objects GET
// /global/accuracy asks about their leased budgets. A tenant's object holds
// its own budgets and its keys'; an org's, the org's. Busyness is the
// requests the traffic rollups counted for the tenant (an org: its tenants)
// since a minute; with traffic off every object counts 0 and they come in
// name order.
import { sql } from "drizzle-orm";
import type { Db } from "./client";
import { apiKeys, orgs, tenants, trafficMinutely } from "./schema";

/** Object names (`tenant:<slug>`, `org:<slug>`) of owners with budgets, by requests since `sinceMinuteMs`, at most `limit`. */
export async function busiestBudgetObjects(db: Db, sinceMinuteMs: number, limit: number): Promise<{ object: string; requests: number }[]> {
  const rows = await db.all<{ object: string; requests: number }>(sql`
    SELECT 'tenant:' || ${tenants.slug} AS object,
           COALESCE((SELECT SUM(${trafficMinutely.count}) FROM ${trafficMinutely} WHERE ${trafficMinutely.tenant} = ${tenants.slug} AND ${trafficMinutely.minuteMs} >= ${sinceMinuteMs}), 0) AS requests
    FROM ${tenants}
    WHERE ${tenants.budgets} IS NOT NULL OR EXISTS (SELECT 1 FROM ${apiKeys} WHERE ${apiKeys.tenant} = ${tenants.slug} AND ${apiKeys.budgets} IS NOT NULL)
    UNION ALL
    SELECT 'org:' || ${orgs.slug} AS object,
           COALESCE((SELECT SUM(m.count) FROM ${trafficMinutely} m JOIN ${tenants} t ON t.slug = m.tenant WHERE t.org = ${orgs.slug} AND m.minute_ms >= ${sinceMinuteMs}), 0) AS requests
    FROM ${orgs}
    WHERE ${orgs.budgets} IS NOT NULL
    ORDER BY requests DESC, object
    LIMIT ${limit}`);
  return rows.map((r) => ({ object: r.object, requests: Number(r.requests) }));
}
