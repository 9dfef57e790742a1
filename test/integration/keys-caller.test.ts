// How the authenticate step builds x.caller: limits compiled once per cache
// load, the right override picked. The step is built alone on the Worker's
// runtime for the config (so admin writes through the Worker reach its
// caches), with real D1, and run on one Exchange.
import { describe, expect, it } from "vitest";
import type { Caller, Decision } from "../../src/exchange";
import { authenticate } from "../../src/limits/authenticate";
import type { Runtime } from "../../src/runtime";
import { exchangeFor, runtimeOf, unique, uniqueIp } from "../helpers";
import { adminCall, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

// upload: a category keys limit here with no default of its own (a limit must name a category the config defines).
const CONFIG = testConfig({ categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, upload: {} } });

interface Outcome {
  status: number;
  caller: Caller;
  shadow: string[];
  decision: Decision;
}

async function callerFor(runtime: Runtime, clientKey: string, key?: string, headers: Record<string, string> = key === undefined ? {} : { authorization: `Bearer ${key}` }): Promise<Outcome> {
  const config = runtime.config!;
  const step = authenticate({ anonymous: config.anonymous, verifier: runtime, gate: runtime.authGate, policy: runtime.policy });
  const x = exchangeFor(runtime, new Request("http://gateway.test/x", { headers }), { clientKey });
  // As the gateway runs a step: again when its promise settled in turn with null (a key's check, src/limits/check.ts).
  let refusal = null;
  for (;;) {
    const r = step(x);
    const again = x.settlesInTurn;
    x.settlesInTurn = false;
    refusal = await r;
    if (refusal !== null || !again) break;
  }
  return { status: refusal?.status ?? 200, caller: x.caller, shadow: x.shadow ?? [], decision: x.decision };
}

const enforce = (): Runtime => runtimeOf(CONFIG);

describe("the caller authenticate() sets", () => {
  it("carries a key's own limits, its tenant's limits and quota, compiled", async () => {
    const tenant = unique("caller");
    await createTenant(CONFIG, tenant, {
      limits: { request: { key: [{ count: 10, window_s: 1 }], tenant: [{ count: 30, window_s: 2, burst: 40 }] } },
      quota: { bytes: { soft: 5, hard: 10 } },
    });
    const minted = await mintKey(CONFIG, tenant, { name: "own", limits: { request: [{ count: 5, window_s: 1 }], upload: [] } });
    const { status, caller } = await callerFor(enforce(), uniqueIp(), minted.key);
    expect(status).toBe(200);
    expect(caller).toMatchObject({ kind: "key", keyId: minted.id, callerKey: `key:${minted.id}`, tenant: { slug: tenant, quota: { bytes: { soft: 5, hard: 10 } } }, override: null });
    if (caller.kind !== "key") throw new Error("not a key caller");
    expect(caller.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(caller.keyLimits?.request?.[0]).toMatchObject({ count: 5, windowS: 1, burst: 5, windowMs: 1000 });
    expect(caller.keyLimits?.upload).toEqual([]);
    expect(caller.tenant.limits?.request?.key?.[0]).toMatchObject({ count: 10, windowMs: 1000 });
    expect(caller.tenant.limits?.request?.tenant?.[0]).toMatchObject({ count: 30, windowMs: 2000, burst: 40 });
  });

  it("picks the override for key:<id>, and an admin write reaches this isolate at once", async () => {
    const tenant = unique("ovr");
    await createTenant(CONFIG, tenant);
    const minted = await mintKey(CONFIG, tenant);
    expect((await callerFor(enforce(), uniqueIp(), minted.key)).caller.override).toBeNull();
    await jsonOf(await adminCall("PUT", `/overrides/key:${minted.id}`, CONFIG, { body: { limits: { request: [{ count: 3, window_s: 1 }] } } }), 201);
    const { caller } = await callerFor(enforce(), uniqueIp(), minted.key);
    expect(caller.override?.request?.[0]).toMatchObject({ count: 3, windowMs: 1000 });
    await jsonOf(await adminCall("DELETE", `/overrides/key:${minted.id}`, CONFIG), 200);
    expect((await callerFor(enforce(), uniqueIp(), minted.key)).caller.override).toBeNull();
  });

  it("picks the override for ip:<clientKey> for an anonymous caller, an IPv6 address by its /64", async () => {
    const ip = uniqueIp();
    await jsonOf(await adminCall("PUT", `/overrides/ip:${ip}`, CONFIG, { body: { limits: { request: [{ count: 2, window_s: 1 }] } } }), 201);
    const anonymous = await callerFor(enforce(), ip);
    expect(anonymous.caller).toMatchObject({ kind: "anonymous", override: { request: [{ count: 2 }] } });
    expect((await callerFor(enforce(), uniqueIp())).caller.override).toBeNull();

    const put = await jsonOf<{ caller_key: string }>(
      await adminCall("PUT", `/overrides/${encodeURIComponent("ip:2001:DB8:0:7::1")}`, CONFIG, { body: { limits: { request: [] } } }),
      201,
    );
    expect(put.caller_key).toBe("ip:2001:db8:0:7::/64");
    expect((await callerFor(enforce(), "2001:db8:0:7::/64")).caller.override).toEqual({ request: [] });
  });

  it("follows a tenant's new limits at once on this isolate", async () => {
    const tenant = unique("relimit");
    await createTenant(CONFIG, tenant, { limits: { request: { key: [{ count: 10, window_s: 1 }] } } });
    const minted = await mintKey(CONFIG, tenant);
    const first = await callerFor(enforce(), uniqueIp(), minted.key);
    expect(first.caller.kind === "key" && first.caller.tenant.limits?.request?.key?.[0]?.count).toBe(10);
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}/limits`, CONFIG, { body: { limits: { request: { key: [{ count: 20, window_s: 1 }] } } } }), 200);
    const second = await callerFor(enforce(), uniqueIp(), minted.key);
    expect(second.caller.kind === "key" && second.caller.tenant.limits?.request?.key?.[0]?.count).toBe(20);
  });

  it("records a refusal in shadow mode and goes on as anonymous", async () => {
    const shadow = runtimeOf({ ...CONFIG, mode: "shadow", anonymous: "deny" });
    const unknown = await callerFor(shadow, uniqueIp(), `tg_${"e".repeat(12)}_${"f".repeat(32)}`);
    expect(unknown).toMatchObject({ status: 200, caller: { kind: "anonymous" }, shadow: ["invalid_credential"], decision: "admitted" });
    const none = await callerFor(shadow, uniqueIp());
    expect(none).toMatchObject({ status: 200, caller: { kind: "anonymous" }, shadow: ["credential_required"] });
  });

  it("sets the decision to the refusal code in enforce mode", async () => {
    const ip = uniqueIp();
    const refused = await callerFor(enforce(), ip, undefined, { "x-api-key": "nope" });
    expect(refused.status).toBe(401);
    expect(refused.decision).toBe("invalid_credential");
  });
});
