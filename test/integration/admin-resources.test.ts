import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { problemOf, unique } from "../helpers";
import { adminCall, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

const CONFIG = testConfig();
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

interface TenantBody {
  tenant: string;
  limits: unknown;
  quota: unknown;
  created_at: string;
  updated_at: string;
  usage?: unknown;
}

describe("tenants", () => {
  it("creates (201), replaces (200) and reads a tenant with its live quota usage", async () => {
    const tenant = unique("ten");
    const created = await jsonOf<TenantBody>(await adminCall("PUT", `/tenants/${tenant}`, CONFIG, { body: { limits: { request: { tenant: [{ count: 5, window_s: 1 }] } } } }), 201);
    expect(created).toMatchObject({ tenant, limits: { request: { tenant: [{ count: 5, window_s: 1 }] } }, quota: {} });
    expect(created.created_at).toMatch(ISO);

    const replaced = await jsonOf<TenantBody>(await adminCall("PUT", `/tenants/${tenant}`, CONFIG, { body: { quota: { bytes: { hard: 10 } } } }), 200);
    expect(replaced).toMatchObject({ limits: {}, quota: { bytes: { hard: 10 } }, created_at: created.created_at });

    const read = await jsonOf<TenantBody>(await adminCall("GET", `/tenants/${tenant}`, CONFIG), 200);
    expect(read).toMatchObject({ tenant, quota: { bytes: { hard: 10 } }, usage: { bytes: 0, objects: 0, reserved_bytes: 0 } });
  });

  it("sets limits and quota separately with PUT /limits, keeping what is left out", async () => {
    const tenant = unique("lim");
    await createTenant(CONFIG, tenant, { limits: { request: { key: [{ count: 3, window_s: 1 }] } }, quota: { objects: { hard: 4 } } });
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}/limits`, CONFIG, { body: { quota: { objects: { hard: 8 } } } }), 200);
    const read = await jsonOf<TenantBody>(await adminCall("GET", `/tenants/${tenant}`, CONFIG), 200);
    expect(read.limits).toEqual({ request: { key: [{ count: 3, window_s: 1 }] } });
    expect(read.quota).toEqual({ objects: { hard: 8 } });
    expect((await problemOf(await adminCall("PUT", `/tenants/${unique("none")}/limits`, CONFIG, { body: {} }))).code).toBe("not_found");
  });

  it("deletes a tenant with its keys and their overrides", async () => {
    const tenant = unique("del");
    await createTenant(CONFIG, tenant);
    const a = await mintKey(CONFIG, tenant);
    await mintKey(CONFIG, tenant);
    await jsonOf(await adminCall("PUT", `/overrides/key:${a.id}`, CONFIG, { body: { limits: {} } }), 201);
    expect(await jsonOf(await adminCall("DELETE", `/tenants/${tenant}`, CONFIG), 200)).toEqual({ tenant, deleted: true, keys_deleted: 2 });
    expect((await problemOf(await adminCall("GET", `/tenants/${tenant}`, CONFIG))).code).toBe("not_found");
    expect((await problemOf(await adminCall("GET", `/overrides/key:${a.id}`, CONFIG))).code).toBe("not_found");
    expect((await problemOf(await adminCall("DELETE", `/tenants/${tenant}`, CONFIG))).code).toBe("not_found");
  });

  it("answers not_found for keys of a missing tenant and for an unknown key id", async () => {
    expect((await problemOf(await adminCall("POST", `/tenants/${unique("nobody")}/keys`, CONFIG, { body: { name: "k" } }))).code).toBe("not_found");
    expect((await problemOf(await adminCall("GET", `/tenants/${unique("nobody")}/keys`, CONFIG))).code).toBe("not_found");
    expect((await problemOf(await adminCall("DELETE", "/keys/000000000000", CONFIG))).code).toBe("not_found");
  });

  it("revokes a key once: a second revocation keeps the first time and writes no event", async () => {
    const tenant = unique("rev");
    await createTenant(CONFIG, tenant);
    const minted = await mintKey(CONFIG, tenant);
    const first = await jsonOf<{ revoked_at: string }>(await adminCall("DELETE", `/keys/${minted.id}`, CONFIG), 200);
    const second = await jsonOf<{ revoked_at: string }>(await adminCall("DELETE", `/keys/${minted.id}`, CONFIG), 200);
    expect(second.revoked_at).toBe(first.revoked_at);
    const { events } = await jsonOf<{ events: unknown[] }>(await adminCall("GET", `/audit?tenant=${tenant}&kind=key_revoked`, CONFIG), 200);
    expect(events).toHaveLength(1);
  });
});

describe("usage and reindex", () => {
  it("reports zero usage for a new tenant and reindexes with no drift", async () => {
    const tenant = unique("use");
    await createTenant(CONFIG, tenant, { quota: { bytes: { soft: 1, hard: 2 } } });
    expect(await jsonOf(await adminCall("GET", `/tenants/${tenant}/usage`, CONFIG), 200)).toEqual({
      bytes: 0,
      objects: 0,
      reserved_bytes: 0,
      quota: { bytes: { soft: 1, hard: 2 } },
      requests_this_month: 0,
    });
    const reindexed = await jsonOf(await adminCall("POST", `/tenants/${tenant}/reindex`, CONFIG), 200);
    expect(reindexed).toEqual({ tenant, before: { bytes: 0, objects: 0 }, after: { bytes: 0, objects: 0 }, drift: { bytes: 0, objects: 0 } });
    const { events } = await jsonOf<{ events: { kind: string }[] }>(await adminCall("GET", `/audit?tenant=${tenant}`, CONFIG), 200);
    expect(events[0]?.kind).toBe("tenant_reindexed");
  });

  it("reads requests_this_month from usage_monthly", async () => {
    const tenant = unique("month");
    await createTenant(CONFIG, tenant);
    const period = new Date().toISOString().slice(0, 7);
    await env.DB.prepare("insert into usage_monthly (tenant, period, metric, value) values (?, ?, 'requests', 42), (?, '2000-01', 'requests', 7)").bind(tenant, period, tenant).run();
    const usage = await jsonOf<{ requests_this_month: number }>(await adminCall("GET", `/tenants/${tenant}/usage`, CONFIG), 200);
    expect(usage.requests_this_month).toBe(42);
  });
});

describe("overrides", () => {
  it("creates (201), replaces (200), reads and deletes an override, each write audited", async () => {
    const callerKey = "ip:192.0.2.44";
    const body = { limits: { request: [{ count: 1, window_s: 1 }] } };
    expect(await jsonOf(await adminCall("PUT", `/overrides/${callerKey}`, CONFIG, { body }), 201)).toMatchObject({ caller_key: callerKey, limits: body.limits });
    await jsonOf(await adminCall("PUT", `/overrides/${callerKey}`, CONFIG, { body: { limits: { request: [] } } }), 200);
    expect(await jsonOf(await adminCall("GET", `/overrides/${callerKey}`, CONFIG), 200)).toMatchObject({ limits: { request: [] } });
    expect(await jsonOf(await adminCall("DELETE", `/overrides/${callerKey}`, CONFIG), 200)).toEqual({ caller_key: callerKey, deleted: true });
    expect((await problemOf(await adminCall("DELETE", `/overrides/${callerKey}`, CONFIG))).code).toBe("not_found");
    // The address is stored as a keyed digest; `caller=` finds its events.
    const { events } = await jsonOf<{ events: { kind: string; subject: string }[] }>(await adminCall("GET", `/audit?caller=${callerKey}`, CONFIG), 200);
    expect(events.map((e) => e.kind)).toEqual(["override_deleted", "override_set", "override_set"]);
    expect(events.every((e) => /^hmac:[0-9a-f]{64}$/.test(e.subject))).toBe(true);
  });

  it("accepts an IPv6 /64 written raw in the path", async () => {
    const put = await jsonOf<{ caller_key: string }>(await adminCall("PUT", "/overrides/ip:2001:db8:aa:bb::/64", CONFIG, { body: { limits: {} } }), 201);
    expect(put.caller_key).toBe("ip:2001:db8:aa:bb::/64");
  });
});

describe("audit", () => {
  it("pages newest first with a cursor and filters by kind, tenant and since", async () => {
    const tenant = unique("page");
    await createTenant(CONFIG, tenant);
    const since = new Date().toISOString();
    for (let i = 0; i < 4; i++) await jsonOf(await adminCall("PUT", `/tenants/${tenant}/limits`, CONFIG, { body: { quota: { objects: { hard: i + 1 } } } }), 200);
    const first = await jsonOf<{ events: { id: number; kind: string; detail: { quota?: unknown } }[]; next_cursor: string | null }>(
      await adminCall("GET", `/audit?tenant=${tenant}&limit=3`, CONFIG),
      200,
    );
    expect(first.events.map((e) => e.kind)).toEqual(["tenant_limits_set", "tenant_limits_set", "tenant_limits_set"]);
    expect(first.events[0]?.detail.quota).toEqual({ objects: { hard: 4 } });
    expect(first.next_cursor).not.toBeNull();
    const second = await jsonOf<{ events: { kind: string }[]; next_cursor: string | null }>(
      await adminCall("GET", `/audit?tenant=${tenant}&limit=3&cursor=${first.next_cursor}`, CONFIG),
      200,
    );
    expect(second.events.map((e) => e.kind)).toEqual(["tenant_limits_set", "tenant_created"]);
    expect(second.next_cursor).toBeNull();
    const kinds = await jsonOf<{ events: unknown[] }>(await adminCall("GET", `/audit?tenant=${tenant}&kind=tenant_created`, CONFIG), 200);
    expect(kinds.events).toHaveLength(1);
    const recent = await jsonOf<{ events: { at: string }[] }>(await adminCall("GET", `/audit?tenant=${tenant}&since=${encodeURIComponent(since)}`, CONFIG), 200);
    expect(recent.events.length).toBeGreaterThanOrEqual(4);
    expect(recent.events.every((e) => e.at >= since)).toBe(true);
  });
});

describe("the OpenAPI document", () => {
  it("is OpenAPI 3.1, generated from the validation schemas, covering every call", async () => {
    const doc = await jsonOf<{ openapi: string; paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, Record<string, unknown>> } }>(
      await adminCall("GET", "/openapi.json", CONFIG),
      200,
    );
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        "/audit",
        "/keys/{id}",
        "/openapi.json",
        "/overrides",
        "/overrides/{caller_key}",
        "/blocks",
        "/blocks/{id}",
        "/orgs",
        "/orgs/{org}",
        "/tenants",
        "/tenants/{tenant}",
        "/tenants/{tenant}/keys",
        "/tenants/{tenant}/limits",
        "/tenants/{tenant}/reindex",
        "/tenants/{tenant}/usage",
        "/usage/export",
        "/usage/reconcile",
        "/traffic",
        "/traffic/top-refused",
        "/traffic/shadow",
        "/alerts",
      ]),
    );
    expect(Object.keys(doc.paths["/blocks"] ?? {})).toEqual(expect.arrayContaining(["get", "post"]));
    expect(Object.keys(doc.paths["/orgs/{org}"] ?? {})).toEqual(expect.arrayContaining(["get", "put", "delete"]));
    expect(doc.components.schemas.BlockBody).toMatchObject({ required: ["target"], additionalProperties: false });
    expect(doc.components.schemas.OverrideBody?.properties).toHaveProperty("expires_at");
    expect(doc.components.schemas.TenantBody?.properties).toHaveProperty("org");
    for (const id of ["Block", "BlockPage", "Org", "OrgPage", "OverridePage", "TenantPage", "ReconcileReport"]) expect(doc.components.schemas).toHaveProperty(id);
    const limit = doc.components.schemas.Limit;
    expect(limit).toMatchObject({ type: "object", required: ["count", "window_s"], additionalProperties: false });
    expect(doc.components.schemas.KeyLimits).toMatchObject({ additionalProperties: { maxItems: 6, items: { $ref: "#/components/schemas/Limit" } } });
    expect(doc.components.schemas.Key?.properties).not.toHaveProperty("digest");
  });
});
