// fast-check arbitraries for contract-fuzz scenarios: configs that combine
// the features (routes with charges, a status-charged login, a priced route,
// a store and a delete route with quotas, budgets on keys, tenants and an
// org, shadow mode) and request sequences that spell paths every way a
// client can (case, `//`, escapes such as %6F, `;`, trailing slashes and
// dots), from two keys, no credential or a made-up one, some sent in
// bursts, some hung up on, with credits topped up through the isolate that
// serves them or through another. Groups of steps aim at the seams: an
// upload racing a delete, and a route's spend sent again and again, at once
// and then soon after, so that a budget or a limit runs out while room comes
// back (a refund, a charge given back, a top-up).
import fc from "fast-check";
import type { BudgetSpec, Credential, LimitSpec, Method, RequestSpec, RouteSpec, Scenario, ScenarioConfig, Step, SubjectKind, TenantSpec } from "../model/scenario";
import { COST_HEADER } from "./contract-fuzz-gateway";

const CATEGORIES = ["request", "upload", "tokens", "login", "report"] as const;

/** The routes a config picks from; each appears at most once, in this order. */
const ROUTE_CHOICES = {
  store: fc.record({ method: fc.constant<Method>("PUT"), path: fc.constant("/objects/:object"), quota: fc.constant<"store">("store"), charges: fc.option(fc.record({ upload: fc.integer({ min: 1, max: 2 }) }), { nil: undefined }) }),
  release: fc.record({ method: fc.constant<Method>("DELETE"), path: fc.constant("/objects/:object"), quota: fc.constant<"release">("release") }),
  priced: fc.record({
    method: fc.constant<Method>("POST"),
    path: fc.constant("/v1/chat"),
    response_charge: fc.record({ category: fc.constant("tokens"), header: fc.constant(COST_HEADER), reserve: fc.constantFrom(0, 0, 1, 5, 10) }),
  }),
  login: fc.record({
    method: fc.constant<Method>("POST"),
    path: fc.constant("/login"),
    charges: fc.constant({ login: 1 }),
    charge_on_status: fc.constantFrom<(number | string)[]>(["4xx"], [401, "5xx"], [401]),
  }),
  report: fc.record({ method: fc.constant<Method>("GET"), path: fc.constant("/reports/:id"), charges: fc.record({ report: fc.integer({ min: 1, max: 2 }) }) }),
};

const limitArb = (counts: [number, number], windows: number[]): fc.Arbitrary<LimitSpec> =>
  fc.record({ count: fc.integer({ min: counts[0], max: counts[1] }), window_s: fc.constantFrom(...windows), burst: fc.option(fc.integer({ min: 1, max: counts[1] * 2 }), { nil: undefined }) });

/** One or two limits of a subject kind, with distinct windows (their policy names differ). */
const limitsArb = (counts: [number, number]): fc.Arbitrary<LimitSpec[]> =>
  fc.oneof(fc.tuple(limitArb(counts, [1, 2, 10])), fc.tuple(limitArb(counts, [1, 2]), limitArb([counts[0] * 2, counts[1] * 3], [30, 60]))).map((l) => [...l]);

const kindLimitsArb = (counts: [number, number]): fc.Arbitrary<Partial<Record<SubjectKind, LimitSpec[]>>> =>
  fc.record({ key: limitsArb(counts), tenant: limitsArb([counts[0] * 2, counts[1] * 2]), ip: limitsArb(counts) }, { requiredKeys: [] });

const configArb: fc.Arbitrary<ScenarioConfig> = fc
  .record({
    mode: fc.constantFrom<"enforce" | "shadow">("enforce", "enforce", "shadow"),
    allow_path_parameters: fc.boolean(),
    max_request_bytes: fc.constantFrom(0, 0, 20),
    routes: fc.record(ROUTE_CHOICES, { requiredKeys: [] }),
    request: fc.option(kindLimitsArb([2, 6]), { nil: undefined }),
    upload: fc.option(kindLimitsArb([1, 4]), { nil: undefined }),
    tokens: fc.option(kindLimitsArb([10, 40]), { nil: undefined }),
    login: fc.option(kindLimitsArb([1, 3]), { nil: undefined }),
    report: fc.option(kindLimitsArb([2, 5]), { nil: undefined }),
  })
  .map((c) => {
    const categories: ScenarioConfig["categories"] = {};
    for (const name of CATEGORIES) if (c[name] !== undefined) categories[name] = { limits: c[name] };
    const order = ["store", "release", "priced", "login", "report"] as const;
    const routes = order.flatMap((name): RouteSpec[] => (c.routes[name] === undefined ? [] : [c.routes[name] as RouteSpec]));
    // Shadow mode forwards what it would refuse: a body past the bound is left out of it here.
    return { mode: c.mode, allow_path_parameters: c.allow_path_parameters, max_request_bytes: c.mode === "shadow" ? 0 : c.max_request_bytes, categories, routes };
  });

/** The categories a config defines: `request`, its `categories` entries, and what its routes charge. */
function knownCategories(config: ScenarioConfig): Set<string> {
  const known = new Set(["request", ...Object.keys(config.categories)]);
  for (const route of config.routes) {
    for (const category of Object.keys(route.charges ?? {})) known.add(category);
    if (route.response_charge !== undefined) known.add(route.response_charge.category);
  }
  return known;
}

const tenantsArb: fc.Arbitrary<TenantSpec[]> = fc
  .tuple(
    fc.boolean(),
    fc.option(fc.record({ bytes: fc.record({ hard: fc.integer({ min: 5, max: 60 }), soft: fc.integer({ min: 1, max: 40 }) }, { requiredKeys: ["hard"] }), objects: fc.record({ hard: fc.integer({ min: 1, max: 3 }) }) }, { requiredKeys: [] }), { nil: null }),
  )
  .map(([org, quota]) => [
    // A soft quota above the hard one is refused by the admin API.
    { name: "t0", org: org ? "o0" : null, quota: quota?.bytes?.soft !== undefined && quota.bytes.soft > quota.bytes.hard! ? { ...quota, bytes: { hard: quota.bytes.hard } } : quota },
    { name: "t1", org: null, quota: null },
  ]);

const budgetArb: fc.Arbitrary<BudgetSpec> = fc.record({
  // Most requests are kA's (t0's): their budgets more often.
  owner: fc.constantFrom<BudgetSpec["owner"]>({ kind: "key", name: "kA" }, { kind: "key", name: "kA" }, { kind: "key", name: "kB" }, { kind: "tenant", name: "t0" }, { kind: "tenant", name: "t0" }, { kind: "tenant", name: "t1" }, { kind: "org", name: "o0" }),
  // The priced category and logins more often: their seams need a budget.
  category: fc.constantFrom(...CATEGORIES, "tokens", "login"),
  amount: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 6 }), fc.integer({ min: 1, max: 40 })),
  period: fc.constantFrom<BudgetSpec["period"]>("month", "day", "none", "none"),
});

/** A path a client might send for one of the routes, or for none. */
const SEGMENTS: Record<string, string[][]> = {
  objects: [["objects", "a"], ["objects", "b"]],
  chat: [["v1", "chat"]],
  login: [["login"]],
  reports: [["reports", "r1"]],
  other: [["things"], ["objects"], ["v1", "chat", "x"]],
};

const spellSegment = (segment: string): fc.Arbitrary<string> =>
  fc.constantFrom<(s: string) => string>(
    (s) => s,
    (s) => s,
    (s) => s.toUpperCase(),
    (s) => s.charAt(0).toUpperCase() + s.slice(1),
    (s) => `%${s.charCodeAt(0).toString(16)}${s.slice(1)}`,
    (s) => `%${s.charCodeAt(0).toString(16).toUpperCase()}${s.slice(1)}`,
    (s) => (s.length > 1 ? `${s.slice(0, -1)}%${s.charCodeAt(s.length - 1).toString(16)}` : s),
    (s) => `${s};v=1`,
    (s) => `${s}.`,
    (s) => `${s}%2F`,
  ).map((spell) => spell(segment));

const pathArb: fc.Arbitrary<string> = fc
  .constantFrom(...Object.values(SEGMENTS).flat())
  .chain((segments) => fc.tuple(fc.tuple(...segments.map(spellSegment)), fc.constantFrom("/", "/", "/", "//"), fc.constantFrom("", "", "", "/", "//")))
  .map(([segments, lead, trail]) => `${lead}${segments.join(lead === "//" ? "//" : "/")}${trail}`);

const originArb = fc.record({
  status: fc.constantFrom(200, 200, 200, 201, 401, 404, 500),
  cost: fc.option(fc.integer({ min: 0, max: 30 }), { nil: null, freq: 3 }),
  delayMs: fc.constant(0),
});

const requestArb: fc.Arbitrary<RequestSpec> = fc
    .record({
      method: fc.constantFrom<Method>("GET", "HEAD", "PUT", "PUT", "POST", "POST", "DELETE"),
      path: pathArb,
      credential: fc.constantFrom<Credential>("kA", "kA", "kB", "anon", "bogus"),
      // Few sizes, so that a re-upload is often the same size (a dedup); 25 passes a max_request_bytes of 20.
      bodyBytes: fc.constantFrom(3, 3, 8, 25),
      // One request in ten hangs up.
      hang: fc.integer({ min: 0, max: 9 }),
      origin: originArb,
    })
    .map(({ hang, ...r }) => ({ ...r, hangUp: hang === 0, bodyBytes: r.method === "PUT" || r.method === "POST" ? r.bodyBytes : 0 }));

/** A burst's answers come back in a scripted order, late enough that every admission of the burst has run first. */
const BURST_DELAYS_MS = [50, 120, 190];

const withDelays = (requests: RequestSpec[], delays: number[]): Step => ({ kind: "send", requests: requests.map((r, i) => ({ ...r, origin: { ...r.origin, delayMs: delays[i]! } })) });

/** Credits topped up through the admin API of the isolate serving the requests, or of another one (which this one learns of only once its memory of a refusal ends). */
const topUpArb = fc.record({ kind: fc.constant<"topup">("topup"), budget: fc.integer({ min: 0, max: 2 }), amount: fc.integer({ min: 1, max: 10 }), elsewhere: fc.boolean() });

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom(1, 250, 999, 1000, 4000, 6000, 60_000, 86_400_000).map((ms): Step => ({ kind: "advance", ms })) },
  { weight: 1, arbitrary: topUpArb },
  {
    // One request sent two or three times at once, each answered its own way (concurrent logins, an upload racing itself).
    weight: 1,
    arbitrary: fc
      .tuple(requestArb, fc.array(originArb, { minLength: 2, maxLength: 3 }), fc.shuffledSubarray(BURST_DELAYS_MS, { minLength: 3, maxLength: 3 }))
      .map(([request, origins, delays]) => withDelays(origins.map((origin) => ({ ...request, origin })), delays)),
  },
  { weight: 6, arbitrary: requestArb.map((r): Step => ({ kind: "send", requests: [r] })) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.array(requestArb, { minLength: 2, maxLength: 3 }), fc.shuffledSubarray(BURST_DELAYS_MS, { minLength: 3, maxLength: 3 }))
      .map(([requests, delays]) => withDelays(requests, delays)),
  },
);

/** What a request aimed at each route a config may have (or at none) sends: a key's, so the budgets of its categories apply. */
const ROUTED: Record<string, Pick<RequestSpec, "method" | "path" | "bodyBytes">> = {
  store: { method: "PUT", path: "/objects/a", bodyBytes: 3 },
  priced: { method: "POST", path: "/v1/chat", bodyBytes: 3 },
  login: { method: "POST", path: "/login", bodyBytes: 3 },
  report: { method: "GET", path: "/reports/r1", bodyBytes: 0 },
  other: { method: "GET", path: "/things", bodyBytes: 0 },
};

const routedRequestArb: fc.Arbitrary<RequestSpec> = fc
  .tuple(fc.constantFrom("store", "priced", "priced", "login", "login", "report", "other"), fc.constantFrom<Credential>("kA", "kA", "kB"), originArb)
  .map(([route, credential, origin]) => ({ ...ROUTED[route]!, credential, hangUp: false, origin }));

/**
 * Steps that meet where the seams are: an upload, then the same upload (a
 * dedup) racing a delete of that object, either answered first; one request
 * sent several times in a row, each answered its own way (a budget or a
 * limit running out, a priced debt, failed logins), with a top-up of
 * credits somewhere among them.
 */
const groupArb: fc.Arbitrary<Step[]> = fc.oneof(
  { weight: 5, arbitrary: stepArb.map((step) => [step]) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom("a", "b"), fc.constantFrom<Credential>("kA", "kB"), fc.constantFrom(3, 8), fc.constantFrom(200, 201, 200, 500), fc.constantFrom(200, 204, 200, 404), fc.shuffledSubarray([50, 190], { minLength: 2, maxLength: 2 }))
      .map(([object, credential, bodyBytes, putStatus, deleteStatus, delays]): Step[] => {
        const put: RequestSpec = { method: "PUT", path: `/objects/${object}`, credential, bodyBytes, hangUp: false, origin: { status: 200, cost: null, delayMs: 0 } };
        const del: RequestSpec = { method: "DELETE", path: `/objects/${object}`, credential, bodyBytes: 0, hangUp: false, origin: { status: deleteStatus, cost: null, delayMs: 0 } };
        return [{ kind: "send", requests: [put] }, withDelays([{ ...put, origin: { ...put.origin, status: putStatus } }, del], delays)];
      }),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.oneof(requestArb, routedRequestArb), fc.array(originArb, { minLength: 2, maxLength: 4 }), fc.option(fc.record({ at: fc.nat(), budget: fc.integer({ min: 0, max: 2 }), amount: fc.integer({ min: 1, max: 10 }), elsewhere: fc.boolean() }), { nil: null }))
      .map(([request, origins, topUp]): Step[] => {
        const steps: Step[] = origins.map((origin) => ({ kind: "send", requests: [{ ...request, origin }] }));
        if (topUp !== null) steps.splice(1 + (topUp.at % (steps.length - 1)), 0, { kind: "topup", budget: topUp.budget, amount: topUp.amount, elsewhere: topUp.elsewhere });
        return steps;
      }),
  },
  {
    // A route's spend sent several times at once (a budget or a limit running out while the others hold their units),
    // then again soon after: room may have come back meanwhile (a refund, a charge given back, a top-up here or elsewhere).
    weight: 2,
    arbitrary: fc
      .tuple(
        routedRequestArb,
        fc.array(originArb, { minLength: 2, maxLength: 3 }),
        fc.shuffledSubarray(BURST_DELAYS_MS, { minLength: 3, maxLength: 3 }),
        fc.oneof(fc.constant<Step[]>([]), fc.constantFrom(1, 1000, 4000, 6000).map((ms): Step[] => [{ kind: "advance", ms }]), topUpArb.map((t): Step[] => [t])),
        fc.array(originArb, { minLength: 1, maxLength: 3 }),
      )
      .map(([request, burst, delays, gap, after]): Step[] => [
        withDelays(burst.map((origin) => ({ ...request, origin })), delays),
        ...gap,
        ...after.map((origin): Step => ({ kind: "send", requests: [{ ...request, origin }] })),
      ]),
  },
);

// No chain from the config to the steps: fast-check shrinks each part of a record on its own.
export const scenarioArb: fc.Arbitrary<Scenario> = fc
  .record({
    config: configArb,
    tenants: tenantsArb,
    kBTenant: fc.constantFrom<"t0" | "t1">("t0", "t1"),
    // At least one budget: its seams (a refusal remembered, a priced cost settled in shadow mode) need one that applies.
    budgets: fc.uniqueArray(budgetArb, { minLength: 1, maxLength: 3, selector: (b) => `${b.owner.kind}:${b.owner.name}:${b.category}` }),
    groups: fc.array(groupArb, { minLength: 2, maxLength: 8 }),
  })
  .map(({ config, tenants, kBTenant, budgets, groups }): Scenario => ({
    config,
    tenants,
    keys: [
      { name: "kA", tenant: "t0" },
      { name: "kB", tenant: kBTenant },
    ],
    // An org budget only where t0 belongs to the org, and only of a category the config knows (the admin API refuses others).
    budgets: budgets.filter((b) => (b.owner.kind !== "org" || tenants[0]!.org !== null) && knownCategories(config).has(b.category)),
    // Shadow mode forwards what it would refuse: a made-up key is left out of it here.
    steps: config.mode === "shadow" ? groups.flat().map(withoutMadeUpKeys) : groups.flat(),
  }));

function withoutMadeUpKeys(step: Step): Step {
  if (step.kind !== "send") return step;
  return { kind: "send", requests: step.requests.map((r) => (r.credential === "bogus" ? { ...r, credential: "anon" } : r)) };
}

/**
 * Per-policy shadow: scenarios as above with some of their limits and
 * budgets marked `shadow: true` (one in three, at least one of them). A
 * separate arbitrary, so that `scenarioArb`'s scenarios for a seed stay the
 * ones test/model/README.md measured the planted seams with. The marks are
 * drawn first: fast-check starts each run's draws at the same point of the
 * seed's stream, so drawn after the scenario they would mark the very
 * scenarios the first property runs.
 */
export const policyShadowScenarioArb: fc.Arbitrary<Scenario> = fc
  .tuple(fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 24, maxLength: 24 }), scenarioArb)
  .map(([picks, scenario]) => {
    let next = 0;
    const pick = () => picks[next++ % picks.length] === 0;
    const categories: ScenarioConfig["categories"] = {};
    for (const [name, { limits }] of Object.entries(scenario.config.categories)) {
      const marked: Partial<Record<SubjectKind, LimitSpec[]>> = {};
      for (const [kind, list] of Object.entries(limits) as [SubjectKind, LimitSpec[]][]) marked[kind] = list.map((l) => (pick() ? { ...l, shadow: true } : l));
      categories[name] = { limits: marked };
    }
    const budgets = scenario.budgets.map((b) => (pick() ? { ...b, shadow: true } : b));
    const any = budgets.some((b) => b.shadow === true) || Object.values(categories).some((c) => Object.values(c.limits).some((list) => list?.some((l) => l.shadow === true)));
    // None picked: the first budget is (every scenario has one unless the org's was left out).
    if (!any && budgets.length > 0) budgets[0] = { ...budgets[0]!, shadow: true };
    return { ...scenario, config: { ...scenario.config, categories }, budgets };
  });
