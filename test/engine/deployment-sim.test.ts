// The deployment simulation of bench/sim (`npm run simulate`) at its small
// scale and a fixed seed: 40 isolates over 10 regions 20–250 ms from the
// object, isolates coming and going, the object serving 1,000 calls a second.
// The lease code is the real one (for global limits GlobalLeases, LeaseBook,
// decideGlobal and the ledger's answerAsk and giveBack; for budgets the
// budget step itself with BudgetLeases and BudgetRefusals, over a model of
// the quota object's lease rules); only distance, time and capacity are
// modelled. It runs in Node: the lease layers' runtime imports need no
// Workers API.
import { describe, expect, it } from "vitest";
import { type BudgetRunResult, runBudget } from "../../bench/sim/budget-run";
import { BUDGET_DEFAULTS, budgetScenarios } from "../../bench/sim/budget-scenarios";
import { type GlobalRunResult, type GlobalScenario, runGlobal } from "../../bench/sim/global-run";
import { globalScenarios } from "../../bench/sim/global-scenarios";

const SEED = 7;
const scenarios = globalScenarios("small", SEED);
const scenario = (name: string): GlobalScenario => scenarios.find((s) => s.name === name)!;
// Each scenario runs once for the whole file.
const runs = new Map<string, Promise<GlobalRunResult>>();
const run = (name: string): Promise<GlobalRunResult> => {
  let r = runs.get(name);
  if (r === undefined) runs.set(name, (r = runGlobal(scenario(name))));
  return r;
};

describe("global limits over the simulated deployment", () => {
  it("keeps every window within B + (Δ + L)·C/W while the ledger answers, late or not", async () => {
    for (const name of ["steady", "hot", "burst", "outage-hang"]) {
      const r = await run(name);
      expect(r.admittedLocallyUnits, name).toBe(0);
      expect(r.worstExcessUnits, `${name}: worst window past the exact figure, against the bound's +${r.boundExtraUnits}`).toBeLessThanOrEqual(r.boundExtraUnits);
      expect(r.admittedUnits, name).toBeGreaterThan(0);
    }
  });

  it("admits every request of a caller at 90 % of its limit, with the object's calls per request falling as an isolate's traffic grows", async () => {
    const steady = await run("steady");
    const hot = await run("hot");
    for (const r of [steady, hot]) {
      expect(r.refused, r.name).toBe(0);
      expect(r.admittedUnits, r.name).toBe(r.exactUnits);
    }
    // 3 requests a second per isolate is under 4 per L: every request is an exact spend at the object.
    expect(steady.callsPer1000Admitted).toBeGreaterThan(800);
    // 33 a second per isolate: leases of about 28 units.
    expect(hot.callsPer1000Admitted).toBeLessThan(250);
  });

  it("meters per isolate while the object fails (on_error local) and refuses 503 instead with deny, never waiting for it", async () => {
    const local = await run("outage-fail");
    const deny = await runGlobal({ ...scenario("outage-fail"), options: { ...scenario("outage-fail").options, onError: "deny" } });
    expect(local.admittedLocallyUnits).toBeGreaterThan(0);
    expect(local.warnings.ledger_unavailable).toBeGreaterThan(0);
    expect(deny.admittedLocallyUnits).toBe(0);
    expect(deny.unavailable).toBeGreaterThan(0);
    expect(deny.worstExcessUnits).toBeLessThanOrEqual(deny.boundExtraUnits);
    expect(local.waitedMaxMs!).toBeLessThan(2000);
  });

  it("gives the same figures for the same seed", async () => {
    const { series: a, ...first } = await run("steady");
    const { series: b, ...second } = await runGlobal(scenario("steady"));
    expect(second).toEqual(first);
    expect(b).toEqual(a);
  });
});

const budgets = budgetScenarios("small", SEED);
const budgetRuns = new Map<string, Promise<BudgetRunResult>>();
const runB = (name: string): Promise<BudgetRunResult> => {
  let r = budgetRuns.get(name);
  if (r === undefined) budgetRuns.set(name, (r = runBudget(budgets.find((s) => s.name === name)!)));
  return r;
};

describe("a leased budget over the simulated deployment", () => {
  it("never admits past the amount, and its `used` never under-states the spend, while isolates come and go", async () => {
    for (const name of ["steady", "hot", "running-out", "outage-fail"]) {
      const r = await runB(name);
      expect(r.worstOverUnits, name).toBe(0);
      expect(r.admittedUnits, name).toBeLessThanOrEqual(r.amount);
      // Units of leases lost with their isolates stay counted: `used` may over-state, never under-state.
      expect(r.usedAtEnd, name).toBeGreaterThanOrEqual(r.admittedUnits);
    }
    const out = await runB("running-out");
    // It ran out: what was refused was refused with units sitting in other isolates' leases, and none was admitted past it.
    expect(out.refused).toBeGreaterThan(0);
    expect(out.admittedUnits).toBeGreaterThan(0.9 * out.amount);
  });

  it("admits every request while the budget is far from its end, a hot tenant's isolates asking the object for few of them", async () => {
    const steady = await runB("steady");
    const hot = await runB("hot");
    for (const r of [steady, hot]) {
      expect(r.admittedUnits, r.name).toBe(r.requests);
      expect(r.refused + r.unavailable, r.name).toBe(0);
    }
    expect(hot.callsPer1000FarFromEnd).toBeLessThan(100);
  });

  it("reaches every isolate with a top-up within budgets.exhausted_cache_s and a round trip", async () => {
    const r = await runB("running-out");
    expect(r.topUpReachMaxMs).not.toBeNull();
    expect(r.topUpReachMaxMs!).toBeLessThanOrEqual(BUDGET_DEFAULTS.exhaustedCacheMs + 1000);
  });

  it("answers 503 while the object fails, and serves what the isolates hold in leases meanwhile", async () => {
    const r = await runB("outage-fail");
    expect(r.unavailable).toBeGreaterThan(0);
    expect(r.warnings.budget_lease_failed).toBeGreaterThan(0);
    // Leases granted before the failure keep admitting during it (small scale: the object fails from 5 s to 15 s).
    const during = r.series.admitted.slice(5, 15).reduce((a, b) => a + b, 0);
    expect(during).toBeGreaterThan(0);
    expect(r.unavailable).toBeLessThan(r.series.demand.slice(5, 15).reduce((a, b) => a + b, 0));
    expect(r.waitedMaxMs!).toBeLessThan(2000);
  });
});
