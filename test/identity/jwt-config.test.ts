import { describe, expect, it } from "vitest";
import { TENANT_SLUG } from "../../src/admin/schemas";
import { parseConfig } from "../../src/config";
import {
  DEFAULT_JWKS_CACHE_S,
  DEFAULT_JWT_ALGORITHMS,
  DEFAULT_JWT_CLOCK_SKEW_S,
  JWT_ALGORITHMS,
  jwtConfigSchema,
} from "../../src/identity/jwt-config";
import { compileJwtConfig, JWT_TENANT_SLUG } from "../../src/identity/jwt-verifier";
import { jwtConfig, newKey, signToken, T0_MS } from "./jwt-helpers";

const RSA_JWK = { kty: "RSA", n: "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw", e: "AQAB" };
const ISS = "https://auth.example.com/";

function issue(raw: unknown): { path: string; message: string } | null {
  const parsed = jwtConfigSchema.safeParse(raw);
  if (parsed.success) return null;
  const first = parsed.error.issues[0]!;
  return { path: first.path.map(String).join("."), message: first.message };
}

describe("jwt config", () => {
  it("fills the defaults from the named constants", () => {
    const config = jwtConfig({ issuers: [{ issuer: ISS, jwks_url: "https://auth.example.com/jwks.json" }] });
    expect(config.jwks_cache_s).toBe(DEFAULT_JWKS_CACHE_S);
    expect(config.issuers[0]!.algorithms).toEqual([...DEFAULT_JWT_ALGORITHMS]);
    expect(config.issuers[0]!.clock_skew_s).toBe(DEFAULT_JWT_CLOCK_SKEW_S);
    expect(DEFAULT_JWT_ALGORITHMS).toEqual(["RS256", "ES256", "EdDSA"]);
  });

  it("accepts static public keys in place of a JWKS URL", () => {
    expect(issue({ issuers: [{ issuer: ISS, keys: [RSA_JWK], audiences: ["api"], tenant_claim: "org_id", clock_skew_s: 0 }] })).toBeNull();
  });

  it("refuses none and every HMAC algorithm, naming the field and not the value", () => {
    for (const alg of ["none", "HS256", "HS384", "HS512"]) {
      const found = issue({ issuers: [{ issuer: ISS, keys: [RSA_JWK], algorithms: ["RS256", alg] }] });
      expect(found?.path).toBe("issuers.0.algorithms.1");
      expect(found?.message).toContain("never accepted");
      expect(found?.message).not.toContain(`${alg},`);
    }
    expect(issue({ issuers: [{ issuer: ISS, keys: [{ ...RSA_JWK, alg: "HS256" }] }] })?.path).toBe("issuers.0.keys.0.alg");
  });

  it("requires exactly one of jwks_url and keys", () => {
    expect(issue({ issuers: [{ issuer: ISS }] })?.path).toBe("issuers.0.jwks_url");
    expect(issue({ issuers: [{ issuer: ISS, keys: [RSA_JWK], jwks_url: "https://a.example/jwks" }] })?.path).toBe("issuers.0.jwks_url");
  });

  it("refuses unknown fields at every depth", () => {
    expect(issue({ issuers: [{ issuer: ISS, keys: [RSA_JWK] }], jwks_cache: 5 })?.path).toBe("");
    expect(issue({ issuers: [{ issuer: ISS, keys: [RSA_JWK], audience: ["api"] }] })?.path).toBe("issuers.0");
    expect(issue({ issuers: [{ issuer: ISS, keys: [{ ...RSA_JWK, nn: "x" }] }] })?.path).toBe("issuers.0.keys.0");
  });

  it("refuses private and symmetric keys", () => {
    expect(issue({ issuers: [{ issuer: ISS, keys: [{ ...RSA_JWK, d: "AQAB" }] }] })?.path).toBe("issuers.0.keys.0");
    expect(issue({ issuers: [{ issuer: ISS, keys: [{ kty: "oct", k: "c2VjcmV0" }] }] })?.path).toBe("issuers.0.keys.0.kty");
  });

  it("checks durations are whole seconds within bounds", () => {
    const base = { issuer: ISS, keys: [RSA_JWK] };
    expect(issue({ issuers: [{ ...base, clock_skew_s: 1.5 }] })?.path).toBe("issuers.0.clock_skew_s");
    expect(issue({ issuers: [{ ...base, clock_skew_s: -1 }] })?.path).toBe("issuers.0.clock_skew_s");
    expect(issue({ issuers: [{ ...base, clock_skew_s: 301 }] })?.path).toBe("issuers.0.clock_skew_s");
    expect(issue({ issuers: [base], jwks_cache_s: 0 })?.path).toBe("jwks_cache_s");
    expect(issue({ issuers: [base], jwks_cache_s: 0.5 })?.path).toBe("jwks_cache_s");
    expect(issue({ issuers: [base], jwks_cache_s: 86_401 })?.path).toBe("jwks_cache_s");
  });

  it("fetches keys over https only, or plain http from a loopback origin", () => {
    const url = (jwks_url: string) => issue({ issuers: [{ issuer: ISS, jwks_url }] })?.path ?? null;
    expect(url("http://auth.example.com/jwks")).toBe("issuers.0.jwks_url");
    expect(url("https://user:pw@auth.example.com/jwks")).toBe("issuers.0.jwks_url");
    expect(url("not a url")).toBe("issuers.0.jwks_url");
    expect(url("http://127.0.0.1:8788/jwks")).toBeNull();
    expect(url("https://auth.example.com/.well-known/jwks.json")).toBeNull();
  });

  it("refuses an issuer listed twice, an empty list, and empty audiences", () => {
    const one = { issuer: ISS, keys: [RSA_JWK] };
    expect(issue({ issuers: [one, one] })?.path).toBe("issuers.1.issuer");
    expect(issue({ issuers: [] })?.path).toBe("issuers");
    expect(issue({ issuers: [{ ...one, audiences: [] }] })?.path).toBe("issuers.0.audiences");
  });

  it("refuses an issuer holding a control character, naming the field through the whole config", () => {
    for (const bad of [`${ISS}\n`, "https://a.example/\u0000", "https://a\u0007.example/", "https://a.example/\u007f", "https://a.example/\u0085"]) {
      expect(issue({ issuers: [{ issuer: bad, keys: [RSA_JWK] }] })).toEqual({ path: "issuers.0.issuer", message: "must not contain control characters" });
    }
    expect(issue({ issuers: [{ issuer: "https://auth.example.com/tenant é", keys: [RSA_JWK] }] })).toBeNull();
    const parsed = parseConfig({ jwt: { issuers: [{ issuer: "https://a.example/\r\nx", keys: [RSA_JWK] }] } });
    expect(parsed).toEqual({ ok: false, field: "jwt.issuers.0.issuer", message: "must not contain control characters" });
  });

  it("uses the admin API's tenant slug rule", () => {
    expect(JWT_TENANT_SLUG.source).toBe(TENANT_SLUG.source);
  });

  it("verifies a token of every algorithm the schema accepts (what validates works)", async () => {
    for (const alg of JWT_ALGORITHMS) {
      const key = await newKey(alg);
      const config = jwtConfig({ issuers: [{ issuer: ISS, keys: [key.jwk], algorithms: [alg] }] });
      const verifier = compileJwtConfig(config, { staleIfErrorS: 300 });
      const outcome = await verifier.verify(await signToken(key, { iss: ISS }), T0_MS);
      expect(outcome.ok, alg).toBe(true);
    }
  });
});
