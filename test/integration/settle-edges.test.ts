// The settlement's edges: an upload the origin answers 3xx is not stored
// (released, not committed); an in-flight slot is given back after a small
// answer, an empty one and an unreachable origin's 502; and after a
// response-priced debt the answer's RateLimit says what the call cost.
import { describe, expect, it } from "vitest";
import { callGateway, gatewayRequest, runtimeOf, unique, uniqueIp } from "../helpers";
import { quotaUsage } from "./admin-quota-helpers";
import { createTenant, mintKey, testConfig } from "./admin-helpers";

describe("the quota settlement", () => {
  it("releases an upload the origin answers 302 or 304: only a 2xx stores it", async () => {
    const config = testConfig({ routes: [{ method: "PUT", path: "/objects/:object", quota: "store" }] });
    const tenant = unique("settle-3xx");
    await createTenant(config, tenant, { quota: { bytes: { hard: 10_000 } } });
    const { key } = await mintKey(config, tenant);
    const put = (object: string, status: number) =>
      gatewayRequest(`/objects/${object}`, { method: "PUT", ip: uniqueIp(), headers: { authorization: `Bearer ${key}`, "content-length": "100", "x-origin-status": String(status) }, body: new Uint8Array(100) });
    for (const status of [302, 304]) expect((await callGateway(put(`moved-${status}`, status), { TOLLGATE: config }, { settle: true })).status).toBe(status);
    expect(await quotaUsage(tenant)).toMatchObject({ bytes: 0, objects: 0, reserved_bytes: 0 });
    expect((await callGateway(put("stored", 201), { TOLLGATE: config }, { settle: true })).status).toBe(201);
    expect(await quotaUsage(tenant)).toMatchObject({ bytes: 100, objects: 1 });
  });
});

describe("in-flight slots", () => {
  const config = testConfig({ traffic: { enabled: false } });

  it("gives the slot back after a small answer, an empty one and an unreachable origin's 502", async () => {
    const runtime = runtimeOf(config);
    const ip = uniqueIp();
    expect((await callGateway(gatewayRequest("/small", { ip, headers: { "x-origin-body-bytes": "10" } }), { TOLLGATE: config }, { settle: true })).status).toBe(200);
    expect(runtime.inFlight.countOf(`ip:${ip}`)).toBe(0);
    expect((await callGateway(gatewayRequest("/empty", { ip, headers: { "x-origin-status": "204" } }), { TOLLGATE: config }, { settle: true })).status).toBe(204);
    expect(runtime.inFlight.countOf(`ip:${ip}`)).toBe(0);
    const down = { ORIGIN_URL: "http://127.0.0.1:9" };
    const downRuntime = runtimeOf(config, down);
    expect((await callGateway(gatewayRequest("/down", { ip }), { TOLLGATE: config, ...down }, { settle: true })).status).toBe(502);
    expect(downRuntime.inFlight.countOf(`ip:${ip}`)).toBe(0);
  });
});

describe("a response-priced debt's headers", () => {
  it("says in draft-12's c what the call cost, not its reserve", async () => {
    const config = testConfig({
      rate_limit_headers: "draft-12",
      categories: { tokens: { limits: { ip: [{ count: 100, window_s: 60 }] } } },
      routes: [{ method: "POST", path: "/v1/chat", response_charge: { category: "tokens", header: "x-usage-total-tokens", reserve: 10 } }],
    });
    const answer = await callGateway(
      gatewayRequest("/v1/chat", { method: "POST", ip: uniqueIp(), headers: { "content-type": "application/json", "x-origin-usage-header": "50" }, body: "{}" }),
      { TOLLGATE: config },
      { settle: true },
    );
    expect(answer.status).toBe(200);
    // 50 of 100 per 60 s spent: 50 left, all earned back in 30 s, and this call cost 50.
    expect(answer.headers.get("ratelimit")).toBe('"tokens-ip-60s";a=50;w=30;c=50');
  });
});
