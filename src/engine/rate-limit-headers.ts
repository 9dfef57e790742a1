// Rate-limit header values for a decision: every policy the request is
// charged under, and the figures of the one closest to running out.
//
// RateLimit-Policy and RateLimit are Structured Field Lists (RFC 9651) whose
// items are a String naming the policy, with parameters. Two versions of the
// IETF httpapi ratelimit-headers draft, chosen by `rate_limit_headers`:
//   draft-11 (23 May 2026, the default)
//     RateLimit-Policy: "<name>";q=<quota>;w=<window seconds>, …
//     RateLimit:        "<name>";r=<available quota>;t=<effective window seconds>
//   draft-12 (20 Nov 2026)
//     RateLimit-Policy: as draft-11
//     RateLimit:        "<name>";a=<available quota>;w=<effective window seconds>;c=<this request's cost>
//     RateLimit-Partition: "<name>";pk=<who shares it>, …
// RateLimit-Policy lists every policy charged for the request (each limit of
// each subject with a cost), so a client sees the hourly window it will meet
// after the per-minute one; RateLimit gives the one closest to running out.
// RateLimit-Partition (draft-12) says, for each policy, whose quota it is: a
// token naming the subject kind (key, jwt, tenant, ip, anonymous, admin) —
// never the subject itself.
//
// Window figures are whole seconds (the draft has no sub-second precision),
// so w is left out of a policy whose window is not a whole number of seconds,
// and the effective window is rounded up. Vendor parameters carry a prefix, as
// the draft asks: tollgate-burst when the burst differs from the count.
//
// Choices for GCRA:
// - q/w are the sustained rate as configured (count per window_s).
// - r (a) is the number of cost-1 spends admitted right now, after this
//   decision; it can exceed q when the burst is larger than the count.
// - t (w on RateLimit) and X-RateLimit-Reset are the seconds until the limit is
//   fully earned back (r is back to the burst).
// - c is the request's cost in that policy's category (the sum when one
//   request spends twice on the same limit).
// - X-RateLimit-Limit is q, the same limit RateLimit-Policy describes (count
//   per window_s); X-RateLimit-Remaining is r, so with a burst larger than
//   the count Remaining can exceed Limit (up to the burst, which the policy
//   carries as tollgate-burst).
// Shadow limits (src/engine/shadow.ts) are never listed: a client is told
// only what can refuse it.
// The policy name is "<category>-<subject kind>-<window>", e.g.
// "request-ip-60s": never the subject itself, so no caller key, address or
// credential reaches a header. Two policies of one request that would share a
// name (two limits of one subject with the same window) get "-2", "-3".
import type { Charge, Decision } from "./gcra";
import { type Limit, sameLimit } from "./limit";
import { subjectKindOf } from "./resolve-limits";

export type HeaderList = readonly (readonly [name: string, value: string])[];

/** The draft revision the RateLimit fields follow (`rate_limit_headers`). */
export type HeaderVersion = "draft-11" | "draft-12";
export const HEADER_VERSIONS: readonly HeaderVersion[] = ["draft-11", "draft-12"];

const NO_HEADERS: HeaderList = Object.freeze([]);

/** Retry-After for a denial: whole seconds, rounded up (a 1 ms delay is 1 s). */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.ceil(retryAfterMs / 1000);
}

function windowLabel(limit: Limit): string {
  return limit.windowMs % 1000 === 0 ? `${limit.windowMs / 1000}s` : `${limit.windowMs}ms`;
}

// Headers are built for every charged request: what depends only on a
// category or a compiled limit is computed once. Categories come from the
// config and routes (bounded); the memo is capped all the same.
const SAFE_CATEGORIES = new Map<string, string>();
const MAX_SAFE_CATEGORIES = 1024;
const LIMIT_TEXT = new WeakMap<Limit, LimitText>();

/** What the headers say of a compiled limit whatever the figures: its window label, RateLimit-Policy parameters and count. */
interface LimitText {
  readonly window: string;
  readonly params: string;
  readonly count: string;
}

function safeCategoryOf(category: string): string {
  let safe = SAFE_CATEGORIES.get(category);
  if (safe === undefined) {
    safe = category.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 32);
    if (SAFE_CATEGORIES.size < MAX_SAFE_CATEGORIES) SAFE_CATEGORIES.set(category, safe);
  }
  return safe;
}

/** A limit's window label, its RateLimit-Policy parameters (`;q=…;w=…`) and count, computed once per compiled limit. */
function limitText(limit: Limit): LimitText {
  let text = LIMIT_TEXT.get(limit);
  if (text === undefined) {
    let params = `;q=${limit.count}`;
    if (limit.windowMs % 1000 === 0) params += `;w=${limit.windowMs / 1000}`;
    if (limit.burst !== limit.count) params += `;tollgate-burst=${limit.burst}`;
    text = { window: windowLabel(limit), params, count: String(limit.count) };
    LIMIT_TEXT.set(limit, text);
  }
  return text;
}

/** The policy name: safe as a Structured Field String (no quote or backslash), and free of any subject. */
export function policyName(category: string, subject: string, limit: Limit): string {
  return `${safeCategoryOf(category)}-${subjectKindOf(subject) ?? "subject"}-${limitText(limit).window}`;
}

/** One policy of a request: a limit of a charge, its name, and the request's cost under it. */
interface Policy {
  readonly chargeIndex: number;
  readonly subject: string;
  readonly category: string;
  readonly limit: Limit;
  readonly name: string;
  cost: number;
}

function samePolicy(p: Policy, subject: string, category: string, limit: Limit): boolean {
  return p.subject === subject && p.category === category && (p.limit === limit || sameLimit(p.limit, limit));
}

/** Every enforced (charge, limit) with a cost, once each, in charge order, named uniquely. A shadow limit is not advertised: it refuses nothing. */
function policiesOf(charges: readonly Charge[]): Policy[] {
  const policies: Policy[] = [];
  for (let c = 0; c < charges.length; c++) {
    const charge = charges[c]!;
    if (charge.cost <= 0) continue;
    const limits = charge.limits;
    for (let j = 0; j < limits.length; j++) {
      const limit = limits[j]!;
      if (limit.shadow) continue;
      let same: Policy | null = null;
      for (let k = 0; k < policies.length && same === null; k++) if (samePolicy(policies[k]!, charge.subject, charge.category, limit)) same = policies[k]!;
      if (same !== null) {
        same.cost += charge.cost;
        continue;
      }
      const base = policyName(charge.category, charge.subject, limit);
      let name = base;
      for (let n = 2; nameTaken(policies, name); n++) name = `${base}-${n}`;
      policies.push({ chargeIndex: c, subject: charge.subject, category: charge.category, limit, name, cost: charge.cost });
    }
  }
  return policies;
}

function nameTaken(policies: readonly Policy[], name: string): boolean {
  for (let k = 0; k < policies.length; k++) if (policies[k]!.name === name) return true;
  return false;
}

/**
 * What a charge list's headers hold whatever the figures: its policies,
 * named, the RateLimit-Policy value (and draft-12's RateLimit-Partition),
 * and which policy each (charge, limit) belongs to. Only the figures of the
 * tightest limit change from one request to the next, so a plan is made once
 * per shape of charge list (HEADER_PLANS) and every request of that shape,
 * admitted or refused, reuses it.
 */
interface HeaderPlan {
  /** What a charge list must match to use this plan: per charge, its limits (the same array), category, cost, subject kind, and the first charge with the same subject. */
  readonly shape: readonly ChargeShape[];
  readonly policies: readonly PlanPolicy[];
  /** policyAt[c][j]: the index in `policies` of charges[c].limits[j]'s policy; -1 when none (a shadow limit, or cost 0 with no twin). */
  readonly policyAt: readonly (readonly number[])[];
  readonly policyValue: string;
  partitionValue: string | null;
}

/** A policy as the headers name it: never its subject (a plan outlives the request that made it), only the subject's kind. */
interface PlanPolicy {
  readonly name: string;
  readonly limit: Limit;
  readonly cost: number;
  /** RateLimit-Partition's pk: the subject kind. */
  readonly partition: string;
}

function planPolicy(policy: Policy): PlanPolicy {
  return { name: policy.name, limit: policy.limit, cost: policy.cost, partition: subjectKindOf(policy.subject) ?? "subject" };
}

interface ChargeShape {
  readonly limits: readonly Limit[];
  readonly category: string;
  readonly cost: number;
  readonly kind: string | null;
  readonly sameSubjectAs: number;
}

/**
 * Plans by the first charge's limits (an array compiled once per config,
 * override or key, so a hot caller's lists share it): a WeakMap, so a plan
 * goes when its limits do, and at most PLANS_PER_LIMITS per array.
 */
const HEADER_PLANS = new WeakMap<readonly Limit[], HeaderPlan[]>();
const PLANS_PER_LIMITS = 8;

function firstSameSubject(charges: readonly Charge[], c: number): number {
  const subject = charges[c]!.subject;
  for (let k = 0; k < c; k++) if (charges[k]!.subject === subject) return k;
  return c;
}

function fits(plan: HeaderPlan, charges: readonly Charge[]): boolean {
  const shape = plan.shape;
  if (shape.length !== charges.length) return false;
  for (let c = 0; c < shape.length; c++) {
    const s = shape[c]!;
    const charge = charges[c]!;
    if (charge.limits !== s.limits || charge.category !== s.category || charge.cost !== s.cost) return false;
    if (firstSameSubject(charges, c) !== s.sameSubjectAs || subjectKindOf(charge.subject) !== s.kind) return false;
  }
  return true;
}

function makePlan(charges: readonly Charge[]): HeaderPlan {
  const policies = policiesOf(charges);
  const policyAt: number[][] = [];
  const shape: ChargeShape[] = [];
  for (let c = 0; c < charges.length; c++) {
    const charge = charges[c]!;
    shape.push({ limits: charge.limits, category: charge.category, cost: charge.cost, kind: subjectKindOf(charge.subject), sameSubjectAs: firstSameSubject(charges, c) });
    policyAt.push(charge.limits.map((limit) => policies.findIndex((p) => samePolicy(p, charge.subject, charge.category, limit))));
  }
  let policyValue = "";
  for (const policy of policies) policyValue += (policyValue === "" ? "" : ", ") + policyItem(policy);
  return { shape, policies: policies.map(planPolicy), policyAt, policyValue, partitionValue: null };
}

/** The plan for a charge list (at least one charge): a cached one of the same shape, or a new one. */
function planFor(charges: readonly Charge[]): HeaderPlan {
  const key = charges[0]!.limits;
  const plans = HEADER_PLANS.get(key);
  if (plans !== undefined) for (let i = 0; i < plans.length; i++) if (fits(plans[i]!, charges)) return plans[i]!;
  const plan = makePlan(charges);
  if (plans === undefined) HEADER_PLANS.set(key, [plan]);
  else {
    if (plans.length >= PLANS_PER_LIMITS) plans.shift();
    plans.push(plan);
  }
  return plan;
}

function partitionsOf(policies: readonly PlanPolicy[]): string {
  let partitions = "";
  for (const policy of policies) partitions += `${partitions === "" ? "" : ", "}"${policy.name}";pk=${policy.partition}`;
  return partitions;
}

/** The index of the policy a (charge index, limit) pair belongs to (a repeated spend is found under its first charge), or -1. */
function policyIndex(plan: HeaderPlan, charges: readonly Charge[], chargeIndex: number, limit: Limit): number {
  const row = plan.policyAt[chargeIndex];
  const limits = charges[chargeIndex]?.limits;
  if (row === undefined || limits === undefined) return -1;
  for (let j = 0; j < limits.length; j++) if (limits[j] === limit) return row[j]!;
  for (let j = 0; j < limits.length; j++) if (sameLimit(limits[j]!, limit)) return row[j]!;
  return -1;
}

function policyItem(policy: { readonly name: string; readonly limit: Limit }): string {
  return `"${policy.name}"${limitText(policy.limit).params}`;
}

/**
 * RateLimit-Policy (every policy charged), RateLimit (the decision's tightest:
 * the denying limit, or the one with the least remaining), in draft-12 also
 * RateLimit-Partition, and X-RateLimit-Limit / -Remaining / -Reset for the
 * tightest; empty when nothing was metered. Retry-After is not included: see
 * retryAfterSeconds.
 */
export function rateLimitHeaders(decision: Decision, charges: readonly Charge[], version: HeaderVersion = "draft-11"): HeaderList {
  return decision.tightest === null ? NO_HEADERS : headersOf(decision, charges, version, planFor(charges));
}

/**
 * A denial's RateLimit headers (as rateLimitHeaders) and its violated
 * policies (as violatedPolicies), from the one plan: what a 429 needs.
 */
export function deniedPolicies(decision: Decision, charges: readonly Charge[], version: HeaderVersion = "draft-11"): { readonly headers: HeaderList; readonly violated: string[] } {
  if (decision.tightest === null) return { headers: NO_HEADERS, violated: [] };
  const plan = planFor(charges);
  return { headers: headersOf(decision, charges, version, plan), violated: violatedOf(decision, charges, plan) };
}

function headersOf(decision: Decision, charges: readonly Charge[], version: HeaderVersion, plan: HeaderPlan): HeaderList {
  const figures = decision.tightest!;
  const charge = charges[figures.chargeIndex];
  if (charge === undefined) throw new RangeError("decision does not belong to these charges");
  const limit = figures.limit;
  const index = policyIndex(plan, charges, figures.chargeIndex, limit);
  let tightest: PlanPolicy;
  let policyValue = plan.policyValue;
  let partitions: () => string = () => (plan.partitionValue ??= partitionsOf(plan.policies));
  if (index >= 0) tightest = plan.policies[index]!;
  else {
    // A charge of cost 0 (a denial names the spend it could not fit, which always has a cost; kept total for safety): listed too, on this answer only.
    tightest = { name: policyName(charge.category, charge.subject, limit), limit, cost: charge.cost, partition: subjectKindOf(charge.subject) ?? "subject" };
    const policies = [...plan.policies, tightest];
    policyValue += (policyValue === "" ? "" : ", ") + policyItem(tightest);
    partitions = () => partitionsOf(policies);
  }
  const resetS = Math.ceil(figures.resetMs / 1000);
  const remaining = String(figures.remaining);
  const reset = String(resetS);
  if (version === "draft-12") {
    return [
      ["RateLimit-Policy", policyValue],
      ["RateLimit", `"${tightest.name}";a=${remaining};w=${reset};c=${tightest.cost}`],
      ["RateLimit-Partition", partitions()],
      ["X-RateLimit-Limit", limitText(limit).count],
      ["X-RateLimit-Remaining", remaining],
      ["X-RateLimit-Reset", reset],
    ];
  }
  return [
    ["RateLimit-Policy", policyValue],
    ["RateLimit", `"${tightest.name}";r=${remaining};t=${reset}`],
    ["X-RateLimit-Limit", limitText(limit).count],
    ["X-RateLimit-Remaining", remaining],
    ["X-RateLimit-Reset", reset],
  ];
}

/**
 * The names of the policies a denied decision did not fit (`violated-policies`
 * in the 429 body), as RateLimit-Policy names them; empty when allowed.
 */
export function violatedPolicies(decision: Decision, charges: readonly Charge[]): string[] {
  if (decision.allowed || decision.tightest === null) return [];
  return violatedOf(decision, charges, planFor(charges));
}

function violatedOf(decision: Decision, charges: readonly Charge[], plan: HeaderPlan): string[] {
  if (decision.allowed || decision.tightest === null) return [];
  const refs = decision.violated ?? [{ chargeIndex: decision.tightest.chargeIndex, limit: decision.tightest.limit }];
  const names: string[] = [];
  for (const ref of refs) {
    const index = policyIndex(plan, charges, ref.chargeIndex, ref.limit);
    const charge = charges[ref.chargeIndex];
    const name = index >= 0 ? plan.policies[index]!.name : charge === undefined ? null : policyName(charge.category, charge.subject, ref.limit);
    if (name !== null && !names.includes(name)) names.push(name);
  }
  return names;
}

/** What a budget refusal's headers describe (src/limits/budget.ts). */
export interface BudgetFigures {
  readonly category: string;
  /** `key`, `tenant` or `org`: whose budget, never the owner itself. */
  readonly ownerKind: string;
  /** `day`, `week`, `month` or `none` (credits). */
  readonly period: string;
  readonly amount: number;
  /** The current period's length in whole seconds; null for credits (no period). */
  readonly periodS: number | null;
  /** Whole seconds, rounded up, until the period resets; null for credits (no reset). */
  readonly resetS: number | null;
  /** The units this request would have spent of it (draft-12's `c`). */
  readonly cost: number;
}

/** A budget's policy name, `budget-<category>-<owner kind>-<period>`: never the owner itself. */
export function budgetPolicyName(category: string, ownerKind: string, period: string): string {
  return `budget-${safeCategoryOf(category)}-${ownerKind}-${period}`;
}

/**
 * A budget refusal's RateLimit headers: the budget that refused, as a policy
 * `"budget-<category>-<owner kind>-<period>";q=<amount>;w=<period s>` with
 * nothing available (`r=0;t=<s to reset>`), and the legacy X-RateLimit-*
 * for it, so that a client reading headers is not told it has room left.
 * Credits have no window and no reset: `w` and `t` are left out.
 */
export function budgetHeaders(b: BudgetFigures, version: HeaderVersion = "draft-11"): HeaderList {
  const name = budgetPolicyName(b.category, b.ownerKind, b.period);
  const policy = `"${name}";q=${b.amount}${b.periodS === null ? "" : `;w=${b.periodS}`}`;
  const headers: [string, string][] = [["RateLimit-Policy", policy]];
  if (version === "draft-12") {
    headers.push(["RateLimit", `"${name}";a=0${b.resetS === null ? "" : `;w=${b.resetS}`};c=${b.cost}`], ["RateLimit-Partition", `"${name}";pk=${b.ownerKind}`]);
  } else {
    headers.push(["RateLimit", `"${name}";r=0${b.resetS === null ? "" : `;t=${b.resetS}`}`]);
  }
  headers.push(["X-RateLimit-Limit", String(b.amount)], ["X-RateLimit-Remaining", "0"]);
  if (b.resetS !== null) headers.push(["X-RateLimit-Reset", String(b.resetS)]);
  return headers;
}
