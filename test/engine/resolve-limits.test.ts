import { describe, expect, it } from "vitest";
import { compileLimits } from "../../src/engine/limit";
import { BUILT_IN_LIMITS, type CategoryDefaults, type KeyLimits, resolveLimits, type SubjectKind, subjectKindOf, type TenantLimits } from "../../src/engine/resolve-limits";

const OVERRIDE = compileLimits([{ count: 1, window_s: 1 }]);
const KEY_OWN = compileLimits([{ count: 2, window_s: 1 }]);
const TENANT_FOR_KEYS = compileLimits([{ count: 3, window_s: 1 }]);
const TENANT_ITSELF = compileLimits([{ count: 4, window_s: 1 }]);
const DEFAULT_FOR_KIND = compileLimits([{ count: 5, window_s: 1 }]);

const override: KeyLimits = { request: OVERRIDE };
const key: KeyLimits = { request: KEY_OWN };
const tenant: TenantLimits = { request: { key: TENANT_FOR_KEYS, tenant: TENANT_ITSELF } };
const defaults: CategoryDefaults = { request: { key: DEFAULT_FOR_KIND, tenant: DEFAULT_FOR_KIND, ip: DEFAULT_FOR_KIND, anonymous: DEFAULT_FOR_KIND, admin: DEFAULT_FOR_KIND } };

describe("resolveLimits", () => {
  it.each<[SubjectKind, Parameters<typeof resolveLimits>[2], readonly unknown[]]>([
    ["key", { override, key, tenant, defaults }, OVERRIDE],
    ["key", { key, tenant, defaults }, KEY_OWN],
    ["key", { tenant, defaults }, TENANT_FOR_KEYS],
    ["key", { defaults }, DEFAULT_FOR_KIND],
    ["key", {}, BUILT_IN_LIMITS.request!.key!],
    ["tenant", { override, key, tenant, defaults }, TENANT_ITSELF],
    ["tenant", { override, key, defaults }, DEFAULT_FOR_KIND],
    ["tenant", {}, BUILT_IN_LIMITS.request!.tenant!],
    ["ip", { override, key, tenant, defaults }, OVERRIDE],
    ["ip", { key, tenant, defaults }, DEFAULT_FOR_KIND],
    ["ip", {}, BUILT_IN_LIMITS.request!.ip!],
    ["anonymous", { override, defaults }, DEFAULT_FOR_KIND],
    ["admin", { override }, []],
  ])("resolves kind %s with sources %j by precedence", (kind, sources, expected) => {
    if (expected.length === 0) expect(resolveLimits("request", kind, sources)).toEqual([]);
    else expect(resolveLimits("request", kind, sources)).toBe(expected);
  });

  it("does not mix sources: a key with its own per-second limit loses the tenant's per-hour one", () => {
    const tenantHourly: TenantLimits = { request: { key: compileLimits([{ count: 100, window_s: 3600 }]) } };
    expect(resolveLimits("request", "key", { key, tenant: tenantHourly })).toBe(KEY_OWN);
  });

  it("lets an empty list win, admitting everything", () => {
    const empty = compileLimits([]);
    expect(resolveLimits("request", "key", { key: { request: empty }, tenant })).toBe(empty);
  });

  it("falls through to the next source for another category", () => {
    expect(resolveLimits("upload", "key", { override, key, tenant })).toEqual([]);
    expect(resolveLimits("admin", "admin", {})).toBe(BUILT_IN_LIMITS.admin!.admin!);
  });

  it("ignores inherited property names as categories", () => {
    expect(resolveLimits("constructor", "key", { key, defaults })).toEqual([]);
    expect(resolveLimits("toString", "ip", {})).toEqual([]);
  });

  it("carries the built-in defaults of docs/design.md", () => {
    const shape = (kind: string, category: string) =>
      BUILT_IN_LIMITS[category]![kind as SubjectKind]!.map((l) => ({ count: l.count, windowS: l.windowS, burst: l.burst }));
    expect(shape("key", "request")).toEqual([{ count: 1000, windowS: 1, burst: 2000 }]);
    expect(shape("tenant", "request")).toEqual([{ count: 2000, windowS: 1, burst: 4000 }]);
    expect(shape("ip", "request")).toEqual([
      { count: 6000, windowS: 60, burst: 6000 },
      { count: 200_000, windowS: 3600, burst: 200_000 },
    ]);
    expect(shape("admin", "admin")).toEqual([{ count: 10, windowS: 1, burst: 20 }]);
    expect(shape("ip", "auth_failures")).toEqual([{ count: 60, windowS: 60, burst: 60 }]);
  });
});

describe("subjectKindOf", () => {
  it.each([
    ["key:9f86d081", "key"],
    ["ip:203.0.113.7", "ip"],
    ["ip:2001:db8:1:2::/64", "ip"],
    ["tenant:acme", "tenant"],
    ["admin:ab12", "admin"],
    ["anonymous", "anonymous"],
    ["key", null],
    ["user:x", null],
  ])("reads %s as %s", (subject, kind) => {
    expect(subjectKindOf(subject)).toBe(kind);
  });
});
