// Orgs through the Worker (issue 17): tenants of an org upload
// with their own keys, and each upload must fit the tenant's and the org's
// hard quotas — the strictest wins; the org's refusal names it; soft warnings
// gain the `org:<org>` part; many concurrent uploads over several tenants of
// one org never pass the org's hard quota (checked against the TenantQuota
// and OrgQuota objects at the end); a tenant moved into an org brings its
// stored bytes at once; an org that tenants name cannot be deleted.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, describe, expect, it } from "vitest";
import { callGateway, gatewayRequest, originLog, problemOf, unique } from "../helpers";
import { adminCall, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

const CONFIG = testConfig({
  routes: [
    { method: "PUT", path: "/objects/:object", charges: { upload: 1 }, quota: "store" },
    { method: "DELETE", path: "/objects/:object", quota: "release" },
  ],
  categories: {
    admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } },
    request: { limits: { key: [{ count: 10_000, window_s: 1 }], tenant: [{ count: 10_000, window_s: 1 }] } },
  },
});

const tenantsUsed: string[] = [];
const orgsUsed: string[] = [];

// Alarms (reservation expiry, the org's pulls) outlive the file's isolated storage.
afterAll(async () => {
  for (const tenant of tenantsUsed) await runInDurableObject(tenantQuota(tenant), (_, state) => state.storage.deleteAlarm());
  for (const org of orgsUsed) await runInDurableObject(orgQuota(org), (_, state) => state.storage.deleteAlarm());
});

function tenantQuota(tenant: string) {
  return env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant));
}

function orgQuota(org: string) {
  return env.ORG_QUOTA.get(env.ORG_QUOTA.idFromName(org));
}

async function createOrg(quota: Record<string, unknown>): Promise<string> {
  const org = unique("org");
  orgsUsed.push(org);
  await jsonOf(await adminCall("PUT", `/orgs/${org}`, CONFIG, { body: { quota } }), 201);
  return org;
}

/** A tenant (in `org` unless null) with `quota`, and a key of it. */
async function member(org: string | null, quota: Record<string, unknown> = {}): Promise<{ tenant: string; key: string }> {
  const tenant = unique("member");
  tenantsUsed.push(tenant);
  await createTenant(CONFIG, tenant, org === null ? { quota } : { quota, org });
  return { tenant, key: (await mintKey(CONFIG, tenant)).key };
}

function upload(key: string, object: string, bytes: number, tag?: string): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, "content-length": String(bytes) };
  if (tag !== undefined) headers["x-test-tag"] = tag;
  return callGateway(gatewayRequest(`/objects/${object}`, { method: "PUT", ip: "198.51.100.60", headers, body: new Uint8Array(bytes) }), { TOLLGATE: CONFIG }, { settle: true });
}

describe("an upload must fit the tenant's and the org's hard quotas", () => {
  it("refuses by the tenant's quota when it is the stricter, without naming the org", async () => {
    const org = await createOrg({ bytes: { hard: 10_000 } });
    const { tenant, key } = await member(org, { bytes: { hard: 500 } });
    expect((await upload(key, "a", 400)).status).toBe(200);
    const refused = await upload(key, "b", 200);
    expect(refused.status).toBe(403);
    const body = await problemOf(refused);
    expect(body).toMatchObject({ code: "quota_exceeded", kind: "bytes", quota: 500, usage: 400, requested: 200 });
    expect(body).not.toHaveProperty("org");
    expect(await tenantQuota(tenant).usage()).toMatchObject({ bytes: 400, objects: 1, reserved_bytes: 0 });
    expect(await orgQuota(org).usage()).toMatchObject({ bytes: 400, objects: 1, reserved_bytes: 0 });
  });

  it("refuses by the org's quota when its tenants together would pass it: 403 naming the org, no Retry-After, nothing forwarded, the tenant's reservation freed", async () => {
    const org = await createOrg({ bytes: { hard: 1000 } });
    const a = await member(org, { bytes: { hard: 10_000 } });
    const b = await member(org);
    expect((await upload(a.key, "a1", 600)).status).toBe(200);
    const tag = unique("org-refused");
    const refused = await upload(b.key, "b1", 500, tag);
    expect(refused.status).toBe(403);
    expect(refused.headers.get("retry-after")).toBeNull();
    const body = await problemOf(refused);
    expect(body).toMatchObject({ code: "quota_exceeded", kind: "bytes", quota: 1000, usage: 600, requested: 500, org });
    expect(body.detail).toBe(`This upload of 500 bytes would pass the org ${org}'s hard bytes quota of 1000 (in use: 600).`);
    expect(await originLog(tag)).toHaveLength(0);
    expect(await tenantQuota(b.tenant).usage()).toMatchObject({ bytes: 0, objects: 0, reserved_bytes: 0, reservations: 0 });
    // What still fits the org is admitted, from either tenant.
    expect((await upload(b.key, "b2", 400)).status).toBe(200);
    expect((await upload(a.key, "a2", 1)).status).toBe(403);
    expect(await orgQuota(org).usage()).toMatchObject({ bytes: 1000, objects: 2, reserved_bytes: 0 });
  });

  it("counts objects at the org too, and only the growth of an overwrite", async () => {
    const org = await createOrg({ objects: { hard: 2 }, bytes: { hard: 1000 } });
    const a = await member(org);
    const b = await member(org);
    expect((await upload(a.key, "x", 300)).status).toBe(200);
    expect((await upload(b.key, "y", 300)).status).toBe(200);
    const third = await upload(b.key, "z", 1);
    expect(third.status).toBe(403);
    expect(await problemOf(third)).toMatchObject({ code: "quota_exceeded", kind: "objects", quota: 2, usage: 2, requested: 1, org });
    // An overwrite adds no object and asks the org only for its growth: 300 → 700 fits 1000 exactly.
    expect((await upload(a.key, "x", 700)).status).toBe(200);
    expect(await orgQuota(org).usage()).toMatchObject({ bytes: 1000, objects: 2 });
  });
});

describe("soft quotas", () => {
  it("adds the org's part to Tollgate-Quota-Warning once the org's usage reaches its soft quota, after the tenant's own", async () => {
    const org = await createOrg({ bytes: { soft: 1500, hard: 2000 } });
    const a = await member(org, { bytes: { soft: 900, hard: 1000 } });
    const b = await member(org);
    const first = await upload(a.key, "a1", 950);
    expect(first.status).toBe(200);
    expect(first.headers.get("tollgate-quota-warning")).toBe("bytes 950/1000");
    const second = await upload(b.key, "b1", 600);
    expect(second.status).toBe(200);
    expect(second.headers.get("tollgate-quota-warning")).toBe(`org:${org} bytes 1550/2000`);
    const third = await upload(a.key, "a2", 10);
    expect(third.headers.get("tollgate-quota-warning")).toBe(`bytes 960/1000, org:${org} bytes 1560/2000`);
  });
});

describe("concurrent uploads across an org's tenants", () => {
  const TENANTS = 5;
  const UPLOADS_PER_TENANT = 12;
  const ORG_HARD_BYTES = 3000;
  /** Sizes 50 to 250 bytes, the same for every run. */
  const sizeOf = (t: number, i: number) => 50 + ((t * 37 + i * 53) % 201);

  it(`never pass the org's hard quota: ${TENANTS * UPLOADS_PER_TENANT} uploads at once over ${TENANTS} tenants, then the room left fills exactly`, async () => {
    const org = await createOrg({ bytes: { hard: ORG_HARD_BYTES } });
    // Two tenants are stricter than their share of the org; the others only have the org's quota.
    const tenantHard = (t: number) => (t < 2 ? 700 : null);
    const members = [];
    for (let t = 0; t < TENANTS; t += 1) {
      const hard = tenantHard(t);
      members.push(await member(org, hard === null ? {} : { bytes: { hard } }));
    }
    const tag = unique("race");
    const attempts = members.flatMap((m, t) => Array.from({ length: UPLOADS_PER_TENANT }, (_, i) => ({ t, key: m.key, object: `o${i}`, bytes: sizeOf(t, i) })));
    const responses = await Promise.all(attempts.map((a) => upload(a.key, a.object, a.bytes, tag)));

    const outcomes = { admitted: 0, byTenant: 0, byOrg: 0 };
    const admittedBytes = Array.from({ length: TENANTS }, () => 0);
    for (const [i, res] of responses.entries()) {
      const attempt = attempts[i]!;
      if (res.status === 200) {
        outcomes.admitted += 1;
        admittedBytes[attempt.t]! += attempt.bytes;
        continue;
      }
      expect(res.status).toBe(403);
      const body = await problemOf(res);
      expect(body.code).toBe("quota_exceeded");
      if (body.org === org) outcomes.byOrg += 1;
      else outcomes.byTenant += 1;
    }
    // The run contended for the org's quota and got through both ways.
    expect(outcomes.byOrg).toBeGreaterThan(0);
    expect(outcomes.admitted).toBeGreaterThan(5);
    expect(await originLog(tag)).toHaveLength(outcomes.admitted);

    const usages = await Promise.all(members.map((m) => tenantQuota(m.tenant).usage()));
    usages.forEach((u, t) => {
      expect(u).toMatchObject({ bytes: admittedBytes[t], reserved_bytes: 0, reservations: 0 });
      const hard = tenantHard(t);
      if (hard !== null) expect(u.bytes).toBeLessThanOrEqual(hard);
    });
    const sum = usages.reduce((total, u) => total + u.bytes, 0);
    expect(sum).toBeLessThanOrEqual(ORG_HARD_BYTES);
    expect(await orgQuota(org).usage()).toEqual({ bytes: sum, objects: outcomes.admitted, reserved_bytes: 0, reserved_objects: 0, members: TENANTS });

    // Nothing is left held: the room that is left fills to the byte, and one byte more is the org's refusal.
    const roomy = members[TENANTS - 1]!;
    const left = ORG_HARD_BYTES - sum;
    if (left > 0) expect((await upload(roomy.key, "fill", left)).status).toBe(200);
    const over = await upload(roomy.key, "one-more", 1);
    expect(over.status).toBe(403);
    expect(await problemOf(over)).toMatchObject({ org, quota: ORG_HARD_BYTES, usage: ORG_HARD_BYTES, requested: 1 });
  });
});

describe("membership", () => {
  it("counts the bytes a tenant already stores as soon as it moves into an org", async () => {
    const { tenant, key } = await member(null);
    expect((await upload(key, "before-1", 500)).status).toBe(200);
    expect((await upload(key, "before-2", 200)).status).toBe(200);
    const org = await createOrg({ bytes: { hard: 1000 } });
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}/limits`, CONFIG, { body: { org } }), 200);

    expect(await orgQuota(org).usage()).toMatchObject({ bytes: 700, objects: 2, members: 1 });
    expect(await jsonOf(await adminCall("GET", `/orgs/${org}`, CONFIG), 200)).toMatchObject({ tenants: [tenant], usage: { bytes: 700, objects: 2 } });
    const refused = await upload(key, "after", 400);
    expect(refused.status).toBe(403);
    expect(await problemOf(refused)).toMatchObject({ org, usage: 700, requested: 400 });
    const other = await member(org);
    expect((await upload(other.key, "fits", 300)).status).toBe(200);
    expect((await upload(other.key, "does-not", 1)).status).toBe(403);
  });

  it("refuses to delete an org its tenants name (409 conflict) and keeps enforcing it; once they left, deletes it and stops counting", async () => {
    const org = await createOrg({ bytes: { hard: 100 } });
    const a = await member(org);
    const b = await member(org);
    expect((await upload(a.key, "a", 100)).status).toBe(200);

    const refused = await adminCall("DELETE", `/orgs/${org}`, CONFIG);
    expect(refused.status).toBe(409);
    expect(await problemOf(refused)).toMatchObject({ code: "conflict", tenants: 2 });
    expect((await upload(b.key, "b", 1)).status).toBe(403);

    for (const m of [a, b]) await jsonOf(await adminCall("PUT", `/tenants/${m.tenant}/limits`, CONFIG, { body: { org: null } }), 200);
    expect(await orgQuota(org).usage()).toMatchObject({ bytes: 0, members: 0 });
    expect((await upload(b.key, "b", 1)).status).toBe(200);
    expect(await jsonOf(await adminCall("DELETE", `/orgs/${org}`, CONFIG), 200)).toEqual({ org, deleted: true });
    expect((await adminCall("GET", `/orgs/${org}`, CONFIG)).status).toBe(404);
  });
});
