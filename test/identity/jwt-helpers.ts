// Keys and tokens for the JWT tests: key pairs generated here with jose,
// tokens signed at an explicit instant, and key sets published on the test
// origin (scripts/origin.mjs, PUT /__origin/jwks/<name>).
import { env } from "cloudflare:workers";
import { exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from "jose";
import type { JwksFetch } from "../../src/cache/jwks-cache";
import { jwtConfigSchema, type JwtConfig } from "../../src/identity/jwt-config";
import { unique } from "../helpers";

/** 2030-01-01T00:00:00Z: every token is signed relative to it and verified with an explicit nowMs. */
export const T0_MS = Date.UTC(2030, 0, 1);
export const T0_S = T0_MS / 1000;

export interface TestKey {
  readonly alg: string;
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
  /** The public JWK with kid, alg and use, as an identity provider publishes it. */
  readonly jwk: JWK;
}

export async function newKey(alg: string, kid: string = unique("kid")): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, ...(alg === "EdDSA" ? { crv: "Ed25519" } : {}) });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: "sig" };
  return { alg, kid, privateKey: privateKey as CryptoKey, publicKey: publicKey as CryptoKey, jwk };
}

export interface TokenSpec {
  readonly iss: string;
  readonly sub?: string | null;
  readonly aud?: string | string[];
  /** Seconds relative to T0; null leaves exp out. Default +3600. */
  readonly expInS?: number | null;
  readonly nbfInS?: number;
  /** Extra claims, applied last (they may override iss, sub, …). */
  readonly claims?: Record<string, unknown>;
  /** Header overrides (kid, alg, extra members). */
  readonly header?: Record<string, unknown>;
}

/** A compact JWS signed with `key` (its alg and kid unless the spec overrides them). */
export async function signToken(key: TestKey, spec: TokenSpec): Promise<string> {
  const payload: JWTPayload = { iss: spec.iss, iat: T0_S };
  if (spec.sub !== null) payload.sub = spec.sub ?? "user-1";
  if (spec.aud !== undefined) payload.aud = spec.aud;
  if (spec.expInS !== null) payload.exp = T0_S + (spec.expInS ?? 3600);
  if (spec.nbfInS !== undefined) payload.nbf = T0_S + spec.nbfInS;
  // Extra claims last, so a test can also set a standard claim to a wrong type.
  return new SignJWT({ ...payload, ...spec.claims }).setProtectedHeader({ alg: key.alg, kid: key.kid, ...spec.header } as { alg: string }).sign(key.privateKey);
}

/** A fresh key set name on the test origin and its URL. */
export function jwksAddress(): { name: string; url: string } {
  const name = unique("jwks");
  return { name, url: `${env.ORIGIN_URL}/__origin/jwks/${name}` };
}

/** Publish `keys` under `name` (the origin serves them from then on). */
export async function publishJwks(name: string, keys: readonly JWK[]): Promise<void> {
  const res = await fetch(`${env.ORIGIN_URL}/__origin/jwks/${name}`, { method: "PUT", body: JSON.stringify({ keys }) });
  if (res.status !== 204) throw new Error(`publishing ${name}: ${res.status}`);
}

/** Make GETs of `name` answer `status` (200 serves the set again). */
export async function setJwksStatus(name: string, status: number): Promise<void> {
  const res = await fetch(`${env.ORIGIN_URL}/__origin/jwks/${name}?status=${status}`, { method: "PUT" });
  if (res.status !== 204) throw new Error(`setting ${name} to ${status}: ${res.status}`);
}

/** The global fetch, counting calls. */
export function countingFetch(): { fetch: JwksFetch; calls: () => number } {
  let calls = 0;
  return {
    fetch: (url, init) => {
      calls += 1;
      return fetch(url, init);
    },
    calls: () => calls,
  };
}

/** A parsed `jwt` config section (defaults applied), throwing on a mistake in the test. */
export function jwtConfig(raw: unknown): JwtConfig {
  return jwtConfigSchema.parse(raw);
}

/** The caller key computed independently of the verifier: `jwt:` + hex SHA-256 of iss, LF, sub. */
export async function expectedCallerKey(iss: string, sub: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`${iss}\n${sub}`));
  return `jwt:${[...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}
