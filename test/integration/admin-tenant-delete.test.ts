// DELETE /tenants/{t} empties the tenant's quota object (issue 10
// item 4) BEFORE it deletes the D1 rows: when the object cannot be emptied
// the delete fails with 503 quota_unavailable and leaves the tenant whole, so
// the same call can be retried. The quota objects here are stand-ins that
// record the purge (the real RPC lands with the quota object's own branch).
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { problemOf, unique } from "../helpers";
import { adminCall, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";
import { quotaUsage, storeBytes } from "./admin-quota-helpers";

const CONFIG = testConfig();

interface PurgeRecord {
  tenant: string;
  /** Whether the tenant's D1 row was still there when the purge ran. */
  tenantRowPresent: boolean;
}

/** TENANT_QUOTA whose stubs' purge() records its call, checks D1, and answers `result` (or throws `failure`). */
function purgingQuota(options: { result?: { bytes: number; objects: number }; failure?: Error; getThrows?: boolean }): { ns: unknown; purges: PurgeRecord[] } {
  const purges: PurgeRecord[] = [];
  const names = new Map<string, string>();
  const ns = {
    idFromName: (name: string) => {
      const id = env.TENANT_QUOTA.idFromName(name);
      names.set(id.toString(), name);
      return id;
    },
    get: (id: DurableObjectId) => {
      if (options.getThrows === true) throw new Error("simulated: no such namespace");
      const tenant = names.get(id.toString()) ?? "?";
      return {
        purge: async () => {
          const row = await env.DB.prepare("select slug from tenants where slug = ?").bind(tenant).first();
          purges.push({ tenant, tenantRowPresent: row !== null });
          if (options.failure !== undefined) throw options.failure;
          return options.result ?? { bytes: 0, objects: 0 };
        },
      };
    },
  };
  return { ns, purges };
}

async function auditKinds(tenant: string): Promise<{ kind: string; detail: Record<string, unknown> }[]> {
  return (await jsonOf<{ events: { kind: string; detail: Record<string, unknown> }[] }>(await adminCall("GET", `/audit?tenant=${tenant}`, CONFIG), 200)).events;
}

describe("deleting a tenant empties its quota object first", () => {
  it("purges while the tenant still exists, then deletes it, recording what was purged", async () => {
    const tenant = unique("purge");
    await createTenant(CONFIG, tenant);
    await mintKey(CONFIG, tenant);
    const quota = purgingQuota({ result: { bytes: 600, objects: 2 } });
    expect(await jsonOf(await adminCall("DELETE", `/tenants/${tenant}`, CONFIG, { env: { TENANT_QUOTA: quota.ns } }), 200)).toEqual({ tenant, deleted: true, keys_deleted: 1 });
    expect(quota.purges).toEqual([{ tenant, tenantRowPresent: true }]);
    const [deleted] = await auditKinds(tenant);
    expect(deleted).toMatchObject({ kind: "tenant_deleted", detail: { keys_deleted: 1, purged: { bytes: 600, objects: 2 } } });
  });

  it("answers 503 quota_unavailable and deletes nothing when the purge fails; a retry deletes", async () => {
    const tenant = unique("broken");
    await createTenant(CONFIG, tenant, { quota: { bytes: { hard: 10 } } });
    const minted = await mintKey(CONFIG, tenant);
    for (const broken of [purgingQuota({ failure: new Error("simulated outage") }), purgingQuota({ getThrows: true })]) {
      const refused = await adminCall("DELETE", `/tenants/${tenant}`, CONFIG, { env: { TENANT_QUOTA: broken.ns } });
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("1");
      const body = await problemOf(refused);
      expect(body).toMatchObject({ code: "quota_unavailable" });
      expect(JSON.stringify(body)).not.toContain("simulated");
    }
    // Still whole: the tenant, its key, and no tenant_deleted event.
    expect(await jsonOf(await adminCall("GET", `/tenants/${tenant}`, CONFIG), 200)).toMatchObject({ tenant, quota: { bytes: { hard: 10 } } });
    const { keys } = await jsonOf<{ keys: { id: string }[] }>(await adminCall("GET", `/tenants/${tenant}/keys`, CONFIG), 200);
    expect(keys.map((k) => k.id)).toEqual([minted.id]);
    expect((await auditKinds(tenant)).map((e) => e.kind)).not.toContain("tenant_deleted");

    const working = purgingQuota({});
    await jsonOf(await adminCall("DELETE", `/tenants/${tenant}`, CONFIG, { env: { TENANT_QUOTA: working.ns } }), 200);
    expect(working.purges).toEqual([{ tenant, tenantRowPresent: true }]);
    expect((await problemOf(await adminCall("GET", `/tenants/${tenant}`, CONFIG))).code).toBe("not_found");
  });

  it("does not purge anything for a tenant that does not exist", async () => {
    const quota = purgingQuota({});
    expect((await problemOf(await adminCall("DELETE", `/tenants/${unique("nobody")}`, CONFIG, { env: { TENANT_QUOTA: quota.ns } }))).code).toBe("not_found");
    expect(quota.purges).toEqual([]);
  });

  it("starts a tenant created again under the same slug at zero (issue 10 item 4)", async () => {
    const tenant = unique("again");
    const quota = { bytes: { hard: 1000 } };
    await createTenant(CONFIG, tenant, { quota });
    await storeBytes(tenant, "big", 600, quota);
    expect((await quotaUsage(tenant)).bytes).toBe(600);
    await jsonOf(await adminCall("DELETE", `/tenants/${tenant}`, CONFIG), 200);
    expect(await quotaUsage(tenant)).toMatchObject({ bytes: 0, objects: 0, reserved_bytes: 0, reservations: 0 });
    await createTenant(CONFIG, tenant, { quota });
    // The reproduction of the issue: this 600-byte upload under a 1,000-byte quota was refused, and "big" was a dedup hit.
    await storeBytes(tenant, "big", 600, quota);
    expect(await quotaUsage(tenant)).toMatchObject({ bytes: 600, objects: 1 });
    const { events } = await jsonOf<{ events: { kind: string; detail: Record<string, unknown> }[] }>(await adminCall("GET", `/audit?tenant=${tenant}&kind=tenant_deleted`, CONFIG), 200);
    expect(events[0]?.detail.purged).toEqual({ bytes: 600, objects: 1 });
  });
});
