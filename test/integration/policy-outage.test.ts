// Blocks while D1 is down: the caller policy (overrides and blocks) is kept
// from the last load with no time limit, and an isolate that never loaded it
// follows `policy_on_error` ("closed": 503 policy_unavailable; "open":
// forwarded without it). Health says which applies.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { healthOf } from "../../src/runtime";
import { callGateway, clockedGateway, gatewayRequest, originLog, problemOf, runtimeOf, unique, uniqueIp } from "../helpers";
import { adminCall, failingDb, jsonOf, testConfig } from "./admin-helpers";

const CONFIG = testConfig({ cache_ttl_s: 1, stale_if_error_s: 5 });

async function block(target: string): Promise<void> {
  await jsonOf(await adminCall("POST", "/blocks", CONFIG, { body: { target } }), 201);
}

/** A key id no key has (the minted keys' alphabet). */
function randomKeyId(): string {
  const alphabet = "0123456789abcdefghjkmnpqrstvwxyz";
  return Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => alphabet[b & 31]).join("");
}

function tagged(path: string, ip: string, tag: string): Request {
  return gatewayRequest(path, { ip, headers: { "x-test-tag": tag } });
}

describe("an isolate that never loaded the policy, with D1 down", () => {
  it("refuses with 503 policy_unavailable by default, never reaching the origin, and health says it fails closed", async () => {
    // A runtime of its own, as a fresh isolate has.
    const gw = clockedGateway(testConfig({ cache_ttl_s: 1 }));
    const down = { DB: failingDb() };
    const tag = unique("closed");
    const res = await gw.call(tagged("/x", uniqueIp(), tag), { env: down });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    const body = await problemOf(res);
    expect(body.code).toBe("policy_unavailable");
    expect(JSON.stringify(body)).not.toMatch(/D1|simulated/);
    expect((await gw.call(tagged("/y", uniqueIp(), tag), { env: down })).status).toBe(503);
    expect(await originLog(tag)).toEqual([]);
    expect(healthOf(gw.runtime, env)).toMatchObject({ status: "degraded", policy: { state: "failing_closed", on_error: "closed" } });

    // Once D1 answers again (after a second of not asking), the policy loads and requests are forwarded.
    gw.clock.nowMs += 1000;
    expect((await gw.call(tagged("/x", uniqueIp(), tag))).status).toBe(200);
    expect(healthOf(gw.runtime, env)).toMatchObject({ status: "ok", policy: { state: "loaded", on_error: "closed" } });
  });

  it("answers 503 policy_unavailable through the Worker's own entry too", async () => {
    const config = testConfig({ cache_ttl_s: 2 });
    const tag = unique("entry");
    const res = await callGateway(tagged("/x", uniqueIp(), tag), { TOLLGATE: config, DB: failingDb() });
    expect((await problemOf(res)).code).toBe("policy_unavailable");
    expect(await originLog(tag)).toEqual([]);
    expect(healthOf(runtimeOf(config), env)).toMatchObject({ policy: { state: "failing_closed" } });
  });

  it('forwards with policy_on_error "open", and health says it fails open', async () => {
    const config = testConfig({ cache_ttl_s: 1, policy_on_error: "open" });
    const tag = unique("open");
    const res = await callGateway(tagged("/x", uniqueIp(), tag), { TOLLGATE: config, DB: failingDb() });
    expect(res.status).toBe(200);
    expect(await originLog(tag)).toHaveLength(1);
    const health = await callGateway(gatewayRequest("/_tollgate/health"), { TOLLGATE: config });
    expect(await health.json()).toMatchObject({ status: "degraded", policy: { state: "failing_open", on_error: "open" } });
  });

  it("records the refusal and forwards in shadow mode", async () => {
    const config = testConfig({ mode: "shadow" });
    const tag = unique("shadow");
    expect((await callGateway(tagged("/x", uniqueIp(), tag), { TOLLGATE: config, DB: failingDb() })).status).toBe(200);
    expect(await originLog(tag)).toHaveLength(1);
  });
});

describe("an isolate that loaded the policy, with D1 down", () => {
  it("keeps refusing a blocked address, network and key past stale_if_error_s, and forwards the others", async () => {
    const blockedIp = uniqueIp();
    const netIp = `172.${16 + Math.floor(Math.random() * 16)}.${Math.floor(Math.random() * 256)}.9`;
    const keyId = randomKeyId();
    await block(`ip:${blockedIp}`);
    await block(`net:${netIp.split(".").slice(0, 3).join(".")}.0/24`);
    await block(`key:${keyId}`);
    const gw = clockedGateway(CONFIG);
    const blockedKey = { authorization: `Bearer tg_${keyId}_${"0".repeat(32)}` };
    expect((await gw.call(gatewayRequest("/x", { ip: blockedIp }))).status).toBe(403);
    expect(healthOf(gw.runtime, env)).toMatchObject({ status: "ok", policy: { state: "loaded" } });

    // Past the TTL and stale_if_error_s (1 + 5 s), with every reload failing.
    const down = { DB: failingDb() };
    gw.clock.nowMs += 60_000;
    const tag = unique("kept");
    for (const request of [tagged("/x", blockedIp, tag), tagged("/x", netIp, tag), new Request(tagged("/x", uniqueIp(), tag), { headers: { ...blockedKey, "x-test-tag": tag } })]) {
      const res = await gw.call(request, { env: down });
      expect(res.status).toBe(403);
      expect((await problemOf(res)).code).toBe("blocked");
    }
    expect(await originLog(tag)).toEqual([]);
    expect(healthOf(gw.runtime, env)).toMatchObject({ status: "ok", policy: { state: "stale", on_error: "closed" } });
    expect((await gw.call(gatewayRequest("/x", { ip: uniqueIp() }), { env: down })).status).toBe(200);

    // An admin write makes the snapshot due for reload; with D1 down the last one still applies.
    gw.runtime.policy.clear();
    gw.clock.nowMs += 3_600_000;
    expect((await gw.call(gatewayRequest("/x", { ip: blockedIp }), { env: down })).status).toBe(403);
  });
});
