// The hot path: a token verified recently is answered from the isolate with
// no signature check (counted through the onSignatureCheck hook), expiry
// still checked on every use, and the cache bounded.
import { beforeAll, describe, expect, it } from "vitest";
import { EXPIRED, JwtClaimsCache } from "../../src/identity/jwt-claims-cache";
import { compileJwtConfig, type JwtVerifier } from "../../src/identity/jwt-verifier";
import { jwtConfig, newKey, signToken, T0_MS, T0_S, type TestKey } from "./jwt-helpers";

const ISS = "https://auth.example.com/";
let rsa: TestKey;

function counted(extra: Record<string, unknown> = {}, options: Record<string, number> = {}): { verifier: JwtVerifier; checks: () => number } {
  let checks = 0;
  const verifier = compileJwtConfig(jwtConfig({ issuers: [{ issuer: ISS, keys: [rsa.jwk], ...extra }] }), {
    staleIfErrorS: 300,
    onSignatureCheck: () => void (checks += 1),
    ...options,
  });
  return { verifier, checks: () => checks };
}

beforeAll(async () => {
  rsa = await newKey("RS256");
});

describe("the claims cache", () => {
  it("answers a second verification of the same token without a signature check", async () => {
    const { verifier, checks } = counted();
    const token = await signToken(rsa, { iss: ISS, sub: "hot" });
    const first = await verifier.verify(token, T0_MS);
    expect(first.ok).toBe(true);
    expect(checks()).toBe(1);
    expect(await verifier.verify(token, T0_MS + 1000)).toBe(first);
    expect(checks()).toBe(1);
  });

  it("peeks synchronously: the cached outcome, or undefined for a token never verified", async () => {
    const { verifier, checks } = counted();
    const token = await signToken(rsa, { iss: ISS, sub: "peek" });
    expect(verifier.peek(token, T0_MS)).toBeUndefined();
    const first = await verifier.verify(token, T0_MS);
    const peeked = verifier.peek(token, T0_MS + 5);
    expect(peeked).not.toBeInstanceOf(Promise);
    expect(peeked).toBe(first);
    expect(verifier.peek("not-a-token", T0_MS)).toBeUndefined();
    expect(checks()).toBe(1);
  });

  it("still enforces exp on a cached token, to the millisecond, and drops it", async () => {
    const { verifier, checks } = counted({ clock_skew_s: 10 });
    const token = await signToken(rsa, { iss: ISS, expInS: 120 });
    expect((await verifier.verify(token, T0_MS)).ok).toBe(true);
    const expiredAtMs = (T0_S + 120 + 10) * 1000;
    expect(verifier.peek(token, expiredAtMs - 1)?.ok).toBe(true);
    expect(verifier.peek(token, expiredAtMs)).toEqual({ ok: false, code: "credential_expired" });
    expect(verifier.cachedTokens).toBe(0);
    expect(await verifier.verify(token, expiredAtMs)).toEqual({ ok: false, code: "credential_expired" });
    expect(checks()).toBe(2);
  });

  it("agrees with a fresh verification at the expiry boundary for a fractional exp", async () => {
    const token = await signToken(rsa, { iss: ISS, expInS: null, claims: { exp: T0_S + 100.25 } });
    for (const atMs of [(T0_S + 160) * 1000, (T0_S + 161) * 1000 - 1, (T0_S + 161) * 1000]) {
      const cached = counted();
      await cached.verifier.verify(token, T0_MS);
      const fresh = counted();
      expect(cached.verifier.peek(token, atMs), String(atMs)).toEqual(await fresh.verifier.verify(token, atMs));
    }
  });

  it("checks the signature again once jwks_cache_s has passed since it was verified", async () => {
    const { verifier, checks } = counted({}, {});
    const token = await signToken(rsa, { iss: ISS, expInS: 86_400 });
    await verifier.verify(token, T0_MS);
    await verifier.verify(token, T0_MS + 600_000 - 1);
    expect(checks()).toBe(1);
    expect((await verifier.verify(token, T0_MS + 600_000)).ok).toBe(true);
    expect(checks()).toBe(2);
  });

  it("keeps no refusal: a bad token is checked every time", async () => {
    const other = await newKey("RS256", rsa.kid);
    const { verifier, checks } = counted();
    const forged = await signToken(other, { iss: ISS });
    await verifier.verify(forged, T0_MS);
    await verifier.verify(forged, T0_MS);
    expect(checks()).toBe(2);
    expect(verifier.cachedTokens).toBe(0);
  });

  it("holds at most maxCachedTokens tokens", async () => {
    const { verifier } = counted({}, { maxCachedTokens: 3 });
    for (let i = 0; i < 5; i++) await verifier.verify(await signToken(rsa, { iss: ISS, sub: `u${i}` }), T0_MS);
    expect(verifier.cachedTokens).toBe(3);
  });
});

describe("JwtClaimsCache", () => {
  const window = { validFromMs: 0, expiredAtMs: 1_000_000, reverifyAtMs: 1_000_000 };

  it("bounds the characters held, evicting the oldest", () => {
    const cache = new JwtClaimsCache<{ n: number }>(100, 30);
    cache.store("a".repeat(10), { n: 1 }, window);
    cache.store("b".repeat(10), { n: 2 }, window);
    cache.store("c".repeat(10), { n: 3 }, window);
    cache.store("d".repeat(10), { n: 4 }, window);
    expect(cache.size).toBe(3);
    expect(cache.chars).toBe(30);
    expect(cache.lookup("a".repeat(10), 1)).toBeUndefined();
    expect(cache.lookup("d".repeat(10), 1)).toEqual({ n: 4 });
    cache.store("e".repeat(31), { n: 5 }, window);
    expect(cache.lookup("e".repeat(31), 1)).toBeUndefined();
    expect(cache.chars).toBe(30);
  });

  it("gives a token used since it was stored a second chance over one never used", () => {
    const cache = new JwtClaimsCache<{ n: number }>(2, 1000);
    cache.store("hot", { n: 1 }, window);
    cache.store("cold", { n: 2 }, window);
    expect(cache.lookup("hot", 1)).toEqual({ n: 1 });
    cache.store("new", { n: 3 }, window);
    expect(cache.lookup("hot", 1)).toEqual({ n: 1 });
    expect(cache.lookup("cold", 1)).toBeUndefined();
  });

  it("evicts even when every entry was used, and counts characters exactly", () => {
    const cache = new JwtClaimsCache<{ n: number }>(20, 1_000_000);
    for (let i = 0; i < 20; i++) cache.store(`t${i}`, { n: i }, window);
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 20; i++) cache.lookup(`t${i}`, 1);
      cache.store(`x${round}`, { n: round }, window);
      expect(cache.size).toBe(20);
    }
    let chars = 0;
    for (let i = 0; i < 20; i++) if (cache.lookup(`t${i}`, 1) !== undefined) chars += `t${i}`.length;
    for (let round = 0; round < 50; round++) if (cache.lookup(`x${round}`, 1) !== undefined) chars += `x${round}`.length;
    expect(cache.chars).toBe(chars);
  });

  it("answers EXPIRED from expiredAtMs and forgets the token; not yet valid and reverify are misses", () => {
    const cache = new JwtClaimsCache<{ n: number }>(10, 1000);
    cache.store("t", { n: 1 }, { validFromMs: 100, expiredAtMs: 500, reverifyAtMs: 400 });
    expect(cache.lookup("t", 99)).toBeUndefined();
    cache.store("t", { n: 1 }, { validFromMs: 100, expiredAtMs: 500, reverifyAtMs: 400 });
    expect(cache.lookup("t", 399)).toEqual({ n: 1 });
    expect(cache.lookup("t", 400)).toBeUndefined();
    cache.store("u", { n: 2 }, { validFromMs: 0, expiredAtMs: 500, reverifyAtMs: 900 });
    expect(cache.lookup("u", 500)).toBe(EXPIRED);
    expect(cache.lookup("u", 1)).toBeUndefined();
    expect(cache.chars).toBe(0);
  });
});
