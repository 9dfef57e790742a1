// Verification with static keys: every way a token is refused, the caller key,
// the tenant claim. Time is T0_MS and explicit offsets; nothing waits.
import { base64url, exportJWK, exportSPKI, SignJWT, UnsecuredJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { looksLikeJwt, MAX_JWT_CHARS } from "../../src/identity/jwt-token";
import { compileJwtConfig, type JwtOutcome, type JwtVerifier } from "../../src/identity/jwt-verifier";
import { expectedCallerKey, jwtConfig, newKey, signToken, T0_MS, T0_S, type TestKey } from "./jwt-helpers";

const ISS = "https://auth.example.com/";
const OTHER_ISS = "https://login.other.example/";
const INVALID: JwtOutcome = { ok: false, code: "invalid_credential" };
const EXPIRED: JwtOutcome = { ok: false, code: "credential_expired" };

let rsa: TestKey;
let ec: TestKey;
let ed: TestKey;
let otherRsa: TestKey;
let signatureChecks = 0;

function verifierFor(issuers: unknown[], extra: Record<string, unknown> = {}): JwtVerifier {
  return compileJwtConfig(jwtConfig({ issuers, ...extra }), { staleIfErrorS: 300, onSignatureCheck: () => void (signatureChecks += 1) });
}

beforeAll(async () => {
  [rsa, ec, ed, otherRsa] = await Promise.all([newKey("RS256"), newKey("ES256"), newKey("EdDSA"), newKey("RS256")]);
});

describe("JWT verification", () => {
  it("accepts a valid token of each default algorithm as jwt:<sha256 of iss LF sub>", async () => {
    const verifier = verifierFor([{ issuer: ISS, keys: [rsa.jwk, ec.jwk, ed.jwk] }]);
    for (const key of [rsa, ec, ed]) {
      const outcome = await verifier.verify(await signToken(key, { iss: ISS, sub: "alice" }), T0_MS);
      expect(outcome, key.alg).toEqual({
        ok: true,
        callerKey: await expectedCallerKey(ISS, "alice"),
        issuer: ISS,
        expiresAtMs: (T0_S + 3600) * 1000,
        tenant: null,
        tenantClaimInvalid: false,
      });
    }
  });

  it("refuses a forged signature: another key with the same kid, or a changed payload", async () => {
    const verifier = verifierFor([{ issuer: ISS, keys: [rsa.jwk] }]);
    const forged = await signToken({ ...otherRsa, kid: rsa.kid }, { iss: ISS });
    expect(await verifier.verify(forged, T0_MS)).toEqual(INVALID);
    const [header, , signature] = (await signToken(rsa, { iss: ISS, sub: "alice" })).split(".");
    const payload = base64url.encode(JSON.stringify({ iss: ISS, sub: "admin", exp: T0_S + 3600 }));
    expect(await verifier.verify(`${header}.${payload}.${signature}`, T0_MS)).toEqual(INVALID);
  });

  it("refuses an issuer that is not configured, or differs by a character", async () => {
    const verifier = verifierFor([{ issuer: ISS, keys: [rsa.jwk] }]);
    expect(await verifier.verify(await signToken(rsa, { iss: "https://evil.example/" }), T0_MS)).toEqual(INVALID);
    expect(await verifier.verify(await signToken(rsa, { iss: ISS.slice(0, -1) }), T0_MS)).toEqual(INVALID);
    expect(await verifier.verify(await signToken(rsa, { iss: ISS, claims: { iss: 42 } }), T0_MS)).toEqual(INVALID);
  });

  it("refuses a kid the issuer does not have, and an alg that does not fit the key", async () => {
    const verifier = verifierFor([{ issuer: ISS, keys: [rsa.jwk, ec.jwk] }]);
    expect(await verifier.verify(await signToken(otherRsa, { iss: ISS }), T0_MS)).toEqual(INVALID);
    // Signed by the EC key, but naming the RSA key's kid: no RSA key takes ES256.
    expect(await verifier.verify(await signToken(ec, { iss: ISS, header: { kid: rsa.kid } }), T0_MS)).toEqual(INVALID);
  });

  it("refuses an algorithm the issuer does not list, even with the right key", async () => {
    const verifier = verifierFor([{ issuer: ISS, keys: [rsa.jwk, ec.jwk], algorithms: ["ES256"] }]);
    expect(await verifier.verify(await signToken(rsa, { iss: ISS }), T0_MS)).toEqual(INVALID);
    expect((await verifier.verify(await signToken(ec, { iss: ISS }), T0_MS)).ok).toBe(true);
  });

  it("checks the audience when configured: one of the token's must be listed", async () => {
    const verifier = verifierFor([{ issuer: ISS, keys: [rsa.jwk], audiences: ["api", "api2"] }]);
    expect(await verifier.verify(await signToken(rsa, { iss: ISS, aud: "web" }), T0_MS)).toEqual(INVALID);
    expect(await verifier.verify(await signToken(rsa, { iss: ISS }), T0_MS)).toEqual(INVALID);
    expect((await verifier.verify(await signToken(rsa, { iss: ISS, aud: "api2" }), T0_MS)).ok).toBe(true);
    expect((await verifier.verify(await signToken(rsa, { iss: ISS, aud: ["web", "api"] }), T0_MS)).ok).toBe(true);
    const open = verifierFor([{ issuer: ISS, keys: [rsa.jwk] }]);
    expect((await open.verify(await signToken(rsa, { iss: ISS, aud: "anything" }), T0_MS)).ok).toBe(true);
  });

  it("answers credential_expired past exp plus the skew, to the millisecond", async () => {
    const verifier = verifierFor([{ issuer: ISS, keys: [rsa.jwk], clock_skew_s: 60 }]);
    const token = await signToken(rsa, { iss: ISS, expInS: 100 });
    const expiredAtMs = (T0_S + 100 + 60) * 1000;
    expect(await verifier.verify(token, expiredAtMs)).toEqual(EXPIRED);
    const fresh = verifierFor([{ issuer: ISS, keys: [rsa.jwk], clock_skew_s: 60 }]);
    expect((await fresh.verify(token, expiredAtMs - 1)).ok).toBe(true);
  });

  it("requires exp", async () => {
    const verifier = verifierFor([{ issuer: ISS, keys: [rsa.jwk] }]);
    expect(await verifier.verify(await signToken(rsa, { iss: ISS, expInS: null }), T0_MS)).toEqual(INVALID);
  });

  it("refuses a token before nbf minus the skew", async () => {
    const verifier = verifierFor([{ issuer: ISS, keys: [rsa.jwk], clock_skew_s: 30 }]);
    const token = await signToken(rsa, { iss: ISS, nbfInS: 100 });
    expect(await verifier.verify(token, (T0_S + 69) * 1000 + 999)).toEqual(INVALID);
    expect((await verifier.verify(token, (T0_S + 70) * 1000)).ok).toBe(true);
  });

  it("refuses alg none, signed or not", async () => {
    const verifier = verifierFor([{ issuer: ISS, keys: [rsa.jwk] }]);
    const unsecured = new UnsecuredJWT({ iss: ISS, sub: "alice", exp: T0_S + 3600 }).encode();
    expect(await verifier.verify(unsecured, T0_MS)).toEqual(INVALID);
    const [header, payload] = unsecured.split(".");
    expect(await verifier.verify(`${header}.${payload}.AAAA`, T0_MS)).toEqual(INVALID);
    const withKid = base64url.encode(JSON.stringify({ alg: "none", kid: rsa.kid }));
    expect(await verifier.verify(`${withKid}.${payload}.AAAA`, T0_MS)).toEqual(INVALID);
  });

  it("refuses HS256 signed with the issuer's public key as the secret (PEM or JWK bytes)", async () => {
    const verifier = verifierFor([{ issuer: ISS, keys: [rsa.jwk] }]);
    const secrets = [await exportSPKI(rsa.publicKey), JSON.stringify(rsa.jwk), JSON.stringify(await exportJWK(rsa.publicKey))];
    for (const secret of secrets) {
      const token = await new SignJWT({ iss: ISS, sub: "alice", exp: T0_S + 3600 })
        .setProtectedHeader({ alg: "HS256", kid: rsa.kid })
        .sign(new TextEncoder().encode(secret));
      expect(await verifier.verify(token, T0_MS)).toEqual(INVALID);
    }
  });

  it("requires sub as a non-empty string", async () => {
    const verifier = verifierFor([{ issuer: ISS, keys: [rsa.jwk] }]);
    expect(await verifier.verify(await signToken(rsa, { iss: ISS, sub: null }), T0_MS)).toEqual(INVALID);
    expect(await verifier.verify(await signToken(rsa, { iss: ISS, sub: "" }), T0_MS)).toEqual(INVALID);
    expect(await verifier.verify(await signToken(rsa, { iss: ISS, sub: null, claims: { sub: 7 } }), T0_MS)).toEqual(INVALID);
  });

  it("refuses malformed segments without throwing", async () => {
    const verifier = verifierFor([{ issuer: ISS, keys: [rsa.jwk] }]);
    const good = await signToken(rsa, { iss: ISS });
    const [h, p, s] = good.split(".") as [string, string, string];
    const cases = [
      "",
      "a.b",
      "a.b.c.d",
      `${h}.${p}`,
      `${h}..${s}`,
      `${h}.${p}.${s}=`,
      `${h}.${p}.${s}.`,
      `${h}.${p}!.${s}`,
      `${base64url.encode("not json")}.${p}.${s}`,
      `${h}.${base64url.encode("[1,2]")}.${s}`,
      `${h}.${base64url.encode("\"text\"")}.${s}`,
      `${base64url.encode("{\"alg\":\"RS256\",\"crit\":[\"x\"],\"x\":1}")}.${p}.${s}`,
      `${h}.${p}.${s.slice(0, -2)}`,
      `${h}.${p.slice(1)}.${s}`,
      "tg_0123456789ab_0123456789abcdefghjkmnpqrstvwxyz",
    ];
    for (const token of cases) expect(await verifier.verify(token, T0_MS), token.slice(0, 40)).toEqual(INVALID);
  });

  it("refuses an oversized token before decoding or checking it, though it is validly signed", async () => {
    const verifier = verifierFor([{ issuer: ISS, keys: [rsa.jwk] }]);
    const before = signatureChecks;
    const huge = await signToken(rsa, { iss: ISS, header: { pad: "x".repeat(100_000) } });
    expect(huge.length).toBeGreaterThan(100_000);
    expect(looksLikeJwt(huge)).toBe(false);
    expect(await verifier.verify(huge, T0_MS)).toEqual(INVALID);
    expect(signatureChecks).toBe(before);
    // Just within the bound, the same kind of token is accepted.
    const padded = await signToken(rsa, { iss: ISS, header: { pad: "" } });
    const fitting = await signToken(rsa, { iss: ISS, header: { pad: "x".repeat(Math.floor(((MAX_JWT_CHARS - padded.length) * 3) / 4) - 4) } });
    expect(fitting.length).toBeLessThanOrEqual(MAX_JWT_CHARS);
    expect(fitting.length).toBeGreaterThan(MAX_JWT_CHARS - 16);
    expect((await verifier.verify(fitting, T0_MS)).ok).toBe(true);
  });

  it("recognises three base64url segments as a JWT and a managed key as not", async () => {
    expect(looksLikeJwt(await signToken(rsa, { iss: ISS }))).toBe(true);
    expect(looksLikeJwt("tg_0123456789ab_0123456789abcdefghjkmnpqrstvwxyz")).toBe(false);
    expect(looksLikeJwt("a.b.c")).toBe(true);
    expect(looksLikeJwt("a.b.")).toBe(false);
    expect(looksLikeJwt("a+b.c.d")).toBe(false);
  });

  it("keeps two issuers' callers apart though their sub is the same", async () => {
    const verifier = verifierFor([
      { issuer: ISS, keys: [rsa.jwk] },
      { issuer: OTHER_ISS, keys: [otherRsa.jwk] },
    ]);
    const a = await verifier.verify(await signToken(rsa, { iss: ISS, sub: "same" }), T0_MS);
    const b = await verifier.verify(await signToken(otherRsa, { iss: OTHER_ISS, sub: "same" }), T0_MS);
    expect(a.ok && b.ok).toBe(true);
    if (!a.ok || !b.ok) return;
    expect(a.callerKey).not.toBe(b.callerKey);
    expect(b.callerKey).toBe(await expectedCallerKey(OTHER_ISS, "same"));
    // One issuer's key does not vouch for the other issuer's tokens.
    expect(await verifier.verify(await signToken(rsa, { iss: OTHER_ISS, sub: "same" }), T0_MS)).toEqual(INVALID);
  });

  it("reads the tenant from the tenant claim when it is a valid slug, and flags any other value", async () => {
    const verifier = verifierFor([{ issuer: ISS, keys: [rsa.jwk], tenant_claim: "org_id" }]);
    const tenantOf = async (claims: Record<string, unknown>) => {
      const outcome = await verifier.verify(await signToken(rsa, { iss: ISS, claims }), T0_MS);
      return outcome.ok ? { tenant: outcome.tenant, invalid: outcome.tenantClaimInvalid } : outcome.code;
    };
    expect(await tenantOf({ org_id: "acme-1" })).toEqual({ tenant: "acme-1", invalid: false });
    expect(await tenantOf({})).toEqual({ tenant: null, invalid: false });
    expect(await tenantOf({ org_id: "ACME" })).toEqual({ tenant: null, invalid: true });
    expect(await tenantOf({ org_id: "../admin" })).toEqual({ tenant: null, invalid: true });
    expect(await tenantOf({ org_id: "a".repeat(65) })).toEqual({ tenant: null, invalid: true });
    expect(await tenantOf({ org_id: 12 })).toEqual({ tenant: null, invalid: true });
    expect(await tenantOf({ org_id: ["acme"] })).toEqual({ tenant: null, invalid: true });
    const inherited = verifierFor([{ issuer: ISS, keys: [rsa.jwk], tenant_claim: "constructor" }]);
    const outcome = await inherited.verify(await signToken(rsa, { iss: ISS }), T0_MS);
    expect(outcome.ok && outcome.tenant === null && !outcome.tenantClaimInvalid).toBe(true);
  });

  it("tries the keys that fit when a token names no kid, and refuses a token none of them signed", async () => {
    const second = await newKey("RS256");
    const verifier = verifierFor([{ issuer: ISS, keys: [rsa.jwk, second.jwk] }]);
    expect((await verifier.verify(await signToken(second, { iss: ISS, header: { kid: undefined } }), T0_MS)).ok).toBe(true);
    expect(await verifier.verify(await signToken(otherRsa, { iss: ISS, header: { kid: undefined } }), T0_MS)).toEqual(INVALID);
  });

  it("puts no claim value in a refusal", async () => {
    const verifier = verifierFor([{ issuer: ISS, keys: [rsa.jwk] }]);
    const outcome = await verifier.verify(await signToken(otherRsa, { iss: ISS, sub: "secret-subject-value" }), T0_MS);
    expect(JSON.stringify(outcome)).toBe(JSON.stringify(INVALID));
  });
});
