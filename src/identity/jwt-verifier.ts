// JWT callers: a token from a configured identity provider
// becomes the caller `jwt:<hex SHA-256 of iss + "\n" + sub>`. Compiled once
// per config (compileJwtConfig); verify() answers a tagged outcome and never
// throws for a bad token. Signatures and claims are checked by jose: `iss`
// exact, `alg` in the issuer's list and fitting the key, `exp` required and
// not past, `nbf` not future (both with the issuer's skew), `aud` when
// configured; `sub` must be a non-empty string.
//
// A token refused as expired is remembered (by its SHA-256, bounded) with the
// key set that checked it, so a client repeating it costs a hash rather than
// a signature check until that set changes.
//
// No claim value leaves this module except inside the caller digest and, for
// the tenant claim, a value that passed the tenant slug rule. Refusals carry
// only their code.
import { decodeJwt, decodeProtectedHeader, type JWK, type JWTPayload, jwtVerify, type ProtectedHeaderParameters } from "jose";
import { JwksCache, type JwksFailure, type JwksFetch, type JwksSnapshot, type KeepAlive, defaultJwksFetch, jwksSnapshot } from "../cache/jwks-cache";
import { sha256Hex } from "../utils/crypto";
import { DEFAULT_MAX_CACHED_TOKEN_CHARS, DEFAULT_MAX_CACHED_TOKENS, EXPIRED, JwtClaimsCache } from "./jwt-claims-cache";
import type { JwtConfig } from "./jwt-config";
import { looksLikeJwt } from "./jwt-token";

/** The tenant slug rule of the admin API (admin/schemas.ts TENANT_SLUG; a test keeps the two equal). */
export const JWT_TENANT_SLUG = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** A token without `kid` may match several keys of a set: at most this many signature checks are tried. */
export const MAX_KEY_CANDIDATES = 4;
/** Expired tokens whose refusal is kept (by SHA-256, 64 characters each): about 1 MB at most. */
export const MAX_EXPIRED_REFUSALS = 4096;

export interface JwtCaller {
  readonly ok: true;
  /** `jwt:` and 64 hex characters: SHA-256 of `iss + "\n" + sub`. */
  readonly callerKey: string;
  /** The configured issuer that vouched for the token (config, not a claim). */
  readonly issuer: string;
  /** The token's `exp`, in ms since the epoch (without the skew). */
  readonly expiresAtMs: number;
  /** The tenant the tenant claim names (a valid slug), or null. */
  readonly tenant: string | null;
  /** The issuer has a tenant claim and the token carries it, but not as a valid slug: it names no tenant (403 tenant_unknown). */
  readonly tenantClaimInvalid: boolean;
}

export type JwtRefusalCode = "invalid_credential" | "credential_expired" | "auth_unavailable";
export interface JwtRefusal {
  readonly ok: false;
  readonly code: JwtRefusalCode;
}
export type JwtOutcome = JwtCaller | JwtRefusal;

export interface JwtVerifierOptions {
  /** The gateway's `stale_if_error_s`: how long past its freshness a JWKS serves while its URL fails. */
  readonly staleIfErrorS: number;
  /** Default: the global fetch. */
  readonly fetchJwks?: JwksFetch;
  /** Called before every signature check (tests and the bench count them). */
  readonly onSignatureCheck?: () => void;
  /** Called once per failed JWKS fetch, with the URL and the reason. */
  readonly onJwksFailure?: (url: string, reason: JwksFailure) => void;
  readonly maxCachedTokens?: number;
  readonly maxCachedTokenChars?: number;
  /** How long a request waits on another request's JWKS fetch (jwks-cache.ts). */
  readonly jwksJoinPatienceMs?: number;
}

interface CompiledIssuer {
  readonly issuer: string;
  readonly algorithms: readonly string[];
  readonly audiences: readonly string[] | undefined;
  readonly tenantClaim: string | undefined;
  readonly clockSkewS: number;
  readonly jwksUrl: string | null;
  readonly staticKeys: JwksSnapshot | null;
}

const INVALID: JwtRefusal = Object.freeze({ ok: false, code: "invalid_credential" });
const EXPIRED_OUTCOME: JwtRefusal = Object.freeze({ ok: false, code: "credential_expired" });
const UNAVAILABLE: JwtRefusal = Object.freeze({ ok: false, code: "auth_unavailable" });
type VerificationKey = Awaited<ReturnType<JwksSnapshot["getKey"]>>;
/** The key set lacks a key for the token's `kid` (or alg): the set may have rotated. */
const NO_KEY = Symbol("no key");

export class JwtVerifier {
  readonly #issuers = new Map<string, CompiledIssuer>();
  readonly #jwks: JwksCache;
  readonly #claims: JwtClaimsCache<JwtCaller>;
  readonly #reverifyAfterMs: number;
  readonly #onSignatureCheck: (() => void) | undefined;
  /**
   * Tokens refused as expired, by hex SHA-256 of the token, with the key set
   * that checked their signature: a client that keeps sending an expired
   * token costs a hash, not a signature check, until that key set changes.
   * Bounded (MAX_EXPIRED_REFUSALS, oldest out first).
   */
  readonly #expired = new Map<string, JwksSnapshot>();

  constructor(config: JwtConfig, options: JwtVerifierOptions) {
    for (const entry of config.issuers) {
      this.#issuers.set(entry.issuer, {
        issuer: entry.issuer,
        algorithms: [...entry.algorithms],
        audiences: entry.audiences === undefined ? undefined : [...entry.audiences],
        tenantClaim: entry.tenant_claim,
        clockSkewS: entry.clock_skew_s,
        jwksUrl: entry.jwks_url ?? null,
        staticKeys: entry.keys === undefined ? null : jwksSnapshot(entry.keys as JWK[], 0),
      });
    }
    this.#jwks = new JwksCache({
      ttlMs: config.jwks_cache_s * 1000,
      staleIfErrorMs: options.staleIfErrorS * 1000,
      fetch: options.fetchJwks ?? defaultJwksFetch,
      ...(options.jwksJoinPatienceMs === undefined ? {} : { joinPatienceMs: options.jwksJoinPatienceMs }),
      ...(options.onJwksFailure === undefined ? {} : { onFailure: options.onJwksFailure }),
    });
    this.#claims = new JwtClaimsCache(options.maxCachedTokens ?? DEFAULT_MAX_CACHED_TOKENS, options.maxCachedTokenChars ?? DEFAULT_MAX_CACHED_TOKEN_CHARS);
    // A cached token is verified again after the key set's lifetime, so a key
    // withdrawn from the JWKS stops vouching for cached tokens within it too.
    this.#reverifyAfterMs = config.jwks_cache_s * 1000;
    this.#onSignatureCheck = options.onSignatureCheck;
  }

  /** Tokens held in the claims cache. */
  get cachedTokens(): number {
    return this.#claims.size;
  }

  /**
   * The outcome for a token verified recently, checked for expiry at `nowMs`;
   * undefined when the token is not cached (call verify). Any string may be
   * passed: a hit means it is a JWT this verifier accepted. Synchronous: no
   * hashing, no awaiting, no allocation.
   */
  peek(token: string, nowMs: number): JwtOutcome | undefined {
    const hit = this.#claims.lookup(token, nowMs);
    return hit === EXPIRED ? EXPIRED_OUTCOME : hit;
  }

  /**
   * The outcome for `token` at `nowMs`: from the claims cache, else verified
   * (fetching the issuer's JWKS when needed). Never throws. `keepAlive`
   * receives a JWKS fetch this call starts, so it finishes if the request is
   * cancelled.
   */
  async verify(token: string, nowMs: number, keepAlive?: KeepAlive): Promise<JwtOutcome> {
    const cached = this.peek(token, nowMs);
    if (cached !== undefined) return cached;
    if (!looksLikeJwt(token)) return INVALID;

    let header: ProtectedHeaderParameters;
    let unverified: JWTPayload;
    try {
      header = decodeProtectedHeader(token);
      unverified = decodeJwt(token);
    } catch {
      return INVALID;
    }
    if (typeof unverified.iss !== "string") return INVALID;
    const issuer = this.#issuers.get(unverified.iss);
    if (issuer === undefined) return INVALID;
    if (typeof header.alg !== "string" || !issuer.algorithms.includes(header.alg)) return INVALID;

    // A token that is expired if its signature holds: refused before, with the key set in force now, it is refused again unchecked.
    let digest: string | null = null;
    if (typeof unverified.exp === "number" && nowMs >= 1000 * Math.ceil(unverified.exp + issuer.clockSkewS)) {
      digest = await sha256Hex(token);
      const checkedWith = this.#expired.get(digest);
      if (checkedWith !== undefined) {
        const current = issuer.staticKeys ?? (await this.#jwks.current(issuer.jwksUrl as string, nowMs, keepAlive));
        if (current === checkedWith) return EXPIRED_OUTCOME;
        this.#expired.delete(digest);
      }
    }
    const verified = await this.#verifyWithKeys(token, issuer, header, nowMs, keepAlive);
    if (digest !== null && verified.outcome === EXPIRED_OUTCOME && verified.keys !== null) this.#rememberExpired(digest, verified.keys);
    return verified.outcome;
  }

  /** The outcome, and the key set that decided it (null when none did). */
  async #verifyWithKeys(token: string, issuer: CompiledIssuer, header: ProtectedHeaderParameters, nowMs: number, keepAlive: KeepAlive | undefined): Promise<{ outcome: JwtOutcome; keys: JwksSnapshot | null }> {
    if (issuer.staticKeys !== null) {
      const outcome = await this.#check(token, issuer, issuer.staticKeys, header, nowMs);
      return { outcome: outcome === NO_KEY ? INVALID : outcome, keys: issuer.staticKeys };
    }
    const url = issuer.jwksUrl as string;
    const keys = await this.#jwks.current(url, nowMs, keepAlive);
    if (keys === null) return { outcome: UNAVAILABLE, keys: null };
    const outcome = await this.#check(token, issuer, keys, header, nowMs);
    if (outcome !== NO_KEY) return { outcome, keys };
    // An unknown kid: the issuer may have published a new key since (rotation).
    const newer = await this.#jwks.refreshForUnknownKid(url, keys, nowMs, keepAlive);
    if (newer === null) return { outcome: INVALID, keys: null };
    const retried = await this.#check(token, issuer, newer, header, nowMs);
    return { outcome: retried === NO_KEY ? INVALID : retried, keys: newer };
  }

  #rememberExpired(digest: string, keys: JwksSnapshot): void {
    if (this.#expired.size >= MAX_EXPIRED_REFUSALS) {
      const oldest = this.#expired.keys().next();
      if (oldest.done !== true) this.#expired.delete(oldest.value);
    }
    this.#expired.set(digest, keys);
  }

  /** Expired tokens whose refusal is held. */
  get expiredRefusals(): number {
    return this.#expired.size;
  }

  async #check(token: string, issuer: CompiledIssuer, keys: JwksSnapshot, header: ProtectedHeaderParameters, nowMs: number): Promise<JwtOutcome | typeof NO_KEY> {
    let candidates: VerificationKey[];
    try {
      candidates = [await keys.getKey(header)];
    } catch (error) {
      const code = errorCode(error);
      if (code === "ERR_JWKS_NO_MATCHING_KEY") return NO_KEY;
      if (code !== "ERR_JWKS_MULTIPLE_MATCHING_KEYS") return INVALID;
      candidates = await firstCandidates(error as AsyncIterable<VerificationKey>);
    }
    for (const key of candidates) {
      this.#onSignatureCheck?.();
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, key, {
          issuer: issuer.issuer,
          algorithms: issuer.algorithms as string[],
          clockTolerance: issuer.clockSkewS,
          currentDate: new Date(nowMs),
          requiredClaims: ["exp", "sub"],
          ...(issuer.audiences === undefined ? {} : { audience: issuer.audiences as string[] }),
        }));
      } catch (error) {
        const code = errorCode(error);
        if (code === "ERR_JWS_SIGNATURE_VERIFICATION_FAILED" && candidates.length > 1) continue;
        return code === "ERR_JWT_EXPIRED" ? EXPIRED_OUTCOME : INVALID;
      }
      return this.#accept(token, issuer, payload, nowMs);
    }
    return INVALID;
  }

  async #accept(token: string, issuer: CompiledIssuer, payload: JWTPayload, nowMs: number): Promise<JwtOutcome> {
    const { sub, exp, nbf } = payload;
    if (typeof sub !== "string" || sub.length === 0 || typeof exp !== "number") return INVALID;
    let tenant: string | null = null;
    let tenantClaimInvalid = false;
    if (issuer.tenantClaim !== undefined && Object.hasOwn(payload, issuer.tenantClaim)) {
      const value = payload[issuer.tenantClaim];
      if (typeof value === "string" && JWT_TENANT_SLUG.test(value)) tenant = value;
      else tenantClaimInvalid = true;
    }
    const caller: JwtCaller = Object.freeze({
      ok: true,
      callerKey: `jwt:${await sha256Hex(`${issuer.issuer}\n${sub}`)}`,
      issuer: issuer.issuer,
      expiresAtMs: exp * 1000,
      tenant,
      tenantClaimInvalid,
    });
    // jose calls a token expired when exp <= floor(now_s) - skew, and not yet
    // valid when nbf > floor(now_s) + skew; in milliseconds that is exactly
    // now_ms >= 1000·ceil(exp + skew) and now_ms < 1000·ceil(nbf - skew).
    this.#claims.store(token, caller, {
      validFromMs: typeof nbf === "number" ? 1000 * Math.ceil(nbf - issuer.clockSkewS) : Number.NEGATIVE_INFINITY,
      expiredAtMs: 1000 * Math.ceil(exp + issuer.clockSkewS),
      reverifyAtMs: nowMs + this.#reverifyAfterMs,
    });
    return caller;
  }
}

/** The JWT verifier for a parsed `jwt` config section. Build it once per config: it holds the isolate's key sets and claims cache. */
export function compileJwtConfig(config: JwtConfig, options: JwtVerifierOptions): JwtVerifier {
  return new JwtVerifier(config, options);
}

function errorCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" ? error.code : undefined;
}

async function firstCandidates(keys: AsyncIterable<VerificationKey>): Promise<VerificationKey[]> {
  const out: VerificationKey[] = [];
  for await (const key of keys) {
    out.push(key);
    if (out.length >= MAX_KEY_CANDIDATES) break;
  }
  return out;
}
