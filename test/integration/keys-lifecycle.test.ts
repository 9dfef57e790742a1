import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/utils/crypto";
import { callGateway, clockedGateway, gatewayRequest, originLog, problemOf, unique, uniqueIp } from "../helpers";
import { adminCall, createTenant, failingDb, jsonOf, keyedCall, mintKey, testConfig } from "./admin-helpers";

const CONFIG = testConfig({ usage: { flush_interval_s: 0.05 } });

describe("managed keys through the gateway", () => {
  it("mints a key that works at once, lists it without its secret, and refuses it once revoked", async () => {
    const tenant = unique("acme");
    await createTenant(CONFIG, tenant);
    const minted = await mintKey(CONFIG, tenant, { name: "ci" });
    expect(minted.key).toMatch(/^tg_[0-9a-z]{12}_[0-9a-z]{32}$/);
    expect(minted.key.startsWith(`tg_${minted.id}_`)).toBe(true);
    expect(minted.key.startsWith(minted.prefix)).toBe(true);

    const tag = unique("use");
    const used = await keyedCall(minted.key, "/things", CONFIG, { tag });
    expect(used.status).toBe(200);
    const [seen] = await originLog(tag);
    expect(seen?.headers["x-tollgate-tenant"]).toBe(tenant);
    expect(seen?.headers["x-tollgate-key-id"]).toBe(minted.id);

    // X-Api-Key works as well as Authorization: Bearer.
    expect((await keyedCall(minted.key, "/things", CONFIG, { header: "x-api-key" })).status).toBe(200);

    const digest = await sha256Hex(minted.key);
    const secret = minted.key.slice(minted.prefix.length);
    const listing = await adminCall("GET", `/tenants/${tenant}/keys`, CONFIG);
    const listingText = await listing.clone().text();
    const { keys } = await jsonOf<{ keys: Record<string, unknown>[] }>(listing, 200);
    expect(keys).toHaveLength(1);
    expect(Object.keys(keys[0] ?? {}).sort()).toEqual(
      ["created_at", "expires_at", "id", "last_used_at", "last_used_from", "limits", "name", "prefix", "revoked_at", "tenant", "use_count"].sort(),
    );
    for (const leaked of [minted.key, digest, secret]) expect(listingText).not.toContain(leaked);

    const revoked = await jsonOf(await adminCall("DELETE", `/keys/${minted.id}`, CONFIG), 200);
    expect(typeof revoked.revoked_at).toBe("string");
    const refused = await keyedCall(minted.key, "/things", CONFIG);
    expect(refused.status).toBe(401);
    const body = await problemOf(refused);
    expect(body.code).toBe("credential_revoked");
    expect(JSON.stringify(body)).not.toContain(minted.key);

    const audit = await adminCall("GET", `/audit?tenant=${tenant}`, CONFIG);
    const auditText = await audit.clone().text();
    const { events } = await jsonOf<{ events: { kind: string; actor: string }[] }>(audit, 200);
    expect(events.map((e) => e.kind)).toEqual(["key_revoked", "key_minted", "tenant_created"]);
    expect(events.every((e) => e.actor === "admin")).toBe(true);
    for (const leaked of [minted.key, digest, secret, "test-admin-token"]) expect(auditText).not.toContain(leaked);
  });

  it("refuses a key after its expiry with credential_expired", async () => {
    const tenant = unique("exp");
    await createTenant(CONFIG, tenant);
    const expiresAtMs = Date.now() + 3_600_000;
    const minted = await mintKey(CONFIG, tenant, { name: "short", expires_at: new Date(expiresAtMs).toISOString() });
    // The gateway's clock is the test's: 1 ms before the expiry, then at it.
    const gateway = clockedGateway(CONFIG, {}, expiresAtMs - 1);
    const call = () => gateway.call(gatewayRequest("/x", { ip: uniqueIp(), headers: { authorization: `Bearer ${minted.key}` } }));
    expect((await call()).status).toBe(200);
    gateway.clock.nowMs += 1;
    const refused = await call();
    expect(refused.status).toBe(401);
    expect((await problemOf(refused)).code).toBe("credential_expired");
  });

  it("refuses a malformed key and an unknown one with invalid_credential", async () => {
    for (const credential of ["not-a-key", "tg_short_secret", `tg_${"a".repeat(12)}_${"b".repeat(31)}`, `TG_${"a".repeat(12)}_${"b".repeat(32)}`, ""]) {
      const refused = await keyedCall(credential, "/x", CONFIG, { ip: uniqueIp() });
      expect(refused.status, credential).toBe(401);
      const body = await problemOf(refused);
      expect(body.code).toBe("invalid_credential");
    }
    const unknown = await keyedCall(`tg_${"a".repeat(12)}_${"b".repeat(32)}`, "/x", CONFIG, { ip: uniqueIp() });
    expect((await problemOf(unknown)).code).toBe("invalid_credential");
  });

  it("answers credential_required without a credential when anonymous callers are denied, and admits them otherwise", async () => {
    const deny = testConfig({ anonymous: "deny" });
    const refused = await callAnonymous(deny);
    expect(refused.status).toBe(401);
    expect((await problemOf(refused)).code).toBe("credential_required");
    expect((await callAnonymous(CONFIG)).status).toBe(200);
  });

  it("stops admitting a key when its tenant is deleted", async () => {
    const tenant = unique("gone");
    await createTenant(CONFIG, tenant);
    const minted = await mintKey(CONFIG, tenant);
    expect((await keyedCall(minted.key, "/x", CONFIG)).status).toBe(200);
    const deleted = await jsonOf(await adminCall("DELETE", `/tenants/${tenant}`, CONFIG), 200);
    expect(deleted).toEqual({ tenant, deleted: true, keys_deleted: 1 });
    const refused = await keyedCall(minted.key, "/x", CONFIG);
    expect((await problemOf(refused)).code).toBe("invalid_credential");
    const row = await env.DB.prepare("select count(*) as n from api_keys where id = ?").bind(minted.id).first<{ n: number }>();
    expect(row?.n).toBe(0);
  });

  it("records use count, last use and address, flushed in the background", async () => {
    const tenant = unique("usage");
    await createTenant(CONFIG, tenant);
    const minted = await mintKey(CONFIG, tenant);
    const ip = uniqueIp();
    // On a held clock: the last use comes after the flush interval (50 ms) with nothing slept.
    const gw = clockedGateway(CONFIG);
    const use = () => gw.call(gatewayRequest("/u", { ip, headers: { authorization: `Bearer ${minted.key}` } }), { settle: true });
    for (let i = 0; i < 3; i++) expect((await use()).status).toBe(200);
    gw.clock.nowMs += 60;
    expect((await use()).status).toBe(200);

    const { keys } = await jsonOf<{ keys: { use_count: number; last_used_at: string; last_used_from: string }[] }>(
      await adminCall("GET", `/tenants/${tenant}/keys`, CONFIG),
      200,
    );
    expect(keys[0]?.use_count).toBe(4);
    expect(keys[0]?.last_used_from).toBe(ip);
    expect(Date.parse(keys[0]?.last_used_at ?? "")).toBe(gw.clock.nowMs);
  });
});

describe("key usage on a quiet gateway (issue 40 item 9)", () => {
  // The default interval: on a quiet gateway no later request may come for minutes to carry a flush.
  const QUIET = testConfig({ usage: { flush_interval_s: 60 } });

  async function keyRow(tenant: string) {
    const { keys } = await jsonOf<{ keys: { use_count: number; last_used_at: string | null; last_used_from: string | null }[] }>(await adminCall("GET", `/tenants/${tenant}/keys`, QUIET), 200);
    return keys[0];
  }

  it("writes a key's use with metering as its request ends: one request shows in D1 at once, not after the next request past the interval", async () => {
    const tenant = unique("quiet-key");
    await createTenant(QUIET, tenant);
    const minted = await mintKey(QUIET, tenant);
    const ip = uniqueIp();
    const gw = clockedGateway(QUIET);
    const use = () => gw.call(gatewayRequest("/q", { ip, headers: { authorization: `Bearer ${minted.key}` } }), { settle: true });
    expect((await use()).status).toBe(200);
    // Nothing else is asked of the gateway: the one request's own end wrote it, beside its metering.
    expect(await keyRow(tenant)).toMatchObject({ use_count: 1, last_used_from: ip, last_used_at: new Date(gw.clock.nowMs).toISOString() });
    const metered = await env.DB.prepare("select value from usage_monthly where tenant = ? and metric = 'requests'").bind(tenant).first<{ value: number }>();
    expect(metered?.value).toBe(1);
  });

  it("keeps a key's use through a flush that fails and writes it with the next one", async () => {
    const tenant = unique("quiet-key-fail");
    await createTenant(QUIET, tenant);
    const minted = await mintKey(QUIET, tenant);
    const gw = clockedGateway(QUIET);
    const request = () => gatewayRequest("/q", { ip: uniqueIp(), headers: { authorization: `Bearer ${minted.key}` } });
    // The key's record is cached by the first call, so the second can reach the origin with D1 down; its flush fails.
    expect((await gw.call(request(), { settle: true })).status).toBe(200);
    expect((await gw.call(request(), { settle: true, env: { DB: failingDb() } })).status).toBe(200);
    expect(await keyRow(tenant)).toMatchObject({ use_count: 1 });
    expect((await gw.call(request(), { settle: true })).status).toBe(200);
    expect(await keyRow(tenant)).toMatchObject({ use_count: 3 });
  });
});

function callAnonymous(config: Record<string, unknown>): Promise<Response> {
  return callGateway(gatewayRequest("/anon", { ip: uniqueIp() }), { TOLLGATE: config });
}
