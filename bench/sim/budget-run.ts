// One leased budget run across the simulated deployment with the real edge
// code: each isolate has its own BudgetLeases (the BudgetLeaseBook, one call
// in flight per object, reports every second, closes) and BudgetRefusals, and
// every request goes through the real budget step (budgetCheck) on an
// exchange that carries just what the step reads. The quota object is
// budget-model.ts behind the deployment's object model. Requests spend 1
// unit of `request` from one tenant's credits.
import type { BudgetNamespaces } from "../../src/durable/budget-client";
import type { Exchange } from "../../src/exchange";
import { BudgetRefusals } from "../../src/cache/budget-refusals";
import { budgetCheck } from "../../src/limits/budget";
import { BudgetLeases } from "../../src/limits/budget-leases";
import type { Check } from "../../src/limits/check";
import { BudgetObjectModel } from "./budget-model";
import { type DeploymentParams, Isolates, SimClock, SimObject } from "./deployment";
import { type DemandSegment, demandEndMs, startDemand } from "./demand";
import { addAt, quantile } from "./measures";
import { countLogLines, type RunFigures, runFigures } from "./run-figures";

const TENANT = "sim";
const OBJECT = `tenant:${TENANT}`;
const OWNER = `tenant:${TENANT}`;
const CATEGORY = "request";

export interface BudgetOptions {
  /** budgets.lease_s, in ms. */
  readonly leaseMs: number;
  /** budgets.exhausted_cache_s, in ms. */
  readonly exhaustedCacheMs: number;
}

export interface BudgetScenario {
  readonly name: string;
  readonly title: string;
  /** Credits at the start. */
  readonly amount: number;
  /** A top-up of `units` at `atMs`. */
  readonly topUp?: { readonly atMs: number; readonly units: number };
  readonly demand: readonly DemandSegment[];
  readonly options: BudgetOptions;
  readonly deployment: DeploymentParams;
}

export interface BudgetRunResult extends RunFigures {
  readonly name: string;
  readonly title: string;
  readonly options: BudgetOptions;
  readonly isolates: { readonly slots: number; readonly retired: number };
  readonly requests: number;
  readonly amount: number;
  readonly admittedUnits: number;
  /** What an exact budget admits of the same requests: all of them up to the amount (and a top-up's units once it lands). */
  readonly exactUnits: number;
  /** The most admitted spends ever passed the amount then in force (0: never over). */
  readonly worstOverUnits: number;
  /** The object's `used` at the end against the true spend: it may over-state (units lost with isolates), never under-state. */
  readonly usedAtEnd: number;
  readonly overStatedUnits: number;
  readonly refused: number;
  readonly unavailable: number;
  readonly refusedWhileHeldElsewhere: number;
  readonly maxHeldElsewhereUnits: number;
  readonly callsPer1000Admitted: number;
  /** Calls per 1,000 admitted while the budget had more than 10 % left. */
  readonly callsPer1000FarFromEnd: number;
  /** From the top-up to each isolate's first admitted request after it (isolates that had requests then), ms. */
  readonly topUpReachP50Ms: number | null;
  readonly topUpReachMaxMs: number | null;
  readonly series: { readonly demand: number[]; readonly admitted: number[]; readonly exact: number[]; readonly calls: number[]; readonly used: number[]; readonly amount: number[] };
}

interface SimIsolate {
  readonly leases: BudgetLeases;
  readonly refusals: BudgetRefusals;
  readonly ns: BudgetNamespaces;
  readonly step: Check;
  retired: boolean;
  firstAdmittedAfterTopUpMs: number | null;
  hadRequestAfterTopUp: boolean;
}

/** What the budget step reads of a request: a key of tenant `sim`, whose tenant has a `request` budget; no route. */
function exchangeFor(iso: SimIsolate, now: () => number): Exchange & { refusedWith: string | null } {
  const tenant = { slug: TENANT, limits: null, quota: null, org: null, budgets: new Set([CATEGORY]), orgBudgets: null };
  const x = {
    caller: { kind: "key", keyId: "k1sim", keyBudgets: null, tenant },
    tenant,
    route: null,
    config: { mode: "enforce", rateLimitHeaders: "draft-11", usageMaxPending: Number.MAX_SAFE_INTEGER },
    env: { TENANT_QUOTA: iso.ns.tenant, ORG_QUOTA: iso.ns.org },
    ctx: null,
    runtime: { meter: { add: () => {} }, now },
    charged: null,
    budget: null,
    rateHeaders: null,
    refusedWith: null as string | null,
    refuse(code: string, response: Response): Response {
      x.refusedWith = code;
      return response;
    },
    markShadow: () => {},
  };
  return x as unknown as Exchange & { refusedWith: string | null };
}

export async function runBudget(scenario: BudgetScenario): Promise<BudgetRunResult> {
  const { deployment, options } = scenario;
  const clock = new SimClock(deployment.seed);
  const object = new SimObject(clock, deployment);
  const model = new BudgetObjectModel(object);
  model.put(OWNER, CATEGORY, scenario.amount);
  const endMs = demandEndMs(scenario.demand);
  const warnings: Record<string, number> = {};
  const isolates = new Isolates<SimIsolate>(
    clock,
    deployment,
    (_region, rttMs) => {
      const leases = new BudgetLeases({ leaseMs: options.leaseMs, maxSlots: 64 }, clock.now);
      const refusals = new BudgetRefusals(options.exhaustedCacheMs, 64);
      return { leases, refusals, ns: model.namespacesFor(rttMs), step: budgetCheck({ responseCharges: [], now: clock.now, refusals, leases }), retired: false, firstAdmittedAfterTopUpMs: null, hadRequestAfterTopUp: false };
    },
    (isolate) => {
      isolate.retired = true;
    },
    endMs,
  );

  let amountNow = scenario.amount;
  const topUp = scenario.topUp;
  if (topUp !== undefined) {
    clock.at(topUp.atMs, () => {
      model.topUp(OWNER, CATEGORY, topUp.units);
      amountNow += topUp.units;
    });
  }

  const demandPerS: number[] = [];
  const admittedPerS: number[] = [];
  const exactPerS: number[] = [];
  const usedPerS: number[] = [];
  const amountPerS: number[] = [];
  const waitedMs: number[] = [];
  let requests = 0;
  let exactUnits = 0;
  let admittedUnits = 0;
  let worstOver = Number.NEGATIVE_INFINITY;
  let refused = 0;
  let unavailable = 0;
  let refusedWhileHeldElsewhere = 0;
  let maxHeldElsewhere = 0;
  let heldAtMs = -1;
  let heldTotal = 0;
  let callsFarFromEnd = 0;
  let admittedFarFromEnd = 0;
  let lastCalls = 0;

  const held = (iso: SimIsolate, t: number): number => iso.leases.book.held(OBJECT, OWNER, CATEGORY, t);
  const heldElsewhere = (iso: SimIsolate, t: number): number => {
    if (heldAtMs !== t) {
      heldAtMs = t;
      heldTotal = 0;
      for (const other of isolates.all) heldTotal += held(other, t);
    }
    return heldTotal - held(iso, t);
  };

  const conclude = (iso: SimIsolate, x: Exchange & { refusedWith: string | null }, result: Response | null, arrivalMs: number, waited: boolean): void => {
    const t = clock.now();
    if (waited) waitedMs.push(t - arrivalMs);
    if (result === null) {
      admittedUnits++;
      addAt(admittedPerS, t);
      worstOver = Math.max(worstOver, admittedUnits - amountNow);
      if (topUp !== undefined && t >= topUp.atMs && iso.firstAdmittedAfterTopUpMs === null) iso.firstAdmittedAfterTopUpMs = t;
      return;
    }
    if (x.refusedWith === "budget_unavailable") {
      unavailable++;
      return;
    }
    refused++;
    const elsewhere = heldElsewhere(iso, Math.floor(t));
    if (elsewhere >= 1) refusedWhileHeldElsewhere++;
    maxHeldElsewhere = Math.max(maxHeldElsewhere, elsewhere);
  };

  const pending: Promise<void>[] = [];
  startDemand(clock, scenario.demand, (arrivalMs) => {
    requests++;
    addAt(demandPerS, arrivalMs);
    if (exactUnits < amountNow) {
      exactUnits++;
      addAt(exactPerS, arrivalMs);
    }
    const iso = isolates.pick();
    if (topUp !== undefined && arrivalMs >= topUp.atMs) iso.hadRequestAfterTopUp = true;
    const x = exchangeFor(iso, clock.now);
    const result = iso.step(x);
    if (result instanceof Promise) pending.push(result.then((r) => conclude(iso, x, r, arrivalMs, true)));
    else conclude(iso, x, result, arrivalMs, false);
  });
  // Once a second: the object's `used` and amount, and whether the budget is still far from its end.
  for (let s = 0; s * 1000 < endMs; s++) {
    clock.at(s * 1000 + 999, () => {
      const b = model.budget(OWNER, CATEGORY);
      usedPerS.push(b.used);
      amountPerS.push(b.amount);
      const calls = object.calls - lastCalls;
      lastCalls = object.calls;
      if (b.used < 0.9 * b.amount) {
        callsFarFromEnd += calls;
        admittedFarFromEnd += admittedPerS[s] ?? 0;
      }
    });
  }

  const restore = countLogLines(warnings);
  try {
    await clock.run();
    await Promise.all(pending);
    // The isolates still serving close their leases (as a replaced runtime does): what stays counted is what the gone ones held.
    for (const iso of isolates.current()) void iso.leases.closeAll(iso.ns, null, clock.now(), () => {});
    await clock.run();
  } finally {
    restore();
  }

  const usedAtEnd = model.budget(OWNER, CATEGORY).used;
  const reach = topUp === undefined ? [] : isolates.all.filter((i) => i.hadRequestAfterTopUp && i.firstAdmittedAfterTopUpMs !== null).map((i) => i.firstAdmittedAfterTopUpMs! - topUp.atMs);
  return {
    name: scenario.name,
    title: scenario.title,
    options,
    isolates: { slots: isolates.count, retired: isolates.retired },
    requests,
    amount: amountNow,
    admittedUnits,
    exactUnits,
    worstOverUnits: Math.max(0, worstOver),
    usedAtEnd,
    overStatedUnits: usedAtEnd - admittedUnits,
    refused,
    unavailable,
    refusedWhileHeldElsewhere,
    maxHeldElsewhereUnits: maxHeldElsewhere,
    callsPer1000Admitted: admittedUnits === 0 ? 0 : (1000 * object.calls) / admittedUnits,
    callsPer1000FarFromEnd: admittedFarFromEnd === 0 ? 0 : (1000 * callsFarFromEnd) / admittedFarFromEnd,
    topUpReachP50Ms: quantile(reach, 0.5),
    topUpReachMaxMs: quantile(reach, 1),
    ...runFigures(object, deployment.objectCallsPerS, demandPerS, waitedMs, warnings),
    series: { demand: demandPerS, admitted: admittedPerS, exact: exactPerS, calls: object.offeredPerS, used: usedPerS, amount: amountPerS },
  };
}
