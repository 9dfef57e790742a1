import { describe, expect, it } from "vitest";
import { problemOf, unique } from "../helpers";
import { adminCall, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

const CONFIG = testConfig();
const GOOD_LIMITS = { request: { key: [{ count: 7, window_s: 1 }] } };

async function expectInvalid(response: Response, field: string): Promise<void> {
  const text = await response.clone().text();
  expect(response.status, text).toBe(400);
  const body = await problemOf(response);
  expect(body.code).toBe("invalid_request");
  expect(body.field, text).toBe(field);
}

describe("admin validation", () => {
  it("refuses every invalid tenant body with 400 naming the field, and leaves the previous value in force", async () => {
    const tenant = unique("valid");
    await createTenant(CONFIG, tenant, { limits: GOOD_LIMITS, quota: { bytes: { hard: 100 } } });
    const limit = (spec: unknown) => ({ limits: { request: { key: [spec] } } });
    const cases: [string, unknown, string][] = [
      ["count 0", limit({ count: 0, window_s: 1 }), "limits.request.key.0.count"],
      ["negative count", limit({ count: -1, window_s: 1 }), "limits.request.key.0.count"],
      ["fractional count", limit({ count: 1.5, window_s: 1 }), "limits.request.key.0.count"],
      ["string count", limit({ count: "5", window_s: 1 }), "limits.request.key.0.count"],
      ["missing count", limit({ window_s: 1 }), "limits.request.key.0.count"],
      ["missing window_s", limit({ count: 1 }), "limits.request.key.0.window_s"],
      ["negative window_s", limit({ count: 1, window_s: -1 }), "limits.request.key.0.window_s"],
      ["zero window_s", limit({ count: 1, window_s: 0 }), "limits.request.key.0.window_s"],
      ["sub-millisecond window_s", limit({ count: 1, window_s: 0.0001 }), "limits.request.key.0.window_s"],
      ["window_s over 366 days", limit({ count: 1, window_s: 40_000_000 }), "limits.request.key.0.window_s"],
      ["burst 0", limit({ count: 1, window_s: 1, burst: 0 }), "limits.request.key.0.burst"],
      ["unknown field in a limit", limit({ count: 1, window_s: 1, rate: 2 }), "limits.request.key.0.rate"],
      ["four limits", { limits: { request: { key: [1, 2, 3, 4].map((i) => ({ count: i, window_s: 1 })) } } }, "limits.request.key"],
      ["a limit that is not an object", { limits: { request: { key: [5] } } }, "limits.request.key.0"],
      ["unknown subject kind", { limits: { request: { anonymous: [] } } }, "limits.request.anonymous"],
      ["bad category name", { limits: { "Not-A-Category": { key: [] } } }, "limits.Not-A-Category"],
      ["unknown top-level field", { limits: GOOD_LIMITS, extra: true }, "extra"],
      ["negative quota", { quota: { bytes: { hard: -1 } } }, "quota.bytes.hard"],
      ["soft above hard", { quota: { objects: { soft: 10, hard: 5 } } }, "quota.objects.soft"],
      ["unknown quota kind", { quota: { files: { hard: 1 } } }, "quota.files"],
      ["limits not an object", { limits: [] }, "limits"],
    ];
    for (const [, body, field] of cases) {
      await expectInvalid(await adminCall("PUT", `/tenants/${tenant}`, CONFIG, { body }), field);
      await expectInvalid(await adminCall("PUT", `/tenants/${tenant}/limits`, CONFIG, { body }), field);
    }
    // A non-finite number arrives as JSON 1e999 (Infinity once parsed).
    await expectInvalid(
      await adminCall("PUT", `/tenants/${tenant}`, CONFIG, { rawBody: '{"limits":{"request":{"key":[{"count":1,"window_s":1e999}]}}}' }),
      "limits.request.key.0.window_s",
    );
    await expectInvalid(await adminCall("PUT", `/tenants/${tenant}`, CONFIG, { rawBody: "{not json" }), "body");
    await expectInvalid(await adminCall("PUT", `/tenants/${tenant}`, CONFIG, { rawBody: "[]" }), "body");

    const stored = await jsonOf<{ limits: unknown; quota: unknown }>(await adminCall("GET", `/tenants/${tenant}`, CONFIG), 200);
    expect(stored.limits).toEqual(GOOD_LIMITS);
    expect(stored.quota).toEqual({ bytes: { hard: 100 } });
  });

  it("refuses a bad tenant slug", async () => {
    for (const slug of ["Upper", "-dash-first", "a".repeat(65), "sp%20ace", "_x", ".hidden"]) {
      await expectInvalid(await adminCall("PUT", `/tenants/${slug}`, CONFIG, { body: {} }), "tenant");
    }
    // 64 characters, dots, dashes and underscores after the first are fine.
    const longest = `${unique("z").replace(/-/g, ".")}_`.padEnd(64, "x");
    expect(longest).toHaveLength(64);
    await jsonOf(await adminCall("PUT", `/tenants/${longest}`, CONFIG, { body: {} }), 201);
  });

  it("refuses every invalid key body, and mints nothing", async () => {
    const tenant = unique("kv");
    await createTenant(CONFIG, tenant);
    const cases: [unknown, string][] = [
      [{}, "name"],
      [{ name: "" }, "name"],
      [{ name: 5 }, "name"],
      [{ name: "x".repeat(129) }, "name"],
      [{ name: "k", expires_at: "tomorrow" }, "expires_at"],
      [{ name: "k", expires_at: "2020-01-01T00:00:00Z" }, "expires_at"],
      [{ name: "k", expires_at: 1_900_000_000_000 }, "expires_at"],
      [{ name: "k", limits: { request: [{ count: 0, window_s: 1 }] } }, "limits.request.0.count"],
      [{ name: "k", limits: { request: { key: [] } } }, "limits.request"],
      [{ name: "k", secret: "chosen" }, "secret"],
    ];
    for (const [body, field] of cases) await expectInvalid(await adminCall("POST", `/tenants/${tenant}/keys`, CONFIG, { body }), field);
    const { keys } = await jsonOf<{ keys: unknown[] }>(await adminCall("GET", `/tenants/${tenant}/keys`, CONFIG), 200);
    expect(keys).toEqual([]);
  });

  it("refuses bad key ids, caller keys and override bodies", async () => {
    await expectInvalid(await adminCall("DELETE", "/keys/NOT-AN-ID", CONFIG), "id");
    for (const callerKey of ["user:1", "ip:not-an-ip", "ip:10.0.0.1/24", "ip:2001:db8::/48", "key:short"]) {
      await expectInvalid(await adminCall("PUT", `/overrides/${encodeURIComponent(callerKey)}`, CONFIG, { body: { limits: {} } }), "caller_key");
    }
    await expectInvalid(await adminCall("PUT", "/overrides/ip:192.0.2.1", CONFIG, { body: {} }), "limits");
    await expectInvalid(await adminCall("PUT", "/overrides/ip:192.0.2.1", CONFIG, { body: { limits: { request: [{ count: 1, window_s: 1, burst: -1 }] } } }), "limits.request.0.burst");
  });

  it("refuses bad audit queries", async () => {
    await expectInvalid(await adminCall("GET", "/audit?limit=0", CONFIG), "limit");
    await expectInvalid(await adminCall("GET", "/audit?limit=500", CONFIG), "limit");
    // A page size past the bound is told the bound, however many digits it has; one that is no number is told so.
    for (const [path, max] of [["/audit", 200], ["/alerts", 200], ["/tenants", 200]] as const) {
      for (const size of [String(max + 1), "1000000"]) {
        const body = await problemOf(await adminCall("GET", `${path}?limit=${size}`, CONFIG));
        expect({ field: body.field, detail: body.detail }).toEqual({ field: "limit", detail: expect.stringContaining(`must be <= ${max}`) });
      }
      expect((await problemOf(await adminCall("GET", `${path}?limit=1e3`, CONFIG))).detail).toContain("must be a whole number > 0");
    }
    await expectInvalid(await adminCall("GET", "/audit?since=yesterday", CONFIG), "since");
    await expectInvalid(await adminCall("GET", "/audit?cursor=abc", CONFIG), "cursor");
    await expectInvalid(await adminCall("GET", "/audit?tenant=BAD", CONFIG), "tenant");
    await expectInvalid(await adminCall("GET", "/audit?colour=red", CONFIG), "colour");
  });

  it("keeps an override's previous value after a refused write", async () => {
    const tenant = unique("ovk");
    await createTenant(CONFIG, tenant);
    const minted = await mintKey(CONFIG, tenant);
    await jsonOf(await adminCall("PUT", `/overrides/key:${minted.id}`, CONFIG, { body: { limits: { request: [{ count: 9, window_s: 1 }] } } }), 201);
    await expectInvalid(await adminCall("PUT", `/overrides/key:${minted.id}`, CONFIG, { body: { limits: { request: [{ count: 0, window_s: 1 }] } } }), "limits.request.0.count");
    const kept = await jsonOf<{ limits: unknown }>(await adminCall("GET", `/overrides/key:${minted.id}`, CONFIG), 200);
    expect(kept.limits).toEqual({ request: [{ count: 9, window_s: 1 }] });
  });
});

describe("a name that means nothing", () => {
  // Categories this deployment defines: a route's charge (upload), a response_charge (tokens), a categories entry (search), and the built-ins.
  const NAMED = testConfig({
    routes: [
      { method: "PUT", path: "/objects/:object", charges: { upload: 1 } },
      { method: "POST", path: "/v1/chat", response_charge: { category: "tokens", header: "x-usage-total-tokens" } },
    ],
    categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, search: { limits: { key: [{ count: 5, window_s: 1 }] } } },
  });
  const KNOWN = "message, request, search, stream_rent, tokens, upload";
  const one = [{ count: 3, window_s: 1 }];

  async function expectUnknown(response: Response, field: string, category: string): Promise<void> {
    const body = await problemOf(response.clone());
    await expectInvalid(response, field);
    expect(body.detail).toBe(`${field}: no category named ${category}: one of ${KNOWN}`);
  }

  it("refuses a tenant's limits naming a category nothing defines, naming it and the known ones, and keeps the previous limits", async () => {
    const tenant = unique("nameless");
    await expectUnknown(await adminCall("PUT", `/tenants/${tenant}`, NAMED, { body: { limits: { reqest: { key: one } } } }), "limits.reqest", "reqest");
    await jsonOf(await adminCall("GET", `/tenants/${tenant}`, NAMED), 404);
    await createTenant(NAMED, tenant, { limits: { request: { key: one } } });
    // The gateway's own categories are not a caller's: a tenant limit there would never apply.
    for (const category of ["reqest", "admin", "auth_failures"]) {
      await expectUnknown(await adminCall("PUT", `/tenants/${tenant}/limits`, NAMED, { body: { limits: { [category]: { tenant: one } } } }), `limits.${category}`, category);
    }
    const kept = await jsonOf<{ limits: unknown }>(await adminCall("GET", `/tenants/${tenant}`, NAMED), 200);
    expect(kept.limits).toEqual({ request: { key: one } });
    const every = Object.fromEntries(KNOWN.split(", ").map((category) => [category, { key: one }]));
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}/limits`, NAMED, { body: { limits: every } }), 200);
  });

  it("refuses a key's limits and an override's naming a category nothing defines, storing nothing", async () => {
    const tenant = unique("nameless-key");
    await createTenant(NAMED, tenant);
    await expectUnknown(await adminCall("POST", `/tenants/${tenant}/keys`, NAMED, { body: { name: "k", limits: { uplaod: one } } }), "limits.uplaod", "uplaod");
    expect((await jsonOf<{ keys: unknown[] }>(await adminCall("GET", `/tenants/${tenant}/keys`, NAMED), 200)).keys).toEqual([]);
    const minted = await mintKey(NAMED, tenant, { name: "k", limits: { upload: one } });
    await expectUnknown(await adminCall("PUT", `/overrides/key:${minted.id}`, NAMED, { body: { limits: { reqest: one } } }), "limits.reqest", "reqest");
    await jsonOf(await adminCall("GET", `/overrides/key:${minted.id}`, NAMED), 404);
    // An unknown field in a limit is refused the same way, named.
    await expectInvalid(await adminCall("PUT", `/overrides/key:${minted.id}`, NAMED, { body: { limits: { request: [{ count: 1, window_s: 1, brust: 2 }] } } }), "limits.request.0.brust");
    await jsonOf(await adminCall("PUT", `/overrides/key:${minted.id}`, NAMED, { body: { limits: { tokens: one } } }), 201);
  });

  it("refuses a budget of a category no request spends: a stream's rent, or tokens where no response_charge names them", async () => {
    const tenant = unique("nameless-budget");
    await createTenant(NAMED, tenant);
    const refused = await problemOf(await adminCall("PUT", `/tenants/${tenant}/budgets/stream_rent`, NAMED, { body: { amount: 1, period: "day" } }));
    expect(refused).toMatchObject({ status: 400, field: "category", detail: "category: no category named stream_rent: one of request, search, tokens, upload" });
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}/budgets/tokens`, NAMED, { body: { amount: 1, period: "day" } }), 201);
    expect(await problemOf(await adminCall("PUT", `/tenants/${tenant}/budgets/tokens`, CONFIG, { body: { amount: 1, period: "day" } }))).toMatchObject({ status: 400, field: "category" });
  });
});
