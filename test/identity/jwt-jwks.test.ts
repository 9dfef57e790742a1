// Key sets fetched from the test origin (scripts/origin.mjs serves what a test
// publishes): first use, caching, the unknown-kid refetch bound, rotation,
// outages, and one fetch in flight per URL. Time is explicit (nowMs).
import { beforeAll, describe, expect, it } from "vitest";
import { defaultJwksFetch, JWKS_ERROR_RETRY_MS, JWKS_REFETCH_MIN_MS, type JwksFailure, type JwksFetch } from "../../src/cache/jwks-cache";
import { compileJwtConfig, type JwtOutcome, type JwtVerifier, type JwtVerifierOptions } from "../../src/identity/jwt-verifier";
import { countingFetch, jwksAddress, jwtConfig, newKey, publishJwks, setJwksStatus, signToken, T0_MS, type TestKey } from "./jwt-helpers";

const ISS = "https://idp.example/";
const TTL_S = 600;
const STALE_S = 300;
const INVALID: JwtOutcome = { ok: false, code: "invalid_credential" };
const UNAVAILABLE: JwtOutcome = { ok: false, code: "auth_unavailable" };
const EXPIRED: JwtOutcome = { ok: false, code: "credential_expired" };

let k1: TestKey;
let k2: TestKey;
let ec: TestKey;

function jwksVerifier(url: string, fetchJwks: JwksFetch, options: Partial<JwtVerifierOptions> = {}): JwtVerifier {
  return compileJwtConfig(jwtConfig({ issuers: [{ issuer: ISS, jwks_url: url }], jwks_cache_s: TTL_S }), { staleIfErrorS: STALE_S, fetchJwks, ...options });
}

/** A new token each call (distinct sub), so the claims cache never answers. */
let serial = 0;
function token(key: TestKey): Promise<string> {
  serial += 1;
  return signToken(key, { iss: ISS, sub: `user-${serial}`, expInS: 86_400 });
}

interface Deferred {
  promise: Promise<Response>;
  resolve: (response: Response) => void;
}
function deferred(): Deferred {
  let resolve!: (response: Response) => void;
  const promise = new Promise<Response>((r) => (resolve = r));
  return { promise, resolve };
}

beforeAll(async () => {
  [k1, k2, ec] = await Promise.all([newKey("RS256"), newKey("RS256"), newKey("ES256")]);
});

describe("JWKS", () => {
  it("fetches the set on first use and serves it for jwks_cache_s", async () => {
    const { name, url } = jwksAddress();
    await publishJwks(name, [k1.jwk, ec.jwk]);
    const counter = countingFetch();
    const verifier = jwksVerifier(url, counter.fetch);
    expect(counter.calls()).toBe(0);
    expect((await verifier.verify(await token(k1), T0_MS)).ok).toBe(true);
    expect((await verifier.verify(await token(ec), T0_MS + TTL_S * 1000 - 1)).ok).toBe(true);
    expect(counter.calls()).toBe(1);
    expect((await verifier.verify(await token(k1), T0_MS + TTL_S * 1000)).ok).toBe(true);
    expect(counter.calls()).toBe(2);
  });

  it("does not follow a redirect from the JWKS URL: the fetch fails, and a token is 503 until the URL itself serves a set", async () => {
    const { name, url } = jwksAddress();
    await publishJwks(name, [k1.jwk]);
    const redirecting = url.replace("/__origin/jwks/", "/__origin/jwks-redirect/");
    const failures: JwksFailure[] = [];
    const verifier = jwksVerifier(redirecting, defaultJwksFetch, { onJwksFailure: (_url, reason) => failures.push(reason) });
    expect(await verifier.verify(await token(k1), T0_MS)).toEqual(UNAVAILABLE);
    expect(failures).toEqual(["redirect"]);
    // The same set, fetched from its own URL with the same fetch, verifies.
    expect((await jwksVerifier(url, defaultJwksFetch).verify(await token(k1), T0_MS)).ok).toBe(true);
  });

  it("refuses an expired token again without a signature check until the key set changes", async () => {
    const { name, url } = jwksAddress();
    await publishJwks(name, [k1.jwk]);
    let checks = 0;
    const verifier = jwksVerifier(url, countingFetch().fetch, { onSignatureCheck: () => void (checks += 1) });
    const expired = await signToken(k1, { iss: ISS, sub: "late", expInS: -3600 });
    for (let i = 0; i < 5; i++) expect(await verifier.verify(expired, T0_MS + i)).toEqual(EXPIRED);
    expect(checks).toBe(1);
    expect(verifier.expiredRefusals).toBe(1);
    // Another expired token is its own entry, checked once.
    const other = await signToken(k1, { iss: ISS, sub: "later", expInS: -60 });
    expect(await verifier.verify(other, T0_MS + 10)).toEqual(EXPIRED);
    expect(await verifier.verify(other, T0_MS + 11)).toEqual(EXPIRED);
    expect(checks).toBe(2);

    // A new set (fetched again after jwks_cache_s) is a change: checked once more, then held again.
    await publishJwks(name, [k1.jwk, k2.jwk]);
    expect(await verifier.verify(expired, T0_MS + TTL_S * 1000)).toEqual(EXPIRED);
    expect(await verifier.verify(expired, T0_MS + TTL_S * 1000 + 1)).toEqual(EXPIRED);
    expect(checks).toBe(3);
    // Once the key is withdrawn, the token is no longer "expired" but unknown.
    await publishJwks(name, [k2.jwk]);
    expect(await verifier.verify(expired, T0_MS + 2 * TTL_S * 1000)).toEqual(INVALID);
  });

  it("shares one fetch among concurrent first verifications", async () => {
    const { name, url } = jwksAddress();
    await publishJwks(name, [k1.jwk]);
    const counter = countingFetch();
    const verifier = jwksVerifier(url, counter.fetch);
    const tokens = await Promise.all(Array.from({ length: 20 }, () => token(k1)));
    const outcomes = await Promise.all(tokens.map((t) => verifier.verify(t, T0_MS)));
    expect(outcomes.every((o) => o.ok)).toBe(true);
    expect(counter.calls()).toBe(1);
  });

  it("refetches for an unknown kid at most once per 30 s, and a rotated key works after the refetch", async () => {
    const { name, url } = jwksAddress();
    await publishJwks(name, [k1.jwk]);
    const counter = countingFetch();
    const verifier = jwksVerifier(url, counter.fetch);
    expect((await verifier.verify(await token(k1), T0_MS)).ok).toBe(true);
    expect(counter.calls()).toBe(1);

    // The identity provider rotates: k2 is published beside k1.
    await publishJwks(name, [k1.jwk, k2.jwk]);
    expect(await verifier.verify(await token(k2), T0_MS + 10_000)).toEqual(INVALID);
    expect(counter.calls()).toBe(1);
    expect(await verifier.verify(await token(k2), T0_MS + JWKS_REFETCH_MIN_MS - 1)).toEqual(INVALID);
    expect(counter.calls()).toBe(1);
    expect((await verifier.verify(await token(k2), T0_MS + JWKS_REFETCH_MIN_MS)).ok).toBe(true);
    expect(counter.calls()).toBe(2);
    expect((await verifier.verify(await token(k1), T0_MS + JWKS_REFETCH_MIN_MS + 1)).ok).toBe(true);

    // A kid nobody published: refused, refetching at most once per 30 s however often it comes.
    const stranger = await newKey("RS256");
    for (let i = 1; i <= 5; i++) expect(await verifier.verify(await token(stranger), T0_MS + JWKS_REFETCH_MIN_MS + i * 1000)).toEqual(INVALID);
    expect(counter.calls()).toBe(2);
    expect(await verifier.verify(await token(stranger), T0_MS + 2 * JWKS_REFETCH_MIN_MS)).toEqual(INVALID);
    expect(counter.calls()).toBe(3);

    // k1 withdrawn: new k1 tokens are refused once the set is refetched (after its TTL).
    await publishJwks(name, [k2.jwk]);
    expect((await verifier.verify(await token(k1), T0_MS + 2 * JWKS_REFETCH_MIN_MS + 1)).ok).toBe(true);
    expect(await verifier.verify(await token(k1), T0_MS + 2 * JWKS_REFETCH_MIN_MS + TTL_S * 1000)).toEqual(INVALID);
  });

  it("serves the last good set through an outage for stale_if_error_s, then answers auth_unavailable", async () => {
    const { name, url } = jwksAddress();
    await publishJwks(name, [k1.jwk]);
    const counter = countingFetch();
    const failures: JwksFailure[] = [];
    const verifier = jwksVerifier(url, counter.fetch, { onJwksFailure: (_url, reason) => failures.push(reason) });
    expect((await verifier.verify(await token(k1), T0_MS)).ok).toBe(true);
    await setJwksStatus(name, 503);

    const expiredMs = T0_MS + TTL_S * 1000;
    expect((await verifier.verify(await token(k1), expiredMs)).ok).toBe(true);
    expect(counter.calls()).toBe(2);
    expect(failures).toEqual(["status"]);
    // Within the retry pause the failing URL is not asked again.
    expect((await verifier.verify(await token(k1), expiredMs + JWKS_ERROR_RETRY_MS - 1)).ok).toBe(true);
    expect(counter.calls()).toBe(2);
    expect((await verifier.verify(await token(k1), expiredMs + STALE_S * 1000 - 1)).ok).toBe(true);
    expect(counter.calls()).toBe(3);
    expect(await verifier.verify(await token(k1), expiredMs + STALE_S * 1000)).toEqual(UNAVAILABLE);

    await setJwksStatus(name, 200);
    expect((await verifier.verify(await token(k1), expiredMs + STALE_S * 1000 + JWKS_ERROR_RETRY_MS)).ok).toBe(true);
  });

  it("answers auth_unavailable when the set was never fetched and the URL fails, without asking it on every request", async () => {
    const { name, url } = jwksAddress();
    const counter = countingFetch();
    const failures: JwksFailure[] = [];
    const verifier = jwksVerifier(url, counter.fetch, { onJwksFailure: (_url, reason) => failures.push(reason) });
    expect(await verifier.verify(await token(k1), T0_MS)).toEqual(UNAVAILABLE);
    expect(await verifier.verify(await token(k1), T0_MS + JWKS_ERROR_RETRY_MS - 1)).toEqual(UNAVAILABLE);
    expect(counter.calls()).toBe(1);
    expect(failures).toEqual(["status"]);
    await publishJwks(name, [k1.jwk]);
    expect((await verifier.verify(await token(k1), T0_MS + JWKS_ERROR_RETRY_MS)).ok).toBe(true);
    expect(counter.calls()).toBe(2);

    // A fetch that rejects, as workerd's does when the connection is refused.
    const refused: JwksFetch = async () => {
      throw new TypeError("Network connection lost.");
    };
    const unreachable = jwksVerifier(url, refused, { onJwksFailure: (_url, reason) => failures.push(reason) });
    expect(await unreachable.verify(await token(k1), T0_MS)).toEqual(UNAVAILABLE);
    expect(failures.at(-1)).toBe("network");
  });

  it("never takes a symmetric or private key from a set, nor a body past its bound", async () => {
    const { name, url } = jwksAddress();
    await publishJwks(name, [
      { kty: "oct", k: "c2VjcmV0", kid: "hmac" },
      { ...k1.jwk, d: "AQAB" },
    ]);
    const failures: JwksFailure[] = [];
    const verifier = jwksVerifier(url, fetch, { onJwksFailure: (_url, reason) => failures.push(reason) });
    expect(await verifier.verify(await token(k1), T0_MS)).toEqual(UNAVAILABLE);
    expect(failures).toEqual(["no_usable_keys"]);

    const big: JwksFetch = async () => new Response(JSON.stringify({ keys: [k1.jwk], pad: "x".repeat(200_000) }));
    const bounded = jwksVerifier(url, big, { onJwksFailure: (_url, reason) => failures.push(reason) });
    expect(await bounded.verify(await token(k1), T0_MS)).toEqual(UNAVAILABLE);
    expect(failures.at(-1)).toBe("too_large");
    const streamed: JwksFetch = async () => new Response(new Blob([JSON.stringify({ keys: [k1.jwk], pad: "x".repeat(200_000) })]).stream());
    expect(await jwksVerifier(url, streamed, { onJwksFailure: (_url, reason) => failures.push(reason) }).verify(await token(k1), T0_MS)).toEqual(UNAVAILABLE);
    expect(failures.at(-1)).toBe("too_large");
  });

  it("serves the stale set to a request that finds a refresh already in flight, with no second fetch", async () => {
    const { name, url } = jwksAddress();
    await publishJwks(name, [k1.jwk]);
    const pending: Deferred[] = [];
    let calls = 0;
    const controlled: JwksFetch = (u, init) => {
      calls += 1;
      if (calls === 1) return fetch(u, init);
      const d = deferred();
      pending.push(d);
      return d.promise;
    };
    const verifier = jwksVerifier(url, controlled);
    expect((await verifier.verify(await token(k1), T0_MS)).ok).toBe(true);

    const refreshing = verifier.verify(await token(k1), T0_MS + TTL_S * 1000);
    const joiner = await verifier.verify(await token(k1), T0_MS + TTL_S * 1000);
    expect(joiner.ok).toBe(true);
    expect(calls).toBe(2);
    pending[0]!.resolve(new Response(JSON.stringify({ keys: [k1.jwk] })));
    expect((await refreshing).ok).toBe(true);
  });

  it("lets a request with no set give up on a fetch that never settles (its request gone) and fetch once itself", async () => {
    const { url } = jwksAddress();
    const hung = deferred();
    let calls = 0;
    // The first fetch never settles; later ones answer at once, so how long a
    // real fetch takes on a loaded machine cannot outlast the patience.
    const controlled: JwksFetch = async () => {
      calls += 1;
      return calls === 1 ? hung.promise : new Response(JSON.stringify({ keys: [k1.jwk] }));
    };
    const verifier = jwksVerifier(url, controlled, { jwksJoinPatienceMs: 50 });
    const orphan = verifier.verify(await token(k1), T0_MS);
    const joiners = await Promise.all([verifier.verify(await token(k1), T0_MS), verifier.verify(await token(k1), T0_MS)]);
    expect(joiners).toEqual([expect.objectContaining({ ok: true }), expect.objectContaining({ ok: true })]);
    // Both joiners gave up on the dead fetch; only one of them fetched again.
    expect(calls).toBe(2);
    // Should the first request still be there when its fetch finally fails,
    // it is served the set the others fetched, and that set stays.
    hung.resolve(new Response("{}", { status: 503 }));
    expect((await orphan).ok).toBe(true);
    expect((await verifier.verify(await token(k1), T0_MS + 1)).ok).toBe(true);
    expect(calls).toBe(2);
  });
});
