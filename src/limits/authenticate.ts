// docs/design.md steps 2–3: the auth-failure gate and the credential (one: two
// different ones are refused 400 ambiguous_credential). Sets
// x.caller (limits compiled, read through the runtime's caches) or answers
// 401 / 429 / 503. A refused credential charges one unit to the address's
// auth-failure limit and nothing else; an address already over the limit is
// refused before any lookup, so a flood of made-up keys costs no D1 query
// past it. In `mode: "shadow"` a refusal is recorded and the request goes on
// as anonymous. Messages never carry a key, digest or address.
import { authFailureRejections } from "../cache/rejection-counter";
import type { PolicyCache, PolicySnapshot } from "../cache/policy-cache";
import type { Caller, Exchange } from "../exchange";
import { database } from "../db/client";
import { fixedProblem, problem } from "../errors";
import { credentialOf } from "../identity/caller-id";
import { type CredentialOutcome, type CredentialVerifier, verifyCredential } from "../identity/credential";
import { log } from "../log/logger";
import { AUTH_FAILURE_CATEGORY, type AuthFailureGate, authFailuresResponse } from "./auth-gate";
import type { Check, CheckResult } from "./check";
import { applyBlock, policyOf } from "./blocks";
import { noteRefusal } from "./sustained";
import { keepAlive } from "../utils/wait-until";

/** Seconds a client should wait after its credential could not be verified. */
const AUTH_UNAVAILABLE_RETRY_AFTER_S = 1;
type RefusedOutcome = Extract<CredentialOutcome, { kind: "refused" }>;

/** Distinct fixed refusals kept compiled: the credential outcomes are a handful of constants. */
const MAX_FIXED_ANSWERS = 32;

export interface AuthenticateOptions {
  readonly anonymous: "allow" | "deny";
  readonly verifier: CredentialVerifier;
  readonly gate: AuthFailureGate;
  readonly policy: PolicyCache;
}

function keepAliveOf(x: Exchange): (work: Promise<unknown>) => void {
  return (work) => keepAlive(x.ctx, work);
}

function setAnonymous(x: Exchange, snapshot: PolicySnapshot): void {
  const callerKey = `ip:${x.clientKey}`;
  x.caller = { kind: "anonymous", callerKey, override: snapshot.overrideFor(callerKey, x.startedAtMs) };
}

/**
 * Who is calling: a managed key (`Authorization: Bearer` or `X-Api-Key`), a
 * JWT from a configured issuer (`Authorization: Bearer`), or anonymous by
 * address.
 * Needs the credential verifier (key and tenant caches, key check, JWT), the auth-failure gate and the policy cache; returns a Check that sets x.caller.
 * @example const auth = authenticate({ anonymous: "allow", verifier: runtime, gate: runtime.authGate, policy: runtime.policy });
 */
export function authenticate(options: AuthenticateOptions): Check {
  const { verifier, gate, policy } = options;
  const deny = options.anonymous === "deny";
  // A flood of made-up credentials is answered from bodies serialised once.
  const credentialRequired = fixedProblem("credential_required", { detail: "This gateway requires an API key." });
  const tenantUnknown = fixedProblem("tenant_unknown", { detail: "The token's tenant claim names no tenant of this gateway." });
  const authUnavailable = fixedProblem("auth_unavailable", { detail: "The credential could not be verified right now.", headers: { "retry-after": String(AUTH_UNAVAILABLE_RETRY_AFTER_S) } });
  // By the outcome itself: the refused outcomes are a handful of frozen
  // constants (src/identity/credential.ts), so a lookup is one identity
  // hash, with no key text joined and hashed per refusal.
  const fixed = new Map<RefusedOutcome, () => Response>();
  function refusedAnswer(outcome: RefusedOutcome): Response {
    let answer = fixed.get(outcome);
    if (answer === undefined) {
      answer = fixedProblem(outcome.code, { detail: outcome.detail });
      if (fixed.size < MAX_FIXED_ANSWERS) fixed.set(outcome, answer);
    }
    return answer();
  }

  function asAnonymous(x: Exchange, nowMs: number): CheckResult | Promise<CheckResult> {
    const snapshot = policyOf(x, policy, nowMs);
    if (snapshot instanceof Promise) return snapshot.then((s) => (setAnonymous(x, s), null));
    setAnonymous(x, snapshot);
    return null;
  }

  function refused(x: Exchange, nowMs: number, code: Parameters<Exchange["refuse"]>[0], response: Response): CheckResult | Promise<CheckResult> {
    return x.refuse(code, response) ?? asAnonymous(x, nowMs);
  }

  function onOutcome(x: Exchange, outcome: CredentialOutcome, nowMs: number): CheckResult | Promise<CheckResult> {
    switch (outcome.kind) {
      case "key": {
        const record = outcome.record;
        const callerKey = `key:${record.keyId}`;
        const snapshot = policyOf(x, policy, nowMs);
        const set = (s: PolicySnapshot): CheckResult => {
          // A blocked tenant is known only once its key is: refused here, before any charge.
          const tenantBlock = s.blockOf(`tenant:${record.tenant.slug}`, nowMs);
          if (tenantBlock !== null) {
            const blocked = applyBlock(x, tenantBlock, nowMs);
            if (blocked !== null) return blocked;
          }
          const caller: Caller = {
            kind: "key",
            keyId: record.keyId,
            callerKey,
            digest: record.digest,
            tenant: record.tenant,
            override: s.overrideFor(callerKey, nowMs),
            keyLimits: record.keyLimits,
            keyBudgets: record.keyBudgets,
          };
          x.caller = caller;
          return null;
        };
        return snapshot instanceof Promise ? snapshot.then(set) : set(snapshot);
      }
      case "jwt": {
        const callerKey = outcome.callerKey;
        const tenant = outcome.tenant;
        const snapshot = policyOf(x, policy, nowMs);
        const set = (s: PolicySnapshot): CheckResult => {
          // JWT callers and their tenants are known only now: a block applies here, before any charge.
          // Each block that holds it, the caller's first: a shadow one only marks the request.
          for (const block of [s.blockOf(callerKey, nowMs), tenant === null ? null : s.blockOf(`tenant:${tenant.slug}`, nowMs)]) {
            const blocked = block === null ? null : applyBlock(x, block, nowMs);
            if (blocked !== null) return blocked;
          }
          x.caller = { kind: "jwt", callerKey, tenant, override: s.overrideFor(callerKey, nowMs) };
          return null;
        };
        return snapshot instanceof Promise ? snapshot.then(set) : set(snapshot);
      }
      case "tenant_unknown":
        return refused(x, nowMs, "tenant_unknown", tenantUnknown());
      case "refused":
        gate.charge(x.clientKey, nowMs);
        noteRefusal(x, authFailureRejections, "auth_failures_sustained", `ip:${x.clientKey}`, AUTH_FAILURE_CATEGORY, nowMs);
        return refused(x, nowMs, outcome.code, refusedAnswer(outcome));
      case "unavailable":
        log.error("credential_check_failed", undefined, nowMs);
        return refused(x, nowMs, "auth_unavailable", authUnavailable());
    }
  }

  return function authenticateStep(x) {
    const nowMs = x.startedAtMs;
    const credential = credentialOf(x);
    if (credential === null) {
      if (deny) return refused(x, nowMs, "credential_required", credentialRequired());
      return asAnonymous(x, nowMs);
    }
    // Two different credentials: refused before any lookup, charged nothing.
    if (x.credentialConflict) {
      return refused(x, nowMs, "ambiguous_credential", problem("ambiguous_credential", { detail: "The request carries two different credentials (Authorization and X-Api-Key)." }));
    }
    const checked = x.keyChecked;
    // Run again after its key's check: the gate was open a moment ago, with no I/O between.
    if (checked === undefined) {
      const gateNow = gate.check(x.clientKey, nowMs);
      if (!gateNow.open) {
        noteRefusal(x, authFailureRejections, "auth_failures_sustained", `ip:${x.clientKey}`, AUTH_FAILURE_CATEGORY, nowMs);
        return refused(x, nowMs, "auth_failures", authFailuresResponse(gateNow.retryAfterMs));
      }
    }
    const outcome = verifyCredential(credential, verifier, { db: () => database(x.env.DB), keepAlive: keepAliveOf(x) }, nowMs, checked);
    if (outcome instanceof Promise) return outcome.then((o) => onOutcome(x, o, nowMs));
    if (outcome.kind === "check") {
      // Waits on no I/O: this step runs again with the verdict (src/limits/check.ts).
      x.settlesInTurn = true;
      return outcome.valid.then((valid) => {
        x.keyChecked = valid;
        return null;
      });
    }
    return onOutcome(x, outcome, nowMs);
  };
}
