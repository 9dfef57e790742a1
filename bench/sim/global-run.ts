// One global limit of one subject, run across the simulated deployment with
// the real lease code: each isolate has its own GlobalLeases (the LeaseBook,
// the single flight per subject, the give-backs) and LimiterTable, and each
// request is decided as the rate-limit step decides a request with a global
// limit (planGlobal, returnDue, decideGlobal; when a lease is short, up to
// four rounds of asks, as src/limits/rate-limit.ts slowGlobal does). The
// ledger is ledger-model.ts behind the deployment's object model.
import type { Charge } from "../../src/engine/gcra";
import type { LeaseGroup, LeaseSlot, Short } from "../../src/engine/lease-types";
import { boundUnits, leaseMsFor } from "../../src/engine/lease-types";
import { compileLimit, type Limit, type LimitSpec } from "../../src/engine/limit";
import { LimiterTable } from "../../src/engine/limiter-table";
import type { LedgerNamespace } from "../../src/durable/ledger-client";
import { contended, decideGlobal, type GlobalOutcome, type GlobalPlan, planGlobal } from "../../src/limits/global-admission";
import { GlobalLeases } from "../../src/limits/global-leases";
import { type DeploymentParams, Isolates, SimClock, SimObject } from "./deployment";
import { type DemandSegment, demandEndMs, startDemand } from "./demand";
import { LedgerModel } from "./ledger-model";
import { addAt, ExactGcra, worstExcessUnits } from "./measures";
import { countLogLines, type RunFigures, runFigures } from "./run-figures";

/** Asks one request may wait for before it is refused as contended (rate-limit.ts MAX_ASK_ROUNDS). */
const MAX_ASK_ROUNDS = 4;
const SUBJECT = "tenant:sim";
const CATEGORY = "request";

export interface GlobalOptions {
  readonly maxOvershoot: number;
  readonly minLeaseMs: number;
  readonly onError: "local" | "deny";
}

export interface GlobalScenario {
  readonly name: string;
  readonly title: string;
  readonly limit: Omit<LimitSpec, "scope">;
  readonly demand: readonly DemandSegment[];
  readonly options: GlobalOptions;
  readonly deployment: DeploymentParams;
}

export interface GlobalRunResult extends RunFigures {
  readonly name: string;
  readonly title: string;
  readonly limit: { count: number; window_s: number; burst: number };
  readonly leaseMs: number;
  readonly options: GlobalOptions;
  readonly isolates: { readonly slots: number; readonly retired: number };
  readonly requests: number;
  readonly admittedUnits: number;
  /** Admitted by on_error "local" while the ledger was taken as down. */
  readonly admittedLocallyUnits: number;
  readonly refused: number;
  readonly unavailable: number;
  /** What one exact GCRA with no distance admits of the same requests. */
  readonly exactUnits: number;
  /** The worst window's admitted units past B + Δ·C/W; the published bound allows boundExtraUnits. */
  readonly worstExcessUnits: number;
  readonly boundExtraUnits: number;
  readonly withinBound: boolean;
  /** Refusals while other isolates held live lease units (at least the request's cost), and the most units so held at a refusal. */
  readonly refusedWhileHeldElsewhere: number;
  readonly maxHeldElsewhereUnits: number;
  readonly callsPer1000Admitted: number;
  readonly failedCalls: number;
  /** Per second: requests, admitted units, the exact GCRA's units, calls reaching the object. */
  readonly series: { readonly demand: number[]; readonly admitted: number[]; readonly exact: number[]; readonly calls: number[] };
}

interface SimIsolate {
  readonly leases: GlobalLeases;
  readonly table: LimiterTable;
  readonly ns: LedgerNamespace;
  slot: LeaseSlot | null;
  retired: boolean;
}

function countWaiting(shorts: ReadonlyMap<LeaseGroup, Short[]>, sign: 1 | -1): void {
  for (const list of shorts.values()) for (const s of list) s.slot.waitingUnits += sign * s.need;
}

export async function runGlobal(scenario: GlobalScenario): Promise<GlobalRunResult> {
  const { deployment, options } = scenario;
  const limit: Limit = compileLimit({ ...scenario.limit, scope: "global" });
  const clock = new SimClock(deployment.seed);
  const object = new SimObject(clock, deployment);
  const ledger = new LedgerModel(object);
  const endMs = demandEndMs(scenario.demand);
  const warnings: Record<string, number> = {};
  const leaseOptions = { maxOvershoot: options.maxOvershoot, minLeaseMs: options.minLeaseMs, onError: options.onError, maxGroups: 64 };
  const isolates = new Isolates<SimIsolate>(
    clock,
    deployment,
    (_region, rttMs) => ({ leases: new GlobalLeases(leaseOptions, clock.now), table: new LimiterTable(1 / 16, { seed: 1 }), ns: ledger.namespaceFor(rttMs), slot: null, retired: false }),
    (isolate) => {
      isolate.retired = true;
    },
    endMs,
  );

  const exact = new ExactGcra(limit);
  const demandPerS: number[] = [];
  const admittedPerS: number[] = [];
  const spends = { atMs: [] as number[], cost: [] as number[] };
  const waitedMs: number[] = [];
  let requests = 0;
  let admittedUnits = 0;
  let admittedLocallyUnits = 0;
  let refused = 0;
  let unavailable = 0;
  let refusedWhileHeldElsewhere = 0;
  let maxHeldElsewhere = 0;
  let heldAtMs = -1;
  let heldTotal = 0;

  const liveUnits = (iso: SimIsolate, t: number): number => (iso.slot !== null && t < iso.slot.expiresAtMs ? iso.slot.units : 0);
  // Units in live leases across every isolate, summed once per simulated ms.
  const heldElsewhere = (iso: SimIsolate, t: number): number => {
    if (heldAtMs !== t) {
      heldAtMs = t;
      heldTotal = 0;
      for (const other of isolates.all) heldTotal += liveUnits(other, t);
    }
    return heldTotal - liveUnits(iso, t);
  };

  const conclude = (iso: SimIsolate, outcome: Exclude<GlobalOutcome, { kind: "short" }>, cost: number, arrivalMs: number, t: number, waited: boolean): void => {
    if (waited) waitedMs.push(clock.now() - arrivalMs);
    if (outcome.kind === "unavailable") {
      unavailable++;
      return;
    }
    if (outcome.decision.allowed) {
      admittedUnits += cost;
      if (outcome.ledgerError) admittedLocallyUnits += cost;
      addAt(admittedPerS, t, cost);
      spends.atMs.push(t);
      spends.cost.push(cost);
      return;
    }
    refused++;
    const held = heldElsewhere(iso, t);
    if (held >= cost) refusedWhileHeldElsewhere++;
    maxHeldElsewhere = Math.max(maxHeldElsewhere, held);
  };

  const slow = async (iso: SimIsolate, plan: GlobalPlan, first: ReadonlyMap<LeaseGroup, Short[]>, cost: number, arrivalMs: number): Promise<void> => {
    let shorts = first;
    countWaiting(shorts, 1);
    try {
      for (let round = 0; round < MAX_ASK_ROUNDS; round++) {
        await Promise.all([...shorts].map(([group, list]) => iso.leases.flight(iso.ns, null, group, list)));
        const t = Math.floor(clock.now());
        const outcome = decideGlobal(iso.table, iso.leases, plan, t);
        if (outcome.kind !== "short") return conclude(iso, outcome, cost, arrivalMs, t, true);
        countWaiting(shorts, -1);
        shorts = outcome.shorts;
        countWaiting(shorts, 1);
      }
      const t = Math.floor(clock.now());
      conclude(iso, { kind: "decided", decision: contended(plan, shorts), ledgerError: false }, cost, arrivalMs, t, true);
    } finally {
      countWaiting(shorts, -1);
    }
  };

  const pending: Promise<void>[] = [];
  startDemand(clock, scenario.demand, (arrivalMs) => {
    const cost = 1;
    requests++;
    addAt(demandPerS, arrivalMs, 1);
    exact.offer(cost, arrivalMs);
    const iso = isolates.pick();
    const t = Math.floor(arrivalMs);
    const charges: Charge[] = [{ subject: SUBJECT, category: CATEGORY, limits: [limit], cost }];
    const plan = planGlobal(iso.leases, charges, t)!;
    iso.slot ??= plan.refs[0]!.slot;
    iso.leases.returnDue(iso.ns, null, t);
    const outcome = decideGlobal(iso.table, iso.leases, plan, t);
    if (outcome.kind === "short") pending.push(slow(iso, plan, outcome.shorts, cost, arrivalMs));
    else conclude(iso, outcome, cost, arrivalMs, t, false);
  });

  const restore = countLogLines(warnings);
  try {
    await clock.run();
    await Promise.all(pending);
  } finally {
    restore();
  }

  const leaseMs = leaseMsFor(limit, options.maxOvershoot, options.minLeaseMs);
  const boundExtra = boundUnits(limit, 0, leaseMs) - limit.burst;
  const worst = worstExcessUnits(limit, spends);
  return {
    name: scenario.name,
    title: scenario.title,
    limit: { count: limit.count, window_s: limit.windowS, burst: limit.burst },
    leaseMs,
    options,
    isolates: { slots: isolates.count, retired: isolates.retired },
    requests,
    admittedUnits,
    admittedLocallyUnits,
    refused,
    unavailable,
    exactUnits: exact.admittedUnits,
    worstExcessUnits: worst,
    boundExtraUnits: boundExtra,
    withinBound: worst <= boundExtra,
    refusedWhileHeldElsewhere,
    maxHeldElsewhereUnits: maxHeldElsewhere,
    callsPer1000Admitted: admittedUnits === 0 ? 0 : (1000 * object.calls) / admittedUnits,
    failedCalls: object.failedCalls + object.timedOutCalls,
    ...runFigures(object, deployment.objectCallsPerS, demandPerS, waitedMs, warnings),
    series: { demand: demandPerS, admitted: admittedPerS, exact: exact.perS, calls: object.offeredPerS },
  };
}
