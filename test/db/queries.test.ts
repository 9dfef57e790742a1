import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { insertAuditEvent, listAuditEvents } from "../../src/db/audit";
import { database } from "../../src/db/client";
import { addKeyUsage, countKeysOfTenant, deleteKeysOfTenant, findKeyByDigest, getKey, insertKey, listKeys, revokeKey } from "../../src/db/keys";
import { deleteKeyOverridesOfTenant, getOverride, loadAllOverrides, putOverride } from "../../src/db/overrides";
import { deleteTenant, getTenant, putTenant } from "../../src/db/tenants";
import { addMonthlyUsage, monthlyUsage, periodOf } from "../../src/db/usage-monthly";
import { unique } from "../helpers";

const db = database(env.DB);

async function tenantWithKey(limits = '{"request":{"key":[{"count":5,"window_s":1}]}}') {
  const slug = unique("t");
  const id = unique("k").replace(/[^0-9a-z]/g, "").slice(-12);
  const digest = unique("digest");
  await db.batch([
    putTenant(db, { slug, limits, quota: '{"bytes":{"hard":100}}', createdAt: 1, updatedAt: 1 }),
    insertKey(db, { id, tenant: slug, name: "n", digest, prefix: "tg_x", createdAt: 2, expiresAt: null, limits: null }),
  ]);
  return { slug, id, digest };
}

describe("keys", () => {
  it("finds a key by digest joined with its tenant's limits and quota", async () => {
    const { slug, id, digest } = await tenantWithKey();
    expect(await findKeyByDigest(db, digest)).toEqual({
      id,
      digest,
      tenant: slug,
      expiresAt: null,
      revokedAt: null,
      keyLimits: null,
      tenantLimits: '{"request":{"key":[{"count":5,"window_s":1}]}}',
      quota: '{"bytes":{"hard":100}}',
      org: null,
      orgQuota: null,
      keyBudgets: null,
      tenantBudgets: null,
      orgBudgets: null,
    });
    expect(await findKeyByDigest(db, unique("no-such-digest"))).toBeNull();
  });

  it("finds no key once its tenant is deleted, and the tenant's keys go with it", async () => {
    const { slug, digest } = await tenantWithKey();
    await db.batch([deleteKeysOfTenant(db, slug), deleteTenant(db, slug)]);
    expect(await findKeyByDigest(db, digest)).toBeNull();
    expect(await countKeysOfTenant(db, slug)).toBe(0);
    expect(await getTenant(db, slug)).toBeNull();
  });

  it("keeps the first revocation time", async () => {
    const { id } = await tenantWithKey();
    await revokeKey(db, id, 100).run();
    await revokeKey(db, id, 200).run();
    expect((await getKey(db, id))?.revokedAt).toBe(100);
  });

  it("adds flushed usage, moving the last use only forward", async () => {
    const { slug, id } = await tenantWithKey();
    await addKeyUsage(db, { id, count: 3, lastUsedAtMs: 5_000, lastUsedFrom: "192.0.2.1" }).run();
    // A flush from another isolate with an older last use arrives late.
    await addKeyUsage(db, { id, count: 2, lastUsedAtMs: 4_000, lastUsedFrom: "192.0.2.2" }).run();
    const [row] = await listKeys(db, slug);
    expect(row).toMatchObject({ useCount: 5, lastUsedAt: 5_000, lastUsedFrom: "192.0.2.1" });
    expect(JSON.stringify(row)).not.toContain("digest");
  });
});

describe("overrides", () => {
  it("replaces an override in place and loads the whole table", async () => {
    const callerKey = `ip:${unique("addr")}`;
    await putOverride(db, { callerKey, limits: '{"request":[]}', updatedAt: 1 }).run();
    await putOverride(db, { callerKey, limits: '{"request":[{"count":1,"window_s":1}]}', updatedAt: 2 }).run();
    expect(await getOverride(db, callerKey)).toEqual({ callerKey, limits: '{"request":[{"count":1,"window_s":1}]}', updatedAt: 2, expiresAt: null, reason: null });
    expect((await loadAllOverrides(db)).filter((r) => r.callerKey === callerKey)).toHaveLength(1);
  });

  it("deletes the overrides of a tenant's keys and nothing else", async () => {
    const { slug, id } = await tenantWithKey();
    const other = await tenantWithKey();
    await putOverride(db, { callerKey: `key:${id}`, limits: "{}", updatedAt: 1 }).run();
    await putOverride(db, { callerKey: `key:${other.id}`, limits: "{}", updatedAt: 1 }).run();
    await deleteKeyOverridesOfTenant(db, slug).run();
    expect(await getOverride(db, `key:${id}`)).toBeNull();
    expect(await getOverride(db, `key:${other.id}`)).not.toBeNull();
  });
});

describe("usage_monthly", () => {
  it("adds to a tenant's monthly metric and reads 0 when nothing was recorded", async () => {
    const tenant = unique("t");
    const period = periodOf(Date.UTC(2031, 0, 31, 23, 59));
    expect(period).toBe("2031-01");
    expect(await monthlyUsage(db, tenant, period, "requests")).toBe(0);
    await addMonthlyUsage(db, tenant, period, "requests", 3).run();
    await addMonthlyUsage(db, tenant, period, "requests", 4).run();
    expect(await monthlyUsage(db, tenant, period, "requests")).toBe(7);
    expect(await monthlyUsage(db, tenant, "2031-02", "requests")).toBe(0);
  });
});

describe("audit_events", () => {
  it("lists newest first, filtered and paged by id", async () => {
    const tenant = unique("t");
    for (let i = 0; i < 5; i++) {
      await insertAuditEvent(db, { atMs: 1_000 + i, kind: i % 2 === 0 ? "even_kind" : "odd_kind", actor: "admin", tenant, subject: String(i), detail: { i } }).run();
    }
    const all = await listAuditEvents(db, { tenant, limit: 10 });
    expect(all.map((e) => e.subject)).toEqual(["4", "3", "2", "1", "0"]);
    const even = await listAuditEvents(db, { tenant, kind: "even_kind", limit: 10 });
    expect(even.map((e) => e.subject)).toEqual(["4", "2", "0"]);
    const firstPage = await listAuditEvents(db, { tenant, limit: 2 });
    const secondPage = await listAuditEvents(db, { tenant, limit: 2, beforeId: firstPage[1]?.id });
    expect(secondPage.map((e) => e.subject)).toEqual(["2", "1"]);
    const since = await listAuditEvents(db, { tenant, sinceMs: 1_003, limit: 10 });
    expect(since.map((e) => e.subject)).toEqual(["4", "3"]);
    expect(JSON.parse(all[0]?.detail ?? "")).toEqual({ i: 4 });
  });
});
