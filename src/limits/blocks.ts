// Blocks: a blocked caller, tenant or network gets 403 blocked
// before any other check (after the client address), charged nothing, never
// forwarded. Countries come from the config (`blocked_countries`, matched
// against request.cf.country); operator blocks come from the policy snapshot.
// A shadow block refuses nothing: the request goes on, marked
// `Tollgate-Shadow: blocked;policy="block-<id>"` and counted. A penalty (a
// limit's penalty box, src/limits/penalty.ts) is a block whose answer says
// so (`reason: penalty:<policy>`) and when it ends (Retry-After).
import { type ActiveBlock, blockPolicyName, type PolicyCache, type PolicySnapshot } from "../cache/policy-cache";
import type { Exchange } from "../exchange";
import { database } from "../db/client";
import { fixedProblem, problem } from "../errors";
import { parseApiKey } from "../identity/api-key";
import { credentialOf } from "../identity/caller-id";
import { keepAlive } from "../utils/wait-until";
import type { Check, CheckResult } from "./check";

const BLOCKED = fixedProblem("blocked", { detail: "Requests from this caller are blocked by the operator." });

export function blockedResponse(): Response {
  return BLOCKED();
}

/** The answer to a blocked request: an operator's block says nothing more; a penalty names its cause and its end. */
function blockAnswer(block: ActiveBlock, nowMs: number): Response {
  if (block.penalty === null) return BLOCKED();
  const retryAfterS = block.expiresAtMs === null ? null : Math.max(1, Math.ceil((block.expiresAtMs - nowMs) / 1000));
  return problem("blocked", {
    detail: "This caller was refused too often by a rate limit with a penalty, and is blocked for a while.",
    hint: "Wait until Retry-After has passed, and keep to the limit named in `reason` after that.",
    extras: { reason: block.penalty, ...(block.expiresAtMs === null ? {} : { blocked_until: new Date(block.expiresAtMs).toISOString() }) },
    ...(retryAfterS === null ? {} : { headers: { "retry-after": String(retryAfterS) } }),
  });
}

/**
 * Applies a block that holds the request: refuses it (naming the block for
 * the log and the `block.hit` alert), or, for a shadow block, marks it and
 * lets it go on (null).
 */
export function applyBlock(x: Exchange, block: ActiveBlock, nowMs: number): CheckResult {
  if (block.shadow) {
    x.markShadow("blocked", blockPolicyName(block));
    return null;
  }
  x.blockId = block.id;
  x.blockPenalty = block.penalty;
  return x.refuse("blocked", blockAnswer(block, nowMs));
}

/** Seconds a client should wait when the caller policy could not be loaded. */
const POLICY_UNAVAILABLE_RETRY_AFTER_S = 1;

const POLICY_UNAVAILABLE = fixedProblem("policy_unavailable", {
  detail: "The gateway could not load its caller policy, so it cannot tell whether this caller is blocked.",
  headers: { "retry-after": String(POLICY_UNAVAILABLE_RETRY_AFTER_S) },
});

export interface CountryBlockOptions {
  readonly countries: ReadonlySet<string>;
}

/**
 * Needs the blocked countries; returns a Check, or null when there are none.
 * @example blockCountries({ countries: new Set(["KP"]) }) // null when the list is empty
 */
export function blockCountries(options: CountryBlockOptions): Check | null {
  const countries = options.countries;
  if (countries.size === 0) return null;
  return function countryBlockStep(x: Exchange) {
    const country = (x.request as Request<unknown, IncomingRequestCfProperties>).cf?.country;
    if (typeof country === "string" && countries.has(country)) return x.refuse("blocked", blockedResponse());
    return null;
  };
}

export interface CallerBlockOptions {
  readonly policy: PolicyCache;
}

/** The policy snapshot: synchronous when fresh, else loaded (never throws). One read for the block and credential steps. */
export function policyOf(x: Exchange, policy: PolicyCache, nowMs: number): PolicySnapshot | Promise<PolicySnapshot> {
  return policy.peek(nowMs) ?? policy.load(() => database(x.env.DB), nowMs, (work) => keepAlive(x.ctx, work));
}

function blockedBy(x: Exchange, snapshot: PolicySnapshot): CheckResult {
  // An isolate that has never loaded the policy, under policy_on_error "closed": no block can be ruled out.
  if (!snapshot.available) return x.refuse("policy_unavailable", POLICY_UNAVAILABLE());
  if (!snapshot.hasBlocks) return null;
  const nowMs = x.startedAtMs;
  const byAddress = snapshot.blockOf(`ip:${x.clientKey}`, nowMs);
  if (byAddress !== null && !byAddress.shadow) return applyBlock(x, byAddress, nowMs);
  const byNetwork = x.clientIp === null ? null : snapshot.netBlockOf(x.clientIp, nowMs);
  if (byNetwork !== null && !byNetwork.shadow) return applyBlock(x, byNetwork, nowMs);
  // A managed key names its id in clear: a blocked key is refused before any lookup.
  const credential = credentialOf(x);
  const key = credential === null ? null : parseApiKey(credential);
  const byKey = key === null ? null : snapshot.blockOf(`key:${key.id}`, nowMs);
  if (byKey !== null && !byKey.shadow) return applyBlock(x, byKey, nowMs);
  // Nothing refuses: the shadow blocks that hold it are marked.
  for (const block of [byAddress, byNetwork, byKey]) if (block !== null) applyBlock(x, block, nowMs);
  return null;
}

/**
 * Operator blocks of an address (`ip:`), a network (`net:`) or a managed key
 * (`key:`), right after the client address and before any lookup or charge.
 * Blocks of a tenant or a JWT caller are applied by the authenticate step,
 * once the caller is known. With no policy loaded yet and `policy_on_error`
 * "closed", every request is refused 503 policy_unavailable here.
 * Needs the policy cache (blocks by caller and network); returns a Check.
 * @example const blocks = blockCallers({ policy: runtime.policy });
 */
export function blockCallers(options: CallerBlockOptions): Check {
  const policy = options.policy;
  return function callerBlockStep(x) {
    const snapshot = policyOf(x, policy, x.startedAtMs);
    return snapshot instanceof Promise ? snapshot.then((s) => blockedBy(x, s)) : blockedBy(x, snapshot);
  };
}
