// JWTs for the bench, made in this process with jose (the library the
// gateway verifies with): one key pair per algorithm the gateway accepts by
// default, a static-key issuer for the gateway's config, a hot token, and
// batches of fresh tokens (one subject, a new jti each, so every token is
// new to the gateway's claims cache while the caller stays the same).
import { exportJWK, generateKeyPair, SignJWT } from "jose";

export const JWT_ISSUER = "https://auth.bench.example/";
export const JWT_AUDIENCE = "bench-api";
export const JWT_ALGORITHMS = ["RS256", "ES256", "EdDSA"];
const SUBJECT = "bench-user";

/** {issuer (the config entry), sign(alg, n)}: keys for RS256, ES256 and EdDSA; tokens valid for two hours, tenant claim `org` = tenant. */
export async function benchJwt(tenant) {
  const keys = {};
  for (const alg of JWT_ALGORITHMS) {
    const { privateKey, publicKey } = await generateKeyPair(alg, alg === "EdDSA" ? { crv: "Ed25519" } : {});
    const kid = `bench-${alg.toLowerCase()}`;
    keys[alg] = { privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: "sig" } };
  }
  const issuer = { issuer: JWT_ISSUER, keys: Object.values(keys).map((k) => k.jwk), audiences: [JWT_AUDIENCE], tenant_claim: "org" };
  let serial = 0;
  const nowS = Math.floor(Date.now() / 1000);
  const one = (alg) => {
    serial += 1;
    // A typical access token: standard claims, an org, scopes.
    return new SignJWT({ org: tenant, scope: "read:objects write:objects", jti: `bench-${serial}` })
      .setProtectedHeader({ alg, kid: keys[alg].jwk.kid, typ: "JWT" })
      .setIssuer(JWT_ISSUER)
      .setSubject(SUBJECT)
      .setAudience(JWT_AUDIENCE)
      .setIssuedAt(nowS)
      .setExpirationTime(nowS + 7200)
      .sign(keys[alg].privateKey);
  };
  return {
    issuer,
    /** n distinct tokens signed with `alg` (a few at a time: Node signs on its thread pool). */
    sign: async (alg, n) => {
      const out = [];
      while (out.length < n) out.push(...(await Promise.all(Array.from({ length: Math.min(16, n - out.length) }, () => one(alg)))));
      return out;
    },
  };
}
