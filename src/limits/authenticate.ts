// DESIGN §3 steps 2–3: the auth-failure gate and the credential. Sets
// `c.get("caller")` (limits compiled, read through the isolate's caches) or
// answers 401 / 429 / 503 itself. A refused credential charges one unit to
// `authfail:<clientKey>`; an address already over `auth_failures` is refused
// before any lookup, so a flood of random keys costs no D1 query past the
// limit. In `mode: "shadow"` a refusal is recorded in `c.get("shadow")` and the
// request continues as anonymous. Messages never carry a key, digest or
// address.
//
// The hot path — a key seen recently whose record and the override snapshot
// are fresh — hashes nothing, queries nothing and awaits nothing but `next()`.
import type { Context, MiddlewareHandler } from "hono";
import { peekKey, lookupKey, rememberDigest, rememberedDigest } from "../cache/key-cache";
import { loadOverrides, type OverrideSnapshot, peekOverrides } from "../cache/override-cache";
import type { Config } from "../config";
import type { Caller, GatewayEnv } from "../context";
import { database } from "../db/client";
import { admit, type Charge, wouldAdmit } from "../engine/gcra";
import { retryAfterSeconds } from "../engine/rate-limit-headers";
import { type ProblemCode, problem } from "../errors";
import { limiterTable } from "./limiter-state";
import { refuse as refuseWith } from "./refuse";
import { noteRefusal } from "./sustained";
import { authFailureRejections } from "../cache/rejection-counter";
import { hasValidCheck, parseApiKey, readCredential, sha256Hex } from "../identity/api-key";
import { loadKeyCheck, peekKeyCheck } from "../cache/key-check";
import { usageTracker } from "../identity/usage-tracker";

export const AUTH_FAILURE_CATEGORY = "auth_failures";
/** Seconds a client should wait after a key could not be verified. */
const AUTH_UNAVAILABLE_RETRY_AFTER_S = 1;

type Ctx = Context<GatewayEnv>;

function authFailureCharge(config: Config, clientKey: string): Charge {
  return { subject: `authfail:${clientKey}`, category: AUTH_FAILURE_CATEGORY, limits: config.authFailureLimits, cost: 1 };
}

function loadOverridesFor(c: Ctx, config: Config, nowMs: number): Promise<OverrideSnapshot> {
  return loadOverrides(() => database(c.env.DB), config, nowMs);
}

function waitUntilOf(c: Ctx): (work: Promise<unknown>) => void {
  return (work) => {
    try {
      c.executionCtx.waitUntil(work);
    } catch {
      // No execution context (a unit test calling the app directly): let it run unobserved.
      work.catch(() => {});
    }
  };
}

/** The authentication middleware. Runs after clientAddress(), before routing and rate limits. */
export function authenticate(): MiddlewareHandler<GatewayEnv> {
  return async function authenticate(c, next) {
    const config = c.get("config");
    if (config.mode === "off") return next();
    const nowMs = Date.now();

    // A refusal: answered in enforce mode, recorded in shadow mode (then the
    // request goes on as anonymous, so the caller below is set either way).
    const refuse = (code: ProblemCode, detail: string, extras?: Record<string, string | number>, headers?: Record<string, string>): Response | null =>
      refuseWith(c, code, problem(code, { detail, ...(extras === undefined ? {} : { extras }), ...(headers === undefined ? {} : { headers }) }));
    const asAnonymous = async (): Promise<void> => {
      // A fresh snapshot is read without awaiting anything.
      const overrides = peekOverrides(config, nowMs) ?? (await loadOverridesFor(c, config, nowMs));
      c.set("caller", { kind: "anonymous", override: overrides.get(`ip:${c.get("clientKey")}`) ?? null });
    };
    const proceed = async (): Promise<void> => {
      await next();
      const caller = c.get("caller");
      if (caller.kind === "key" && c.get("decision") === "admitted") {
        usageTracker.recordKeyUse(caller.keyId, c.get("clientAddress"), Date.now(), config.usageMaxPending, config.usageFlushIntervalMs);
      }
      usageTracker.maybeFlush(() => database(c.env.DB), Date.now(), config.usageFlushIntervalMs, waitUntilOf(c));
    };

    const credential = readCredential(c.req.raw.headers);
    if (credential === null) {
      if (config.anonymous === "deny") {
        const refused = refuse("credential_required", "This gateway requires an API key.");
        if (refused !== null) return refused;
      }
      await asAnonymous();
      return proceed();
    }

    // Step 2: the gate. Checked without charging; only a refused credential charges.
    const table = limiterTable(config.limiterMaxMemoryMib);
    const charges = [authFailureCharge(config, c.get("clientKey"))];
    const gate = wouldAdmit(table, charges, nowMs);
    if (!gate.allowed) {
      noteRefusal(c, authFailureRejections, "auth_failures_sustained", `ip:${c.get("clientKey")}`, AUTH_FAILURE_CATEGORY, null);
      const refused = refuse(
        "auth_failures",
        "Too many failed authentications from this address.",
        { category: AUTH_FAILURE_CATEGORY, retry_after_ms: gate.retryAfterMs },
        { "retry-after": String(retryAfterSeconds(gate.retryAfterMs)) },
      );
      if (refused !== null) return refused;
      await asAnonymous();
      return proceed();
    }
    const fail = async (code: ProblemCode, detail: string): Promise<Response | void> => {
      admit(table, charges, nowMs);
      noteRefusal(c, authFailureRejections, "auth_failures_sustained", `ip:${c.get("clientKey")}`, AUTH_FAILURE_CATEGORY, null);
      const refused = refuse(code, detail);
      if (refused !== null) return refused;
      await asAnonymous();
      return proceed();
    };

    // Step 3: the credential.
    const parsed = parseApiKey(credential);
    if (parsed === null) return fail("invalid_credential", "The credential is not an API key issued by this gateway.");
    const remembered = rememberedDigest(credential);
    const unavailable = async (): Promise<Response | void> => {
      console.error(JSON.stringify({ level: "error", at_unix_ms: nowMs, event: "key_lookup_failed" }));
      const refused = refuse("auth_unavailable", "The API key could not be verified right now.", undefined, { "retry-after": String(AUTH_UNAVAILABLE_RETRY_AFTER_S) });
      if (refused !== null) return refused;
      await asAnonymous();
      return proceed();
    };
    if (remembered === undefined) {
      // A key not seen recently must carry a valid check before it costs a
      // lookup: made-up keys stop here, with no D1 query.
      let checkKey = peekKeyCheck(nowMs);
      if (checkKey === undefined) {
        try {
          checkKey = await loadKeyCheck(() => database(c.env.DB), config, nowMs);
        } catch {
          return unavailable();
        }
      }
      if (checkKey === null || !(await hasValidCheck(credential, checkKey))) {
        return fail("invalid_credential", "The API key is not valid.");
      }
    }
    const digest = remembered ?? (await sha256Hex(credential));
    let record = peekKey(digest, config, nowMs);
    if (record === undefined) {
      try {
        record = await lookupKey(() => database(c.env.DB), digest, config, nowMs);
      } catch {
        return unavailable();
      }
    }
    if (record === null) return fail("invalid_credential", "The API key is not valid.");
    if (remembered === undefined) rememberDigest(credential, digest, config);
    if (record.revokedAtMs !== null && record.revokedAtMs <= nowMs) return fail("credential_revoked", "The API key was revoked.");
    if (record.expiresAtMs !== null && record.expiresAtMs <= nowMs) return fail("credential_expired", "The API key has expired.");

    const overrides = peekOverrides(config, nowMs) ?? (await loadOverridesFor(c, config, nowMs));
    const caller: Caller = {
      kind: "key",
      keyId: record.keyId,
      digest: record.digest,
      tenant: record.tenant,
      override: overrides.get(`key:${record.keyId}`) ?? null,
      keyLimits: record.keyLimits,
      tenantLimits: record.tenantLimits,
      quota: record.quota,
    };
    c.set("caller", caller);
    return proceed();
  };
}
