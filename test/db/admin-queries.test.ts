// The query helpers the admin API and the gateway's snapshots use, against
// real D1: orgs and a key's org, overrides and blocks with expiry, the
// export's merged pages, reconciliation's conditional append.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { insertAuditEventWhere } from "../../src/db/audit";
import { loadActiveBlocks, putBlock } from "../../src/db/blocks";
import { database } from "../../src/db/client";
import { findKeyByDigest, insertKey } from "../../src/db/keys";
import { deleteOrgIfEmpty, listOrgs, orgIsGone, putOrg } from "../../src/db/orgs";
import { loadAllOverrides, putOverride } from "../../src/db/overrides";
import { putTenant } from "../../src/db/tenants";
import { appendAdjustmentIfUnchanged, meteredTotals, RECONCILIATION } from "../../src/db/usage-adjustments";
import { usageExportPage, type UsageExportRow } from "../../src/db/usage-export";
import { addMonthlyUsage } from "../../src/db/usage-monthly";
import { unique } from "../helpers";

const db = database(env.DB);

describe("orgs", () => {
  it("gives a key's lookup its tenant's org and the org's quota, and null for a tenant with none", async () => {
    const org = unique("org");
    const [inOrg, alone] = [unique("t"), unique("t")];
    const [d1, d2] = [unique("digest"), unique("digest")];
    await db.batch([
      putOrg(db, { slug: org, quota: '{"bytes":{"hard":500}}', createdAt: 1, updatedAt: 1 }),
      putTenant(db, { slug: inOrg, limits: "{}", quota: "{}", org, createdAt: 1, updatedAt: 1 }),
      putTenant(db, { slug: alone, limits: "{}", quota: "{}", createdAt: 1, updatedAt: 1 }),
      insertKey(db, { id: unique("k").slice(-12), tenant: inOrg, name: "n", digest: d1, prefix: "p", createdAt: 1, expiresAt: null, limits: null }),
      insertKey(db, { id: unique("k").slice(-12), tenant: alone, name: "n", digest: d2, prefix: "p", createdAt: 1, expiresAt: null, limits: null }),
    ]);
    expect(await findKeyByDigest(db, d1)).toMatchObject({ tenant: inOrg, org, orgQuota: '{"bytes":{"hard":500}}' });
    expect(await findKeyByDigest(db, d2)).toMatchObject({ tenant: alone, org: null, orgQuota: null });
  });

  it("refuses a tenant naming a missing org (the foreign key), and deletes an org only while no tenant names it", async () => {
    const org = unique("org");
    await expect(putTenant(db, { slug: unique("t"), limits: "{}", quota: "{}", org: unique("ghost"), createdAt: 1, updatedAt: 1 }).run()).rejects.toThrow();
    const tenant = unique("t");
    await db.batch([putOrg(db, { slug: org, quota: "{}", createdAt: 1, updatedAt: 1 }), putTenant(db, { slug: tenant, limits: "{}", quota: "{}", org, createdAt: 1, updatedAt: 1 })]);
    const event = { atMs: 1, kind: "org_deleted", actor: "admin", tenant: null, subject: `org:${org}`, detail: {} };
    const [kept, notAudited] = await db.batch([deleteOrgIfEmpty(db, org), insertAuditEventWhere(db, event, orgIsGone(org))]);
    expect(kept.meta.changes).toBe(0);
    expect(notAudited.meta.changes).toBe(0);
    expect((await listOrgs(db, { afterSlug: org.slice(0, -1), limit: 50 })).find((o) => o.slug === org)).toMatchObject({ tenantCount: 1 });
    await putTenant(db, { slug: tenant, limits: "{}", quota: "{}", org: null, createdAt: 1, updatedAt: 2 }).run();
    const [gone, audited] = await db.batch([deleteOrgIfEmpty(db, org), insertAuditEventWhere(db, event, orgIsGone(org))]);
    expect(gone.meta.changes).toBe(1);
    expect(audited.meta.changes).toBe(1);
  });
});

describe("expiring overrides and blocks", () => {
  it("loads every override with its expiry, or only those still active at nowMs", async () => {
    const nowMs = 1_900_000_000_000;
    const [forever, later, atNow, past] = ["forever", "later", "atnow", "past"].map((n) => `jwt:${unique(n)}`) as [string, string, string, string];
    await db.batch([
      putOverride(db, { callerKey: forever, limits: "{}", updatedAt: 1 }),
      putOverride(db, { callerKey: later, limits: "{}", updatedAt: 1, expiresAt: nowMs + 1, reason: "r" }),
      putOverride(db, { callerKey: atNow, limits: "{}", updatedAt: 1, expiresAt: nowMs }),
      putOverride(db, { callerKey: past, limits: "{}", updatedAt: 1, expiresAt: nowMs - 1 }),
    ]);
    const mine = (rows: { callerKey: string }[]) => rows.map((r) => r.callerKey).filter((k) => [forever, later, atNow, past].includes(k)).sort();
    const all = await loadAllOverrides(db);
    expect(mine(all)).toEqual([forever, later, atNow, past].sort());
    expect(all.find((r) => r.callerKey === later)).toMatchObject({ expiresAt: nowMs + 1, reason: "r" });
    expect(mine(await loadAllOverrides(db, nowMs))).toEqual([forever, later].sort());
  });

  it("loads the blocks active at nowMs, each with its expiry", async () => {
    const nowMs = 1_900_000_000_000;
    const targets = ["forever", "later", "atnow", "past"].map((n) => `tenant:${unique(n)}`) as [string, string, string, string];
    const expiries = [null, nowMs + 1, nowMs, nowMs - 1];
    await db.batch(targets.map((target, i) => putBlock(db, { target, expiresAt: expiries[i] ?? null, reason: null, createdAt: 1, updatedAt: 1 })) as [ReturnType<typeof putBlock>, ...ReturnType<typeof putBlock>[]]);
    const active = (await loadActiveBlocks(db, nowMs)).filter((b) => targets.includes(b.target));
    expect(active.map((b) => [b.target, b.expiresAt]).sort()).toEqual([
      [targets[0], null],
      [targets[1], nowMs + 1],
    ].sort());
  });
});

describe("the export's pages", () => {
  it("sums a key's metered row and adjustments even when a page ends between them", async () => {
    const t = unique("pg");
    const period = "1999-07";
    await db.batch([
      addMonthlyUsage(db, `${t}-1`, period, "bytes_stored", 1),
      addMonthlyUsage(db, `${t}-2`, period, "bytes_stored", 20),
      addMonthlyUsage(db, `${t}-4`, period, "bytes_stored", 4000),
    ]);
    const adjust = (tenant: string, value: number) =>
      env.DB.prepare("insert into usage_adjustments (tenant, period, metric, value, attribution, created_at) values (?, ?, 'bytes_stored', ?, 'reconciliation', 1)").bind(tenant, period, value).run();
    await adjust(`${t}-2`, 2);
    await adjust(`${t}-2`, 3);
    await adjust(`${t}-3`, 300);
    for (const limit of [3, 4, 5, 100]) {
      const rows: UsageExportRow[] = [];
      let after;
      for (let pages = 0; pages < 20; pages++) {
        const page = await usageExportPage(db, { from: period, to: period, tenant: undefined, after, limit });
        rows.push(...page.rows.filter((r) => r.tenant.startsWith(t)));
        if (page.next === null) break;
        after = page.next;
      }
      expect(rows.map((r) => [r.tenant, r.value]), `limit ${limit}`).toEqual([
        [`${t}-1`, 1],
        [`${t}-2`, 25],
        [`${t}-3`, 300],
        [`${t}-4`, 4000],
      ]);
    }
  });
});

describe("reconciliation's append", () => {
  it("sums every month and adjustment of the metric, and appends only while the total is unchanged", async () => {
    const tenant = unique("rc");
    await putTenant(db, { slug: tenant, limits: "{}", quota: "{}", createdAt: 1, updatedAt: 1 }).run();
    await db.batch([
      addMonthlyUsage(db, tenant, "2020-01", "bytes_stored", 100),
      addMonthlyUsage(db, tenant, "2020-02", "bytes_stored", -30),
      addMonthlyUsage(db, tenant, "2020-02", "requests", 999),
    ]);
    const total = async () => (await meteredTotals(db, { metric: "bytes_stored", tenant, limit: 1 }))[0]?.metered;
    expect(await total()).toBe(70);
    const adjustment = { tenant, period: "2020-03", metric: "bytes_stored", value: 5, attribution: RECONCILIATION, createdAtMs: 1 };
    const [stale] = await db.batch([appendAdjustmentIfUnchanged(db, adjustment, 69)]);
    expect(stale.meta.changes).toBe(0);
    const [written] = await db.batch([appendAdjustmentIfUnchanged(db, adjustment, 70)]);
    expect(written.meta.changes).toBe(1);
    expect(await total()).toBe(75);
    const [again] = await db.batch([appendAdjustmentIfUnchanged(db, adjustment, 70)]);
    expect(again.meta.changes).toBe(0);
    expect(await total()).toBe(75);
  });
});
