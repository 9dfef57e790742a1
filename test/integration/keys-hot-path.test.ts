import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { compileRuntime } from "../../src/runtime";
import { callGateway, gatewayRequest, problemOf, unique, uniqueIp } from "../helpers";
import { countingDb, createTenant, keyedCall, mintKey, testConfig } from "./admin-helpers";

// A long TTL so the whole run stays inside one cache period. Metering is
// written once per interval here, not as a quiet isolate's requests end
// (usage.flush_when_idle, pinned in operations.test.ts): this file counts
// the hot path's own queries.
const CONFIG = testConfig({ cache_ttl_s: 300, usage: { flush_when_idle: false } });

describe("the hot path", () => {
  it("makes no D1 query over 1,000 requests with a cached key", async () => {
    const tenant = unique("hot");
    await createTenant(CONFIG, tenant, { limits: { request: { key: [{ count: 100_000, window_s: 1 }] } } });
    const minted = await mintKey(CONFIG, tenant);
    const { db, counts } = countingDb();
    const ip = uniqueIp();
    // The first request loads the key (one query) and the policy snapshot (overrides and blocks, one batch).
    expect((await keyedCall(minted.key, "/hot", CONFIG, { db, ip })).status).toBe(200);
    expect(counts).toEqual({ prepare: 3, batch: 1, exec: 0 });

    const before = { ...counts };
    for (let i = 0; i < 1_000; i++) {
      const response = await keyedCall(minted.key, "/hot", CONFIG, { db, ip, settle: i === 999 });
      expect(response.status).toBe(200);
      await response.body?.cancel();
    }
    expect(counts).toEqual(before);
  });

  it("refuses made-up keys without a D1 query, and answers the 61st from one address 429 auth_failures", async () => {
    // A mint makes sure the deployment's key-check secret exists and is loaded.
    const seeded = unique("check");
    await createTenant(CONFIG, seeded);
    const real = await mintKey(CONFIG, seeded);
    const ip = uniqueIp();
    const { db, counts } = countingDb();
    const randomKey = () => `tg_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}_${crypto.randomUUID().replace(/-/g, "")}`;
    // Well-formed, but their check does not match: no lookup, from any address.
    for (let i = 0; i < 30; i++) {
      const refused = await keyedCall(randomKey(), "/x", CONFIG, { db, ip: uniqueIp() });
      expect(refused.status).toBe(401);
      expect((await problemOf(refused)).code).toBe("invalid_credential");
    }
    // A real key's id with another secret fails its check too.
    const forged = `${real.key.slice(0, -8)}${real.key.at(-8) === "0" ? "1" : "0"}${real.key.slice(-7)}`;
    expect((await keyedCall(forged, "/x", CONFIG, { db, ip: uniqueIp() })).status).toBe(401);
    expect(counts.prepare).toBe(0);
    for (let i = 0; i < 60; i++) {
      const refused = await keyedCall(randomKey(), "/x", CONFIG, { db, ip });
      expect(refused.status).toBe(401);
      expect((await problemOf(refused)).code).toBe("invalid_credential");
    }
    expect(counts.prepare).toBe(0);

    const before = { ...counts };
    const gated = await keyedCall(randomKey(), "/x", CONFIG, { db, ip });
    expect(gated.status).toBe(429);
    const body = await problemOf(gated);
    expect(body.code).toBe("auth_failures");
    expect(body.retry_after_ms).toBeGreaterThan(0);
    expect(Number(gated.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(body)).not.toContain(ip);
    expect(counts).toEqual(before);

    // Even a good key from that address is refused before any lookup; other addresses are unaffected.
    const tenant = unique("gate");
    await createTenant(CONFIG, tenant);
    const minted = await mintKey(CONFIG, tenant);
    expect((await keyedCall(minted.key, "/x", CONFIG, { db, ip })).status).toBe(429);
    expect(counts).toEqual(before);
    expect((await keyedCall(minted.key, "/x", CONFIG, { ip: uniqueIp() })).status).toBe(200);
    // Anonymous requests from the address carry no credential and pass the gate.
    expect((await callGateway(gatewayRequest("/x", { ip }), { TOLLGATE: CONFIG })).status).toBe(200);
  });

  it("answers a made-up key with nothing handed to waitUntil, and takes a real key's first request on to its lookup", async () => {
    const seeded = unique("quiet");
    await createTenant(CONFIG, seeded);
    const real = await mintKey(CONFIG, seeded);
    const testEnv = { ...env, TOLLGATE: CONFIG } as unknown as Env;
    // A held clock: no flush of usage or traffic falls due between the requests.
    const clock = { nowMs: Date.now() };
    const runtime = compileRuntime(testEnv, { clock: () => clock.nowMs });
    const ctx = createExecutionContext();
    const handed: Promise<unknown>[] = [];
    const counting = { waitUntil: (work: Promise<unknown>) => (handed.push(work), ctx.waitUntil(work)), passThroughOnException: () => {} };
    const keyed = (key: string) => gatewayRequest("/quiet", { headers: { authorization: `Bearer ${key}` }, ip: uniqueIp() });
    const randomKey = () => `tg_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}_${crypto.randomUUID().replace(/-/g, "")}`;
    // The runtime's first request loads the key-check secret and the policy snapshot from D1: kept alive.
    expect((await runtime.gateway(keyed(randomKey()), testEnv, counting)).status).toBe(401);
    expect(handed.length).toBeGreaterThan(0);
    await waitOnExecutionContext(ctx);
    handed.length = 0;
    // Its check is the only thing a made-up key waits on, and an HMAC waits on no I/O: nothing to keep alive.
    for (let i = 0; i < 5; i++) {
      const refused = await runtime.gateway(keyed(randomKey()), testEnv, counting);
      expect(refused.status).toBe(401);
      expect((await problemOf(refused)).code).toBe("invalid_credential");
    }
    expect(handed).toHaveLength(0);
    // Past the policy snapshot's TTL the block step waits on D1 first; the key's check comes after it, and still refuses.
    clock.nowMs += 301_000;
    const late = await runtime.gateway(keyed(randomKey()), testEnv, counting);
    expect(late.status).toBe(401);
    expect((await problemOf(late)).code).toBe("invalid_credential");
    await waitOnExecutionContext(ctx);
    // A real key this runtime has not seen passes its check and goes on to its lookup in D1 (its load is handed to waitUntil).
    const admitted = await runtime.gateway(keyed(real.key), testEnv, counting);
    expect(admitted.status).toBe(200);
    expect(handed.length).toBeGreaterThan(0);
    await admitted.arrayBuffer();
    await waitOnExecutionContext(ctx);
  });

  it("charges malformed keys to the gate without querying D1", async () => {
    const ip = uniqueIp();
    const { db, counts } = countingDb();
    for (let i = 0; i < 60; i++) expect((await keyedCall(`bogus-${i}`, "/x", CONFIG, { db, ip })).status).toBe(401);
    expect((await keyedCall("bogus", "/x", CONFIG, { db, ip })).status).toBe(429);
    expect(counts).toEqual({ prepare: 0, batch: 0, exec: 0 });
  });
});
