// Stored limits and quotas compile once per cache load; a stored value that no
// longer parses is treated as absent (the next level of the resolution order
// applies) rather than failing the request.
import { describe, expect, it } from "vitest";
import { compileStoredKeyLimits, compileStoredTenant } from "../../src/cache/stored-limits";

const LIMIT = { count: 5, window_s: 60 };

describe("compileStoredTenant", () => {
  it("compiles each subject kind a tenant names (key, jwt, tenant) and leaves the others out", () => {
    const tenant = compileStoredTenant(
      { slug: "acme", limits: JSON.stringify({ request: { jwt: [LIMIT], tenant: [LIMIT, { count: 50, window_s: 3600 }] } }), quota: '{"bytes":{"hard":10}}', org: null, orgQuota: null },
      "isolate",
    );
    expect(tenant.slug).toBe("acme");
    expect(tenant.limits?.request?.jwt).toHaveLength(1);
    expect(tenant.limits?.request?.tenant).toHaveLength(2);
    expect(tenant.limits?.request?.key).toBeUndefined();
    expect(tenant.quota).toEqual({ bytes: { hard: 10 } });
    expect(tenant.org).toBeNull();
  });

  it("treats invalid stored limits as absent, keeping the quota, and an org without a quota as an empty one", () => {
    for (const limits of ['{"request":{"jwt":"not a list"}}', '{"request":7}', "not json", "[]"]) {
      const tenant = compileStoredTenant({ slug: "acme", limits, quota: "{}", org: "group", orgQuota: "{}" }, "isolate");
      expect(tenant.limits, limits).toBeNull();
      expect(tenant.quota).toBeNull();
      expect(tenant.org).toEqual({ slug: "group", quota: {} });
    }
  });

  it("gives a limit without a scope the default scope", () => {
    const globalDefault = compileStoredTenant({ slug: "acme", limits: JSON.stringify({ request: { key: [LIMIT] } }), quota: "{}", org: null, orgQuota: null }, "global");
    const isolateDefault = compileStoredTenant({ slug: "acme", limits: JSON.stringify({ request: { key: [LIMIT] } }), quota: "{}", org: null, orgQuota: null }, "isolate");
    expect(globalDefault.limits?.request?.key?.[0]?.scope).toBe("global");
    expect(isolateDefault.limits?.request?.key?.[0]?.scope).toBe("isolate");
  });
});

describe("compileStoredKeyLimits", () => {
  it("treats a category that is not a list as the whole value invalid", () => {
    expect(compileStoredKeyLimits('{"request":{"count":1}}', "test", "isolate")).toBeNull();
    expect(compileStoredKeyLimits(JSON.stringify({ request: [LIMIT] }), "test", "isolate")?.request).toHaveLength(1);
  });
});
