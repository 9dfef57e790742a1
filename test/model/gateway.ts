// The reference model of the gateway's contract: given a scenario (config,
// tenants, keys, budgets, a timed sequence of requests and the origin's
// scripted answers) it says what each answer must be and what the counters
// must read afterwards. Pure TypeScript, written from the contract's words
// (docs/design.md): it imports nothing of src/.
//
// A request runs the pipeline in order: path, credential, route, rate
// limits, budgets, size, quota, forward; after the origin's answer its
// priced cost and status charges settle and the quota commits or releases.
// Requests sent together (a burst) are all admitted, in the order sent,
// before any answer comes back (the admission steps run before the first
// answer can); their answers then settle in the order the origin gives them
// (its scripted delay). In shadow mode every step runs, nothing is refused,
// and each refusal it would make is named in `Tollgate-Shadow`. A shadow
// limit or budget (per-policy shadow) never refuses: a request it would
// have refused goes on, charged nothing under it, and `Tollgate-Shadow`
// names it as `<code>;policy="<name>"`.
import { DEFAULT_EXHAUSTED_CACHE_MS, type BudgetRefusal, type ModelBudget, ModelBudgets } from "./budgets";
import { type Figures, type ModelLimit, ModelLimiter, modelLimit, policyName, type Spend } from "./limiter";
import { findRoute, normalise, type RouteFound } from "./path";
import { ModelQuota, type Reservation } from "./quota";
import { type Credential, ownerLabel, type RequestSpec, type Scenario, type SubjectKind, type TenantName } from "./scenario";

/** Built-in limits of the `request` category (used when the config names none for a subject kind). */
const BUILT_IN: Record<string, Partial<Record<SubjectKind, ModelLimit[]>>> = {
  request: {
    key: [{ count: 1000, windowMs: 1000, burst: 2000, shadow: false }],
    tenant: [{ count: 2000, windowMs: 1000, burst: 4000, shadow: false }],
    ip: [
      { count: 6000, windowMs: 60_000, burst: 6000, shadow: false },
      { count: 200_000, windowMs: 3_600_000, burst: 200_000, shadow: false },
    ],
  },
};

/** How long the isolate keeps a key it looked up (cache_ttl_s); an address's digest is kept longer than any scenario runs. */
const KEY_CACHE_TTL_MS = 10_000;

/** One acceptable answer; a budget refusal may name any budget that refused. */
export interface AnswerShape {
  status: number;
  code: string | null;
  retryAfterS: number | null;
  /** The category a 429 or 402 body names; null: not checked. */
  category: string | null;
}

export interface ExpectedAnswer {
  /** Where it is in the scenario: "step 3" or "step 3 #1" for a burst's second request. */
  at: string;
  hangUp: boolean;
  /** Any of these; more than one only when the contract leaves the choice open. */
  shapes: AnswerShape[];
  /** The codes of the refusals shadow mode let through, in the order of the steps (Tollgate-Shadow). */
  shadow: string[];
  /** What the shadow policies would have refused (`<code>;policy="<name>"`), in any order (Tollgate-Shadow after the codes). */
  shadowPolicies: string[];
  /** Marks the answer may carry or not: a shadow budget passed before an enforced one refused the request (which of them is asked first is open). */
  shadowPoliciesMaybe: string[];
  /** The path the origin gets, or null when the gateway answers itself. */
  forwardedPath: string | null;
  /** For a 429 rate_limited: the body's retry_after_ms and violated-policies. */
  retryAfterMs: number | null;
  violated: string[] | null;
  /** RateLimit-Policy: every policy charged (name → "q;w;burst"); null: not checked. */
  policies: Record<string, string> | null;
  /** Each policy's figures after this request, for the RateLimit header; null: not checked. */
  figures: Record<string, { r: number; t: number }> | null;
  /** Whether RateLimit must name the policy closest to running out (an admission); false for the denial shadow mode forwards, which names the policy with the longest wait, as a 429 would. */
  figuresTightest: boolean;
}

export interface ExpectedLimit {
  /** The scenario's name for the subject: kA, kB, anon, t0, t1. */
  subject: string;
  category: string;
  kind: SubjectKind;
  limit: ModelLimit;
  remaining: number;
  resetMs: number;
}

export interface Expected {
  answers: ExpectedAnswer[];
  limits: ExpectedLimit[];
  quota: Record<string, { bytes: number; objects: number; reservedBytes: number }>;
  budgets: { owner: string; category: string; used: number }[];
  /** How many options each choice point this run met had (see possibleOutcomes). */
  choicePoints: number[];
}

interface Caller {
  name: Credential;
  subject: string;
  kind: SubjectKind;
  tenant: TenantName | null;
  owners: string[];
}

interface Member {
  spec: RequestSpec;
  answer: ExpectedAnswer;
  caller: Caller | null;
  route: RouteFound | null;
  /** Set when the gateway answers the request itself (it is then done). */
  done: boolean;
  spends: Spend[];
  /** Whether the rate limits took the spends (false when shadow mode would have refused them). */
  charged: boolean;
  budgetSpends: { budget: ModelBudget; units: number; category: string }[];
  budgetsTaken: boolean;
  reservation: Reservation | null;
  forwardedPath: string | null;
  /** Its key was not in the isolate's cache: its admission waits for the lookup, after those that did not wait. */
  waitsForLookup: boolean;
}

const STATUS_CLASS = /^([1-5])xx$/;

function statusMatches(list: readonly (number | string)[], status: number): boolean {
  return list.some((entry) => (typeof entry === "number" ? entry === status : STATUS_CLASS.exec(entry)?.[1] === String(Math.floor(status / 100))));
}

/**
 * Every outcome the contract allows for `scenario`: one per order in which
 * concurrent requests waiting on different lookups (a key's record, an
 * address's first digest) may go on, at most `max` of them.
 */
export function possibleOutcomes(scenario: Scenario, startMs: number, answerOrders?: Readonly<Record<number, readonly number[]>>, max = 512): Expected[] {
  const outcomes: Expected[] = [];
  const pending: number[][] = [[]];
  while (pending.length > 0 && outcomes.length < max) {
    const choices = pending.shift()!;
    const expected = runModel(scenario, startMs, { choices, ...(answerOrders === undefined ? {} : { answerOrders }) });
    outcomes.push(expected);
    // Every later choice point this run met with its first option is a branch to try with the others.
    for (let i = choices.length; i < expected.choicePoints.length; i++) {
      for (let option = 1; option < expected.choicePoints[i]!; option++) pending.push([...choices, ...Array<number>(i - choices.length).fill(0), option]);
    }
  }
  return outcomes;
}

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

/**
 * One outcome of `scenario`. `answerOrders` gives, per step, the order in
 * which a burst's answers came back (as the test saw them arrive; the default
 * is the order of their scripted delays); `choices` picks, at each choice
 * point, one of the orders the contract leaves open.
 */
export function runModel(
  scenario: Scenario,
  startMs: number,
  options: { exhaustedCacheMs?: number; choices?: readonly number[]; answerOrders?: Readonly<Record<number, readonly number[]>> } = {},
): Expected {
  const { config } = scenario;
  const shadowMode = config.mode === "shadow";
  const cacheMs = options.exhaustedCacheMs ?? DEFAULT_EXHAUSTED_CACHE_MS;
  const limiter = new ModelLimiter();
  const budgets = new ModelBudgets();
  const quotas = new Map(scenario.tenants.map((t) => [t.name, new ModelQuota(t.quota)]));
  const orgOf = new Map(scenario.tenants.map((t) => [t.name, t.org]));
  let nowMs = startMs;
  scenario.budgets.forEach((b, i) => budgets.add(`b${i}`, ownerLabel(b.owner), b, nowMs));
  const answers: ExpectedAnswer[] = [];
  const seenCallers = new Set<string>();
  const choicePoints: number[] = [];
  /** The option taken at the next choice point among `count` (the first unless `options.choices` says). */
  const choose = (count: number): number => {
    if (count <= 1) return 0;
    const taken = options.choices?.[choicePoints.length] ?? 0;
    choicePoints.push(count);
    return taken;
  };
  const keyLoadedAtMs = new Map<string, number>();
  let addressDigested = false;

  const limitsFor = (category: string, kind: SubjectKind): ModelLimit[] => {
    const configured = config.categories[category]?.limits?.[kind]?.map(modelLimit);
    const builtIn = BUILT_IN[category]?.[kind] ?? [];
    if (configured === undefined) return builtIn;
    // A list of shadow limits only is being tried: the limits it would replace stay enforced, the shadow ones beside them.
    if (configured.length > 0 && configured.every((l) => l.shadow)) return [...builtIn, ...configured];
    return configured;
  };

  const callerOf = (credential: Credential): Caller | null => {
    if (credential === "bogus") return null;
    if (credential === "anon") return { name: "anon", subject: "ip:anon", kind: "ip", tenant: null, owners: [] };
    const key = scenario.keys.find((k) => k.name === credential)!;
    const org = orgOf.get(key.tenant) ?? null;
    return { name: credential, subject: `key:${credential}`, kind: "key", tenant: key.tenant, owners: [`key:${credential}`, `tenant:${key.tenant}`, ...(org === null ? [] : [`org:${org}`])] };
  };

  /** The request's spends, per category: 1 `request`, the route's charges, a priced route's reserve. */
  const costsOf = (route: RouteFound | null): Map<string, number> => {
    const costs = new Map<string, number>([["request", 1]]);
    for (const [category, cost] of Object.entries(route?.route.charges ?? {})) costs.set(category, (costs.get(category) ?? 0) + cost);
    const priced = route?.route.response_charge;
    if (priced !== undefined) costs.set(priced.category, (costs.get(priced.category) ?? 0) + priced.reserve);
    return costs;
  };

  const spendsOf = (caller: Caller, costs: ReadonlyMap<string, number>): Spend[] => {
    const spends: Spend[] = [];
    for (const [category, cost] of costs) {
      spends.push({ subject: caller.subject, kind: caller.kind, category, limits: limitsFor(category, caller.kind), cost });
      if (caller.tenant !== null) spends.push({ subject: `tenant:${caller.tenant}`, kind: "tenant", category, limits: limitsFor(category, "tenant"), cost });
    }
    return spends;
  };

  const policiesOf = (spends: readonly Spend[]): Record<string, string> => {
    const out: Record<string, string> = {};
    // Shadow limits are not advertised.
    for (const s of spends) if (s.cost > 0) for (const l of s.limits) if (!l.shadow) out[policyName(s.category, s.kind, l)] = `${l.count};${l.windowMs / 1000};${l.burst}`;
    return out;
  };

  const figuresOf = (spends: readonly Spend[]): Record<string, { r: number; t: number }> => {
    const out: Record<string, { r: number; t: number }> = {};
    for (const s of spends) {
      if (s.cost <= 0) continue;
      for (const l of s.limits) {
        if (l.shadow) continue;
        const f: Figures = limiter.figures(s.subject, s.category, s.kind, l, nowMs);
        out[f.policy] = { r: f.remaining, t: Math.ceil(f.resetMs / 1000) };
      }
    }
    return out;
  };

  /** Shadow mode: the answer names each refusal enforce would have made, in the order of the steps. */
  const wouldRefuse = (m: Member, code: string): void => {
    m.answer.shadow.push(code);
  };

  /** A shadow policy would have refused: the answer names it (once). */
  const markPolicy = (m: Member, code: string, policy: string): void => {
    const mark = `${code};policy="${policy}"`;
    if (!m.answer.shadowPolicies.includes(mark)) m.answer.shadowPolicies.push(mark);
  };

  const refuse = (m: Member, shapes: AnswerShape[]): void => {
    m.answer.shapes = shapes;
    m.done = true;
  };

  /** Path, credential and route: nothing is charged yet. */
  const prepare = (spec: RequestSpec, at: string, lookedUp: Set<string>): Member => {
    const answer: ExpectedAnswer = { at, hangUp: spec.hangUp, shapes: [], shadow: [], shadowPolicies: [], shadowPoliciesMaybe: [], forwardedPath: null, retryAfterMs: null, violated: null, policies: null, figures: null, figuresTightest: true };
    const m: Member = { spec, answer, caller: null, route: null, done: false, spends: [], charged: false, budgetSpends: [], budgetsTaken: false, reservation: null, forwardedPath: null, waitsForLookup: false };
    const path = normalise(spec.path, config.allow_path_parameters === true);
    if (!path.ok) {
      refuse(m, [{ status: 400, code: "invalid_path", retryAfterS: null, category: null }]);
      return m;
    }
    m.forwardedPath = path.path;
    const caller = callerOf(spec.credential);
    if (caller === null) {
      refuse(m, [{ status: 401, code: "invalid_credential", retryAfterS: null, category: null }]);
      return m;
    }
    m.caller = caller;
    // A key not looked up within cache_ttl_s waits for its lookup, and an
    // address first seen for its digest (one for the whole burst); the others go on in the same turn.
    const loadedAtMs = keyLoadedAtMs.get(caller.name);
    m.waitsForLookup = caller.kind === "key" ? loadedAtMs === undefined || nowMs - loadedAtMs >= KEY_CACHE_TTL_MS : !addressDigested;
    if (m.waitsForLookup) lookedUp.add(caller.name);
    seenCallers.add(caller.name);
    if (caller.tenant !== null) seenCallers.add(caller.tenant);
    m.route = findRoute(config.routes, spec.method, path.routePath);
    return m;
  };

  const rateLimit = (m: Member): void => {
    const caller = m.caller!;
    const costs = costsOf(m.route);
    m.spends = spendsOf(caller, costs);
    const admission = limiter.admit(m.spends, nowMs);
    m.answer.policies = policiesOf(m.spends);
    if (admission.allowed) {
      m.charged = true;
      // Each shadow limit on its own, once the enforced ones admitted; one that would refuse is charged nothing.
      const shadow = limiter.decideShadow(m.spends, nowMs);
      m.spends = shadow.charged;
      for (const policy of shadow.refused) markPolicy(m, "rate_limited", policy);
    } else if (shadowMode) {
      wouldRefuse(m, "rate_limited");
    } else {
      m.answer.retryAfterMs = admission.retryAfterMs;
      m.answer.violated = admission.violated;
      refuse(
        m,
        admission.categories.map((category) => ({ status: 429, code: "rate_limited", retryAfterS: Math.ceil(admission.retryAfterMs / 1000), category })),
      );
      return;
    }
    const priced = m.route?.route.response_charge;
    for (const [category, units] of costs) {
      // A priced category is budgeted even with a zero reserve.
      if (units === 0 && priced?.category !== category) continue;
      for (const budget of budgets.applying(caller.owners, category)) m.budgetSpends.push({ budget, units, category });
    }
  };

  /** A budget's policy name: `budget-<category>-<owner kind>-<period>`. */
  const budgetPolicy = (b: ModelBudget): string => `budget-${b.category}-${b.owner.slice(0, b.owner.indexOf(":"))}-${b.period}`;

  const budgetShape = (r: BudgetRefusal): AnswerShape => ({ status: r.code === "credits_exhausted" ? 402 : 429, code: r.code, retryAfterS: r.retryAfterS, category: r.budget.category });

  /**
   * Enforce mode: a spend of a budget this isolate remembers refusing is
   * refused without asking (no I/O), its rate-limit charge given back.
   * Returns whether it was.
   */
  const refusedFromMemory = (m: Member): boolean => {
    if (shadowMode || m.budgetSpends.length === 0) return false;
    const cached = budgets.cachedRefusals(m.budgetSpends, nowMs);
    const refusals = cached.filter((r) => !r.budget.shadow);
    const shadows = cached.filter((r) => r.budget.shadow);
    if (refusals.length === 0) {
      // A shadow budget remembered as spent is passed without asking: marked, its spend left out.
      for (const r of shadows) markPolicy(m, r.code, budgetPolicy(r.budget));
      m.budgetSpends = m.budgetSpends.filter((s) => !shadows.some((r) => r.budget === s.budget));
      return false;
    }
    // Which budget is met first is open: a shadow one met before the refusing one is marked.
    for (const r of shadows) m.answer.shadowPoliciesMaybe.push(`${r.code};policy="${budgetPolicy(r.budget)}"`);
    if (m.charged) limiter.refund(m.spends, nowMs);
    refuse(m, refusals.map(budgetShape));
    return true;
  };

  /** The reserve at the budgets' objects (after refusedFromMemory); the refusals it made, for the isolate to remember. */
  const budgetStep = (m: Member): BudgetRefusal[] => {
    if (m.budgetSpends.length === 0) return [];
    const { refusals, shadows } = budgets.reserve(m.budgetSpends, nowMs, shadowMode);
    if (shadowMode) {
      // Forced: every budget is charged, a shadow one too (as it would be if it were enforced); each that could not take
      // the spend is named.
      m.budgetsTaken = true;
      // Which of several budgets that would refuse is named is left open: each of their codes may be.
      for (const code of new Set(refusals.map((r) => r.code))) wouldRefuse(m, code);
      for (const r of shadows) markPolicy(m, r.code, budgetPolicy(r.budget));
      return [];
    }
    if (refusals.length === 0) {
      m.budgetsTaken = true;
      // A shadow budget that could not take its spend: passed (charged nothing), marked, and remembered as a refusal is.
      for (const r of shadows) markPolicy(m, r.code, budgetPolicy(r.budget));
      m.budgetSpends = m.budgetSpends.filter((s) => !shadows.some((r) => r.budget === s.budget));
      return shadows;
    }
    // Refused. The shadow budgets met before the refusing one (which comes first is open) were passed and remembered.
    const pick = choose(1 << shadows.length);
    const passed = shadows.filter((_, i) => ((pick >> i) & 1) === 1);
    for (const r of shadows) m.answer.shadowPoliciesMaybe.push(`${r.code};policy="${budgetPolicy(r.budget)}"`);
    if (m.charged) limiter.refund(m.spends, nowMs);
    refuse(m, refusals.map(budgetShape));
    return [...refusals, ...passed];
  };

  const giveBudgetsBack = (m: Member): void => {
    if (!m.budgetsTaken) return;
    for (const { budget, units } of m.budgetSpends) budgets.settle(budget, -units, budget.endsAtMs, nowMs);
    m.budgetsTaken = false;
  };

  const sizeAndQuota = (m: Member): void => {
    const max = config.max_request_bytes ?? 0;
    if (max > 0 && m.spec.bodyBytes > max) {
      giveBudgetsBack(m);
      refuse(m, [{ status: 413, code: "request_too_large", retryAfterS: null, category: null }]);
      return;
    }
    const route = m.route;
    const tenant = m.caller!.tenant;
    if (route?.route.quota !== "store" || tenant === null) return;
    const { outcome, reservation } = quotas.get(tenant)!.reserve(route.params.object!, m.spec.bodyBytes, shadowMode);
    if (outcome.ok || shadowMode) {
      m.reservation = reservation;
      if (!outcome.ok) wouldRefuse(m, "quota_exceeded");
      return;
    }
    giveBudgetsBack(m);
    refuse(m, [{ status: 403, code: "quota_exceeded", retryAfterS: null, category: null }]);
  };

  /** After the origin's answer: status charges, the priced cost, the quota. */
  const settle = (m: Member, checkFigures: boolean): void => {
    const { status, cost } = m.spec.origin;
    const route = m.route?.route;
    const byCategory = (category: string, units: number): Spend[] =>
      m.spends.filter((s) => s.category === category && s.cost > 0).map((s) => ({ ...s, cost: units }));
    if (route?.charge_on_status !== undefined && !statusMatches(route.charge_on_status, status)) {
      for (const [category, units] of Object.entries(route.charges ?? {})) {
        if (m.charged) limiter.refund(byCategory(category, units), nowMs);
        if (m.budgetsTaken) for (const s of m.budgetSpends.filter((b) => b.category === category)) budgets.settle(s.budget, -units, s.budget.endsAtMs, nowMs);
      }
    }
    const priced = route?.response_charge;
    if (priced !== undefined && cost !== null) {
      // The difference from the reserve settles. A request shadow mode lets past a limit charged the
      // limits nothing (kept as if enforced), so they settle nothing; its budgets settle the cost.
      const delta = cost - priced.reserve;
      const spends = m.spends.filter((s) => s.category === priced.category);
      if (m.charged && delta > 0) limiter.debt(spends.map((s) => ({ ...s, cost: delta })), nowMs);
      else if (m.charged && delta < 0) limiter.refund(spends.map((s) => ({ ...s, cost: -delta })), nowMs);
      if (m.budgetsTaken) for (const s of m.budgetSpends.filter((b) => b.category === priced.category)) budgets.settle(s.budget, cost - priced.reserve, s.budget.endsAtMs, nowMs);
    }
    const tenant = m.caller?.tenant ?? null;
    if (m.reservation !== null && tenant !== null) {
      const quota = quotas.get(tenant)!;
      if (status >= 200 && status < 300) quota.commit(m.reservation);
      else quota.release(m.reservation);
    }
    if (route?.quota === "release" && tenant !== null && status >= 200 && status < 300) quotas.get(tenant)!.remove(m.route!.params.object!);
    m.answer.shapes = [{ status, code: null, retryAfterS: null, category: null }];
    // A cost named in a header is known before the answer goes out: its policies and figures include it (a debt, a
    // refund). A request shadow mode let past its limits charged them nothing: its answer describes the admission
    // enforce would have refused.
    const spent = priced === undefined || cost === null || !m.charged ? m.spends : m.spends.map((s) => (s.category === priced.category ? { ...s, cost } : s));
    m.answer.policies = policiesOf(spent);
    if (checkFigures && route?.charge_on_status === undefined) {
      m.answer.figures = figuresOf(spent);
      m.answer.figuresTightest = m.charged;
    }
  };

  scenario.steps.forEach((step, stepIndex) => {
    if (step.kind === "advance") {
      nowMs += step.ms;
      return;
    }
    if (step.kind === "topup") {
      budgets.topUp(step.budget, step.amount, step.elsewhere !== true);
      return;
    }
    const burst = step.requests.length > 1;
    const lookedUp = new Set<string>();
    const members = step.requests.map((spec, i) => prepare(spec, burst ? `step ${stepIndex} #${i}` : `step ${stepIndex}`, lookedUp));
    for (const name of lookedUp) keyLoadedAtMs.set(name, nowMs);
    // Any answer to a request without a working key names its address by digest (the traffic counts do), which the isolate keeps.
    if (step.requests.some((r) => r.credential === "anon" || r.credential === "bogus")) addressDigested = true;
    // Every admission of a burst runs before any answer: the rate limits in
    // the order sent (those that waited for a key lookup after those that
    // did not), then each budget reserve in that order (refusals this burst
    // makes are remembered for requests sent after it), then sizes and quotas.
    // A budget the isolate remembers refusing is decided with no I/O, in the
    // same turn as the request's rate limits: its refusal, and the rate-limit
    // charge it gives back, come before the next request's rate limits.
    // The order in which requests waiting on lookups go on is the
    // contract's to leave open: each lookup's waiters go on together, in
    // any order, and the lookups end in any order (choice points).
    const groups = [...new Set(members.filter((m) => m.waitsForLookup).map((m) => m.caller!.name))];
    const groupOrders = permutations(groups);
    const waiting = groupOrders[choose(groupOrders.length)]!.flatMap((name) => {
      const orders = permutations(members.filter((m) => m.waitsForLookup && m.caller!.name === name));
      return orders[choose(orders.length)]!;
    });
    const admitted = [...members.filter((m) => !m.waitsForLookup), ...waiting];
    for (const m of admitted) {
      if (m.done) continue;
      rateLimit(m);
      if (!m.done) refusedFromMemory(m);
    }
    const refusals: BudgetRefusal[] = [];
    for (const m of admitted) if (!m.done) refusals.push(...budgetStep(m));
    budgets.remember(refusals, nowMs, cacheMs);
    for (const m of admitted) if (!m.done) sizeAndQuota(m);
    const forwarded = members.filter((m) => !m.done);
    for (const m of forwarded) m.answer.forwardedPath = m.forwardedPath;
    const order = options.answerOrders?.[stepIndex];
    const rank = (m: Member): number => (order === undefined ? m.spec.origin.delayMs : order.indexOf(members.indexOf(m)));
    const byAnswer = [...forwarded].sort((a, b) => rank(a) - rank(b));
    for (const m of byAnswer) settle(m, !burst);
    for (const m of members) answers.push(m.answer);
  });

  const limits: ExpectedLimit[] = [];
  const categories = new Set(["request", ...Object.keys(config.categories)]);
  for (const route of config.routes) {
    for (const category of Object.keys(route.charges ?? {})) categories.add(category);
    if (route.response_charge !== undefined) categories.add(route.response_charge.category);
  }
  for (const name of seenCallers) {
    const subject = name === "anon" ? "ip:anon" : name.startsWith("k") ? `key:${name}` : `tenant:${name}`;
    const kind: SubjectKind = name === "anon" ? "ip" : name.startsWith("k") ? "key" : "tenant";
    for (const category of categories) {
      for (const limit of limitsFor(category, kind)) {
        const f = limiter.figures(subject, category, kind, limit, nowMs);
        limits.push({ subject: name, category, kind, limit, remaining: f.remaining, resetMs: f.resetMs });
      }
    }
  }
  const quota: Expected["quota"] = {};
  for (const [name, q] of quotas) quota[name] = { bytes: q.bytes, objects: q.objects, reservedBytes: q.reservedBytes };
  return {
    answers,
    limits,
    quota,
    budgets: budgets.all.map((b) => ({ owner: b.owner, category: b.category, used: budgets.usedNow(b, nowMs) })),
    choicePoints,
  };
}
