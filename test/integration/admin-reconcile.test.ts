// POST /usage/reconcile: metered bytes_stored (every month plus
// adjustments) against the quota object's committed bytes. Drift is made on
// purpose by removing or adding a usage_monthly row; a dry run reports it,
// apply appends one adjustment per drifting tenant (audited), and a second
// apply finds nothing.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { periodOf } from "../../src/db/usage-monthly";
import { problemOf, unique } from "../helpers";
import { AUDITOR_TOKEN, adminCall, createTenant, jsonOf, testConfig } from "./admin-helpers";
import { storeBytes } from "./admin-quota-helpers";

// Metering flushes within 2 ms here, so a drift is trusted almost at once; the `recent` tests set the default.
const CONFIG = testConfig({ usage: { flush_interval_s: 0.001 } });
const DEFAULT_FLUSH = testConfig();

interface Entry {
  tenant: string;
  status: string;
  metered_bytes: number;
  quota_bytes: number | null;
  drift_bytes: number | null;
}

interface Report {
  metric: string;
  apply: boolean;
  checked: number;
  drifting: number;
  tenants: Entry[];
  next_cursor: string | null;
}

async function meter(tenant: string, period: string, value: number): Promise<void> {
  await env.DB.prepare("insert into usage_monthly (tenant, period, metric, value) values (?, ?, 'bytes_stored', ?)").bind(tenant, period, value).run();
}

function reconcile(query: string, options: { token?: string; env?: Record<string, unknown>; config?: Record<string, unknown> } = {}): Promise<Response> {
  return adminCall("POST", `/usage/reconcile${query}`, options.config ?? CONFIG, options);
}

async function adjustments(tenant: string): Promise<{ period: string; metric: string; value: number; attribution: string }[]> {
  const { results } = await env.DB.prepare("select period, metric, value, attribution from usage_adjustments where tenant = ? order by id").bind(tenant).all<{ period: string; metric: string; value: number; attribution: string }>();
  return results;
}

/** A tenant whose quota object holds 600 bytes in 2 objects and whose metering agrees (500 last year, 100 this month). */
async function meteredTenant(prefix = "rc"): Promise<string> {
  const tenant = unique(prefix);
  await createTenant(CONFIG, tenant);
  await storeBytes(tenant, "a", 400);
  await storeBytes(tenant, "b", 200);
  await meter(tenant, "2020-06", 500);
  await meter(tenant, periodOf(Date.now()), 100);
  return tenant;
}

describe("reconciliation", () => {
  it("calls a drift younger than the flush interval recent, says how long to wait, and never applies it", async () => {
    const tenant = unique("rc-recent");
    await createTenant(DEFAULT_FLUSH, tenant);
    await storeBytes(tenant, "fresh", 300);
    const dry = await jsonOf<Report>(await reconcile(`?tenant=${tenant}`, { config: DEFAULT_FLUSH }), 200);
    expect(dry).toMatchObject({ checked: 1, drifting: 1, tenants: [{ tenant, status: "recent", metered_bytes: 0, quota_bytes: 300, drift_bytes: 300 }] });
    const waitS = (dry.tenants[0] as Entry & { wait_s: number }).wait_s;
    expect(waitS).toBeGreaterThan(55);
    expect(waitS).toBeLessThanOrEqual(65);
    const applied = await jsonOf<Report>(await reconcile(`?tenant=${tenant}&apply=true`, { config: DEFAULT_FLUSH }), 200);
    expect(applied.tenants).toMatchObject([{ tenant, status: "recent" }]);
    expect(await adjustments(tenant)).toEqual([]);
  });

  it("finds no drift while metering agrees with the quota object", async () => {
    const tenant = await meteredTenant();
    const report = await jsonOf<Report>(await reconcile(`?tenant=${tenant}`), 200);
    expect(report).toEqual({ metric: "bytes_stored", apply: false, checked: 1, drifting: 0, tenants: [], next_cursor: null });
  });

  it("reports a removed metering row, corrects it once with apply, and a second apply finds nothing", async () => {
    const tenant = await meteredTenant();
    await env.DB.prepare("delete from usage_monthly where tenant = ? and period = ?").bind(tenant, periodOf(Date.now())).run();

    const dry = await jsonOf<Report>(await reconcile(`?tenant=${tenant}`), 200);
    expect(dry).toMatchObject({ apply: false, checked: 1, drifting: 1, tenants: [{ tenant, status: "drift", metered_bytes: 500, quota_bytes: 600, drift_bytes: 100 }] });
    expect(await adjustments(tenant)).toEqual([]);

    const applied = await jsonOf<Report>(await reconcile(`?tenant=${tenant}&apply=true`), 200);
    expect(applied).toMatchObject({ apply: true, drifting: 1, tenants: [{ tenant, status: "adjusted", metered_bytes: 500, quota_bytes: 600, drift_bytes: 100 }] });
    const period = periodOf(Date.now());
    expect(await adjustments(tenant)).toEqual([{ period, metric: "bytes_stored", value: 100, attribution: "reconciliation" }]);

    const again = await jsonOf<Report>(await reconcile(`?tenant=${tenant}&apply=true`), 200);
    expect(again).toMatchObject({ checked: 1, drifting: 0, tenants: [] });
    expect(await adjustments(tenant)).toHaveLength(1);
    // The metering rows themselves are never rewritten.
    const rows = await env.DB.prepare("select period, value from usage_monthly where tenant = ? and metric = 'bytes_stored'").bind(tenant).all();
    expect(rows.results).toEqual([{ period: "2020-06", value: 500 }]);

    const { events } = await jsonOf<{ events: { kind: string; actor: string; detail: Record<string, unknown> }[] }>(await adminCall("GET", `/audit?tenant=${tenant}&kind=usage_reconciled`, CONFIG), 200);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ actor: "admin", detail: { metric: "bytes_stored", period, metered_bytes: 500, quota_bytes: 600, adjustment: 100, attribution: "reconciliation" } });

    // The export's figure for this month includes the adjustment.
    const csv = await (await adminCall("GET", `/usage/export?tenant=${tenant}&from=2020-06&to=${period}`, CONFIG)).text();
    expect(csv).toContain(`"${tenant}","${period}","bytes_stored",100,"provisional"\r\n`);
  });

  it("corrects an extra metering row downwards", async () => {
    const tenant = await meteredTenant();
    await meter(tenant, "2021-01", 250);
    const applied = await jsonOf<Report>(await reconcile(`?tenant=${tenant}&apply=true`), 200);
    expect(applied.tenants).toEqual([{ tenant, status: "adjusted", metered_bytes: 850, quota_bytes: 600, drift_bytes: -250 }]);
    expect((await adjustments(tenant)).map((a) => a.value)).toEqual([-250]);
    expect((await jsonOf<Report>(await reconcile(`?tenant=${tenant}&apply=true`), 200)).tenants).toEqual([]);
  });

  it("pages through tenants with next_cursor, correcting each drifting one", async () => {
    const prefix = unique("rcp");
    const tenants = [await meteredTenant(`${prefix}-a`), await meteredTenant(`${prefix}-b`), await meteredTenant(`${prefix}-c`)];
    await meter(tenants[0]!, "2021-02", 1);
    await meter(tenants[2]!, "2021-02", 3);
    const seen: Entry[] = [];
    let cursor = prefix;
    let checked = 0;
    for (let pages = 0; pages < 3; pages++) {
      const page = await jsonOf<Report>(await reconcile(`?apply=true&limit=1&cursor=${cursor}`), 200);
      checked += page.checked;
      seen.push(...page.tenants);
      // The last of mine may also be the last tenant of all: then no cursor follows.
      if (page.next_cursor !== null || pages < 2) expect(page.next_cursor).toBe(tenants[pages]);
      cursor = page.next_cursor ?? "";
    }
    expect(checked).toBe(3);
    expect(seen.map((e) => [e.tenant, e.status, e.drift_bytes])).toEqual([
      [tenants[0], "adjusted", -1],
      [tenants[2], "adjusted", -3],
    ]);
  });

  it("reports a tenant whose quota object does not answer as unavailable and adjusts nothing for it", async () => {
    const tenant = await meteredTenant();
    await meter(tenant, "2021-03", 7);
    const broken = {
      idFromName: (name: string) => env.TENANT_QUOTA.idFromName(name),
      get: () => ({ usage: async () => Promise.reject(new Error("simulated outage")) }),
    };
    const report = await jsonOf<Report>(await reconcile(`?tenant=${tenant}&apply=true`, { env: { TENANT_QUOTA: broken } }), 200);
    expect(report).toMatchObject({ checked: 1, drifting: 0, tenants: [{ tenant, status: "unavailable", metered_bytes: 607, quota_bytes: null, drift_bytes: null }] });
    expect(await adjustments(tenant)).toEqual([]);
  });

  it("refuses bad parameters naming them, and the auditor token", async () => {
    for (const [query, field] of [
      ["?apply=yes", "apply"],
      ["?limit=0", "limit"],
      ["?limit=201", "limit"],
      ["?tenant=Bad", "tenant"],
      ["?cursor=-x", "cursor"],
      ["?dry=1", "dry"],
    ] as const) {
      const response = await reconcile(query);
      expect(response.status).toBe(400);
      expect(await problemOf(response)).toMatchObject({ code: "invalid_request", field });
    }
    const tenant = await meteredTenant();
    await meter(tenant, "2021-04", 9);
    const refused = await reconcile(`?tenant=${tenant}&apply=true`, { token: AUDITOR_TOKEN });
    expect(refused.status).toBe(403);
    expect((await problemOf(refused)).code).toBe("admin_forbidden");
    expect(await adjustments(tenant)).toEqual([]);
  });
});
