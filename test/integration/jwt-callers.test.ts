// JWT callers through the Worker (issue 13): keys generated here,
// a key set served by the recording origin, the gateway on a clock the test
// sets (tokens are signed relative to 2030-01-01, src: test/identity/jwt-helpers.ts).
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/utils/crypto";
import { clockedGateway, gatewayRequest, originLog, problemOf, unique, uniqueIp } from "../helpers";
import { jwksAddress, newKey, publishJwks, setJwksStatus, signToken, T0_MS, type TestKey } from "../identity/jwt-helpers";
import { adminCall, countingDb, createTenant, jsonOf, testConfig } from "./admin-helpers";

const ADMIN = testConfig();

interface Issuer {
  readonly iss: string;
  readonly key: TestKey;
  readonly jwks: { name: string; url: string };
}

async function issuer(alg = "RS256"): Promise<Issuer> {
  const key = await newKey(alg);
  const jwks = jwksAddress();
  await publishJwks(jwks.name, [key.jwk]);
  return { iss: `https://${unique("idp")}.example/`, key, jwks };
}

function jwtConfig(issuers: readonly Issuer[], extra: Record<string, unknown> = {}, issuerExtra: Record<string, unknown> = {}): Record<string, unknown> {
  return testConfig({
    jwt: { issuers: issuers.map((i) => ({ issuer: i.iss, jwks_url: i.jwks.url, tenant_claim: "org_id", ...issuerExtra })) },
    ...extra,
  });
}

function bearer(token: string, ip = uniqueIp(), tag?: string): Request {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (tag !== undefined) headers["x-test-tag"] = tag;
  return gatewayRequest("/api/thing", { ip, headers });
}

async function callerKeyOf(iss: string, sub: string): Promise<string> {
  return `jwt:${await sha256Hex(`${iss}\n${sub}`)}`;
}

describe("JWT callers", () => {
  it("admits a valid token, tells the origin the caller digest, and never a claim", async () => {
    const idp = await issuer();
    const gateway = clockedGateway(jwtConfig([idp]), {}, T0_MS);
    const token = await signToken(idp.key, { iss: idp.iss, sub: "alice@example.com" });
    const tag = unique("jwt-ok");
    const res = await gateway.call(bearer(token, uniqueIp(), tag), { settle: true });
    expect(res.status).toBe(200);
    const seen = (await originLog(tag))[0]!;
    expect(seen.headers["x-tollgate-caller"]).toBe(await callerKeyOf(idp.iss, "alice@example.com"));
    expect(seen.headers["x-tollgate-key-id"]).toBeUndefined();
    expect(seen.headers["x-tollgate-tenant"]).toBeUndefined();
    expect(res.headers.get("ratelimit-policy")).toContain("request-jwt-1s");
  });

  for (const alg of ["ES256", "EdDSA"]) {
    it(`admits a ${alg} token from a JWKS`, async () => {
      const idp = await issuer(alg);
      const gateway = clockedGateway(jwtConfig([idp]), {}, T0_MS);
      expect((await gateway.call(bearer(await signToken(idp.key, { iss: idp.iss })), { settle: true })).status).toBe(200);
    });
  }

  it("limits each caller by issuer and subject, two issuers with one subject apart", async () => {
    const a = await issuer();
    const b = await issuer();
    const config = jwtConfig([a, b], { categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, request: { limits: { jwt: [{ count: 2, window_s: 60 }] } } } });
    const gateway = clockedGateway(config, {}, T0_MS);
    const fromA = await signToken(a.key, { iss: a.iss, sub: "same" });
    const fromB = await signToken(b.key, { iss: b.iss, sub: "same" });
    expect((await gateway.call(bearer(fromA), { settle: true })).status).toBe(200);
    expect((await gateway.call(bearer(fromA), { settle: true })).status).toBe(200);
    const refused = await gateway.call(bearer(fromA), { settle: true });
    expect(refused.status).toBe(429);
    expect(await problemOf(refused)).toMatchObject({ code: "rate_limited", category: "request" });
    // The other issuer's "same" is another caller.
    expect((await gateway.call(bearer(fromB), { settle: true })).status).toBe(200);
  });

  it("charges the tenant its claim names, with the tenant's jwt limits, and refuses an unknown tenant 403", async () => {
    const idp = await issuer();
    const tenant = unique("jwt-tenant");
    await createTenant(ADMIN, tenant, { limits: { request: { jwt: [{ count: 1, window_s: 60 }] } } });
    const gateway = clockedGateway(jwtConfig([idp]), {}, T0_MS);
    const token = await signToken(idp.key, { iss: idp.iss, sub: "bob", claims: { org_id: tenant } });
    const tag = unique("jwt-tenant");
    expect((await gateway.call(bearer(token, uniqueIp(), tag), { settle: true })).status).toBe(200);
    expect((await originLog(tag))[0]!.headers["x-tollgate-tenant"]).toBe(tenant);
    expect((await gateway.call(bearer(token), { settle: true })).status).toBe(429);

    const stranger = await signToken(idp.key, { iss: idp.iss, sub: "carol", claims: { org_id: unique("no-such-tenant") } });
    const unknown = await gateway.call(bearer(stranger), { settle: true });
    expect(unknown.status).toBe(403);
    const body = await problemOf(unknown);
    expect(body.code).toBe("tenant_unknown");
    expect(JSON.stringify(body)).not.toContain("carol");
    const badClaim = await signToken(idp.key, { iss: idp.iss, sub: "dave", claims: { org_id: "Not A Slug" } });
    expect((await problemOf(await gateway.call(bearer(badClaim), { settle: true }))).code).toBe("tenant_unknown");
  });

  it("serves a hot JWT caller and the tenant its claim names with no D1 query (claims, tenant and policy cached)", async () => {
    const idp = await issuer();
    const tenant = unique("jwt-hot");
    await createTenant(ADMIN, tenant, { limits: { request: { jwt: [{ count: 100_000, window_s: 1 }] } } });
    const { db, counts } = countingDb();
    // Metering once per interval (not as a quiet isolate's requests end): this test counts the hot path's own queries.
    const gateway = clockedGateway(jwtConfig([idp], { cache_ttl_s: 300, usage: { flush_when_idle: false } }), { DB: db }, T0_MS);
    const token = await signToken(idp.key, { iss: idp.iss, sub: "hot", claims: { org_id: tenant } });
    const ip = uniqueIp();
    // The first request loads the tenant and the policy snapshot.
    expect((await gateway.call(bearer(token, ip), { settle: true })).status).toBe(200);
    expect(counts.prepare).toBeGreaterThan(0);
    const before = { ...counts };
    for (let i = 0; i < 200; i++) {
      const response = await gateway.call(bearer(token, ip), { settle: i === 199 });
      expect(response.status).toBe(200);
      await response.body?.cancel();
    }
    expect(counts).toEqual(before);
  });

  it("refuses bad tokens 401 without naming a claim, and 60 of them from one address close the gate", async () => {
    const idp = await issuer();
    const other = await newKey("RS256", idp.key.kid);
    const gateway = clockedGateway(jwtConfig([idp]), {}, T0_MS);
    const forged = await signToken(other, { iss: idp.iss, sub: "mallory" });
    const expired = await signToken(idp.key, { iss: idp.iss, sub: "late", expInS: -3600 });
    const unknownIssuer = await signToken(idp.key, { iss: "https://elsewhere.example/", sub: "x" });
    const noSub = await signToken(idp.key, { iss: idp.iss, sub: null });
    const ip = uniqueIp();
    for (const [token, code] of [
      [forged, "invalid_credential"],
      [expired, "credential_expired"],
      [unknownIssuer, "invalid_credential"],
      [noSub, "invalid_credential"],
      ["a.b.c", "invalid_credential"],
      ["not-a-token", "invalid_credential"],
    ] as const) {
      const res = await gateway.call(bearer(token, ip), { settle: true });
      expect(res.status, code).toBe(401);
      const body = await problemOf(res);
      expect(body.code).toBe(code);
      expect(JSON.stringify(body)).not.toMatch(/mallory|late|elsewhere/);
    }
    for (let i = 6; i < 60; i++) expect((await gateway.call(bearer(forged, ip), { settle: true })).status).toBe(401);
    const closed = await gateway.call(bearer(forged, ip), { settle: true });
    expect(closed.status).toBe(429);
    expect((await problemOf(closed)).code).toBe("auth_failures");
  });

  it("answers 503 auth_unavailable when the key set was never fetched and cannot be, then serves once it can", async () => {
    const idp = await issuer();
    await setJwksStatus(idp.jwks.name, 503);
    const gateway = clockedGateway(jwtConfig([idp]), {}, T0_MS);
    const token = await signToken(idp.key, { iss: idp.iss });
    const res = await gateway.call(bearer(token), { settle: true });
    expect(res.status).toBe(503);
    expect((await problemOf(res)).code).toBe("auth_unavailable");
    await setJwksStatus(idp.jwks.name, 200);
    gateway.clock.nowMs += 6_000; // past the failed fetch's back-off
    expect((await gateway.call(bearer(token), { settle: true })).status).toBe(200);
  });

  it("applies an override and a block set for a jwt: caller key", async () => {
    const idp = await issuer();
    const config = jwtConfig([idp], { cache_ttl_s: 1 });
    const gateway = clockedGateway(config, {}, T0_MS);
    const token = await signToken(idp.key, { iss: idp.iss, sub: "erin" });
    const callerKey = await callerKeyOf(idp.iss, "erin");
    await jsonOf(await adminCall("PUT", `/overrides/${callerKey}`, ADMIN, { body: { limits: { request: [{ count: 1, window_s: 3600 }] } } }), 201);
    expect((await gateway.call(bearer(token), { settle: true })).status).toBe(200);
    expect((await gateway.call(bearer(token), { settle: true })).status).toBe(429);
    await jsonOf(await adminCall("POST", "/blocks", ADMIN, { body: { target: callerKey, reason: "abuse" } }), 201);
    gateway.clock.nowMs += 2_000; // the snapshot reloads after cache_ttl_s
    const blocked = await gateway.call(bearer(token), { settle: true });
    expect(blocked.status).toBe(403);
    expect((await problemOf(blocked)).code).toBe("blocked");
  });
});
