// Orgs and the tenant listing: create, replace, read with usage
// summed over the tenants, list, delete refused while tenants name the org,
// tenants joining and leaving, validation, audit, the auditor token.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { problemOf, unique } from "../helpers";
import { AUDITOR_TOKEN, adminCall, createTenant, jsonOf, testConfig } from "./admin-helpers";
import { storeBytes } from "./admin-quota-helpers";

const CONFIG = testConfig();
const QUOTA = { bytes: { soft: 800, hard: 1000 }, objects: { hard: 10 } };

interface OrgBody {
  org: string;
  quota: unknown;
  created_at: string;
  updated_at: string;
  tenant_count?: number;
  tenants?: string[];
  usage?: { bytes: number; objects: number; reserved_bytes: number } | null;
}

interface TenantBody {
  tenant: string;
  org: string | null;
  quota: unknown;
}

async function expectInvalid(response: Response, field: string): Promise<void> {
  const text = await response.clone().text();
  expect(response.status, text).toBe(400);
  expect(await problemOf(response)).toMatchObject({ code: "invalid_request", field });
}

/** A quota namespace (TENANT_QUOTA or ORG_QUOTA) whose objects cannot be reached. */
function unreachableQuota(ns: DurableObjectNamespace): unknown {
  return {
    idFromName: (name: string) => ns.idFromName(name),
    get: () => {
      throw new Error("simulated: the quota object cannot be reached");
    },
  };
}

function getOrg(org: string): Promise<OrgBody> {
  return adminCall("GET", `/orgs/${org}`, CONFIG).then((r) => jsonOf<OrgBody>(r, 200));
}

describe("orgs", () => {
  it("creates (201), replaces (200, created_at kept) and reads an org with no tenants", async () => {
    const org = unique("org");
    const created = await jsonOf<OrgBody>(await adminCall("PUT", `/orgs/${org}`, CONFIG, { body: { quota: QUOTA } }), 201);
    expect(created).toMatchObject({ org, quota: QUOTA });
    const replaced = await jsonOf<OrgBody>(await adminCall("PUT", `/orgs/${org}`, CONFIG, { body: {} }), 200);
    expect(replaced).toMatchObject({ org, quota: {}, created_at: created.created_at });
    expect(await getOrg(org)).toMatchObject({ org, quota: {}, tenant_count: 0, tenants: [], usage: { bytes: 0, objects: 0, reserved_bytes: 0 } });
    expect((await problemOf(await adminCall("GET", `/orgs/${unique("none")}`, CONFIG))).code).toBe("not_found");
  });

  it("sums its tenants' stored bytes and objects, and lists them", async () => {
    const org = unique("sum");
    await jsonOf(await adminCall("PUT", `/orgs/${org}`, CONFIG, { body: { quota: QUOTA } }), 201);
    const [a, b, outside] = [unique("sa"), unique("sb"), unique("so")];
    await createTenant(CONFIG, a, { org });
    await createTenant(CONFIG, b, { org });
    await createTenant(CONFIG, outside);
    await storeBytes(a, "one", 100);
    await storeBytes(a, "two", 20);
    await storeBytes(b, "three", 3);
    await storeBytes(outside, "four", 4000);
    expect(await getOrg(org)).toMatchObject({ tenant_count: 2, tenants: [a, b].sort(), usage: { bytes: 123, objects: 3, reserved_bytes: 0 } });
  });

  it("refuses to delete an org while tenants name it (409 conflict), then deletes it once they left", async () => {
    const org = unique("del");
    await jsonOf(await adminCall("PUT", `/orgs/${org}`, CONFIG, { body: {} }), 201);
    const [a, b] = [unique("da"), unique("db")];
    await createTenant(CONFIG, a, { org });
    await createTenant(CONFIG, b, { org });
    const refused = await adminCall("DELETE", `/orgs/${org}`, CONFIG);
    expect(refused.status).toBe(409);
    expect(await problemOf(refused)).toMatchObject({ code: "conflict", status: 409, tenants: 2 });
    // Leaving: null through /limits; a replace without org leaves too.
    expect(await jsonOf<TenantBody>(await adminCall("PUT", `/tenants/${a}/limits`, CONFIG, { body: { org: null } }), 200)).toMatchObject({ org: null });
    expect(await jsonOf<TenantBody>(await adminCall("PUT", `/tenants/${b}`, CONFIG, { body: {} }), 200)).toMatchObject({ org: null });
    expect(await jsonOf(await adminCall("DELETE", `/orgs/${org}`, CONFIG), 200)).toEqual({ org, deleted: true });
    expect((await problemOf(await adminCall("GET", `/orgs/${org}`, CONFIG))).code).toBe("not_found");
    expect((await problemOf(await adminCall("DELETE", `/orgs/${org}`, CONFIG))).code).toBe("not_found");
    const { events } = await jsonOf<{ events: { kind: string; subject: string }[] }>(await adminCall("GET", `/audit?limit=200`, CONFIG), 200);
    expect(events.filter((e) => e.subject === `org:${org}`).map((e) => e.kind)).toEqual(["org_deleted", "org_created"]);
  });

  it("answers 503 quota_unavailable with Retry-After and deletes nothing when the org's quota object cannot be emptied; a retry deletes", async () => {
    const org = unique("purgefail");
    await jsonOf(await adminCall("PUT", `/orgs/${org}`, CONFIG, { body: {} }), 201);
    const refused = await adminCall("DELETE", `/orgs/${org}`, CONFIG, { env: { ORG_QUOTA: unreachableQuota(env.ORG_QUOTA) } });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("1");
    expect(await problemOf(refused)).toMatchObject({ code: "quota_unavailable" });
    expect((await getOrg(org)).org).toBe(org);
    expect(await jsonOf(await adminCall("DELETE", `/orgs/${org}`, CONFIG), 200)).toEqual({ org, deleted: true });
  });

  it("answers usage null, never a partial sum, when one tenant's quota object does not answer", async () => {
    const org = unique("partial");
    await jsonOf(await adminCall("PUT", `/orgs/${org}`, CONFIG, { body: {} }), 201);
    const tenant = unique("pt");
    await createTenant(CONFIG, tenant, { org });
    const read = await jsonOf<OrgBody>(await adminCall("GET", `/orgs/${org}`, CONFIG, { env: { TENANT_QUOTA: unreachableQuota(env.TENANT_QUOTA) } }), 200);
    expect(read).toMatchObject({ org, tenant_count: 1, tenants: [tenant], usage: null });
    expect((await getOrg(org)).usage).toEqual({ bytes: 0, objects: 0, reserved_bytes: 0 });
  });

  it("lists orgs a page at a time with their tenant counts", async () => {
    const prefix = unique("lo");
    const orgs = [`${prefix}-a`, `${prefix}-b`, `${prefix}-c`];
    for (const org of orgs) await jsonOf(await adminCall("PUT", `/orgs/${org}`, CONFIG, { body: {} }), 201);
    await createTenant(CONFIG, unique("lt"), { org: orgs[1] });
    const first = await jsonOf<{ orgs: OrgBody[]; next_cursor: string | null }>(await adminCall("GET", `/orgs?limit=2&cursor=${prefix}`, CONFIG), 200);
    expect(first.orgs.map((o) => [o.org, o.tenant_count])).toEqual([
      [orgs[0], 0],
      [orgs[1], 1],
    ]);
    expect(first.next_cursor).toBe(orgs[1]);
    const second = await jsonOf<{ orgs: OrgBody[] }>(await adminCall("GET", `/orgs?limit=2&cursor=${first.next_cursor}`, CONFIG), 200);
    expect(second.orgs[0]).toMatchObject({ org: orgs[2], tenant_count: 0 });
  });

  it("refuses a bad org slug, quota or field with 400 naming it", async () => {
    await expectInvalid(await adminCall("PUT", "/orgs/Not_An_Org", CONFIG, { body: {} }), "org");
    await expectInvalid(await adminCall("PUT", `/orgs/${unique("v")}`, CONFIG, { body: { quota: { bytes: { hard: -1 } } } }), "quota.bytes.hard");
    await expectInvalid(await adminCall("PUT", `/orgs/${unique("v")}`, CONFIG, { body: { quota: { bytes: { soft: 2, hard: 1 } } } }), "quota.bytes.soft");
    await expectInvalid(await adminCall("PUT", `/orgs/${unique("v")}`, CONFIG, { body: { limits: {} } }), "limits");
    await expectInvalid(await adminCall("GET", "/orgs?cursor=UPPER", CONFIG), "cursor");
  });
});

describe("a tenant's org", () => {
  it("joins an existing org, moves, keeps it when /limits leaves it out, and leaves with null; each change audited", async () => {
    const [first, second] = [unique("o1"), unique("o2")];
    for (const org of [first, second]) await jsonOf(await adminCall("PUT", `/orgs/${org}`, CONFIG, { body: {} }), 201);
    const tenant = unique("mover");
    expect(await jsonOf<TenantBody>(await adminCall("PUT", `/tenants/${tenant}`, CONFIG, { body: { org: first } }), 201)).toMatchObject({ tenant, org: first });
    expect(await jsonOf<TenantBody>(await adminCall("PUT", `/tenants/${tenant}/limits`, CONFIG, { body: { org: second } }), 200)).toMatchObject({ org: second });
    expect(await jsonOf<TenantBody>(await adminCall("PUT", `/tenants/${tenant}/limits`, CONFIG, { body: { quota: QUOTA } }), 200)).toMatchObject({ org: second, quota: QUOTA });
    expect(await jsonOf<TenantBody>(await adminCall("GET", `/tenants/${tenant}`, CONFIG), 200)).toMatchObject({ org: second });
    expect(await jsonOf<TenantBody>(await adminCall("PUT", `/tenants/${tenant}/limits`, CONFIG, { body: { org: null } }), 200)).toMatchObject({ org: null });
    const { events } = await jsonOf<{ events: { kind: string; detail: Record<string, unknown> }[] }>(await adminCall("GET", `/audit?tenant=${tenant}`, CONFIG), 200);
    expect(events.map((e) => e.detail.org)).toEqual([null, undefined, second, first]);
  });

  it("refuses an org that does not exist with 400 naming org, and changes nothing", async () => {
    const tenant = unique("orphan");
    await expectInvalid(await adminCall("PUT", `/tenants/${tenant}`, CONFIG, { body: { org: unique("ghost") } }), "org");
    expect((await problemOf(await adminCall("GET", `/tenants/${tenant}`, CONFIG))).code).toBe("not_found");
    const org = unique("real");
    await jsonOf(await adminCall("PUT", `/orgs/${org}`, CONFIG, { body: {} }), 201);
    await createTenant(CONFIG, tenant, { org });
    await expectInvalid(await adminCall("PUT", `/tenants/${tenant}/limits`, CONFIG, { body: { org: unique("ghost") } }), "org");
    await expectInvalid(await adminCall("PUT", `/tenants/${tenant}/limits`, CONFIG, { body: { org: "Bad Slug" } }), "org");
    await expectInvalid(await adminCall("PUT", `/tenants/${tenant}/limits`, CONFIG, { body: { org: 5 } }), "org");
    expect(await jsonOf<TenantBody>(await adminCall("GET", `/tenants/${tenant}`, CONFIG), 200)).toMatchObject({ org });
  });
});

describe("GET /tenants", () => {
  it("lists tenants in slug order, a page at a time, each with its org", async () => {
    const prefix = unique("lst");
    const org = unique("lorg");
    await jsonOf(await adminCall("PUT", `/orgs/${org}`, CONFIG, { body: {} }), 201);
    const slugs = [`${prefix}-1`, `${prefix}-2`, `${prefix}-3`];
    await createTenant(CONFIG, slugs[2]!);
    await createTenant(CONFIG, slugs[0]!, { org });
    await createTenant(CONFIG, slugs[1]!);
    const seen: TenantBody[] = [];
    let cursor: string | null = prefix;
    for (let pages = 0; cursor !== null && pages < 5; pages++) {
      const page: { tenants: TenantBody[]; next_cursor: string | null } = await jsonOf(await adminCall("GET", `/tenants?limit=2&cursor=${cursor}`, CONFIG), 200);
      const mine = page.tenants.filter((t) => t.tenant.startsWith(prefix));
      seen.push(...mine);
      cursor = mine.length === page.tenants.length ? page.next_cursor : null;
    }
    expect(seen.map((t) => [t.tenant, t.org])).toEqual([
      [slugs[0], org],
      [slugs[1], null],
      [slugs[2], null],
    ]);
    await expectInvalid(await adminCall("GET", "/tenants?limit=abc", CONFIG), "limit");
  });
});

describe("the auditor token and orgs", () => {
  it("reads orgs and tenants but cannot write an org", async () => {
    const org = unique("ro");
    await jsonOf(await adminCall("PUT", `/orgs/${org}`, CONFIG, { body: {} }), 201);
    for (const path of ["/orgs", `/orgs/${org}`, "/tenants"]) await jsonOf(await adminCall("GET", path, CONFIG, { token: AUDITOR_TOKEN }), 200);
    for (const method of ["PUT", "DELETE"]) {
      const refused = await adminCall(method, `/orgs/${org}`, CONFIG, { token: AUDITOR_TOKEN, body: {} });
      expect(refused.status).toBe(403);
      expect((await problemOf(refused)).code).toBe("admin_forbidden");
    }
    await jsonOf(await adminCall("GET", `/orgs/${org}`, CONFIG), 200);
  });
});
