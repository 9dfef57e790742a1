// Everything `npm run simulate` runs for leased budgets: the scenarios at
// the defaults, then budgets.lease_s swept over the steady, hot and
// running-out ones (what a lease's length buys in object calls and costs in
// units lost with isolates and refusals while units sit elsewhere).
import { type BudgetRunResult, runBudget } from "./budget-run";
import { BUDGET_DEFAULTS, budgetScenarios } from "./budget-scenarios";
import type { Scale } from "./global-scenarios";

export interface BudgetPlanResult {
  readonly scenarios: BudgetRunResult[];
  readonly leaseSweep: { readonly leaseS: number; readonly runs: BudgetRunResult[] }[];
}

export const LEASE_SWEEP_S: readonly number[] = [1, 2.5, 5, 10, 30];
const SWEPT = ["steady", "hot", "running-out"];

type Log = (line: string) => void;

async function timed(log: Log, label: string, run: () => Promise<BudgetRunResult>): Promise<BudgetRunResult> {
  const started = Date.now();
  const result = await run();
  log(`${label}: ${result.requests} requests, admitted ${result.admittedUnits} (exact ${result.exactUnits}), ${result.callsPerSMean.toFixed(0)} calls/s (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  return result;
}

export async function runBudgetPlan(scale: Scale, seed: number, log: Log, sweeps = true): Promise<BudgetPlanResult> {
  const scenarios: BudgetRunResult[] = [];
  for (const scenario of budgetScenarios(scale, seed)) scenarios.push(await timed(log, `budget ${scenario.name}`, () => runBudget(scenario)));
  const leaseSweep: BudgetPlanResult["leaseSweep"] = [];
  if (!sweeps) return { scenarios, leaseSweep };
  for (const leaseS of LEASE_SWEEP_S) {
    const leaseMs = leaseS * 1000;
    const runs: BudgetRunResult[] = [];
    for (const scenario of budgetScenarios(scale, seed, { ...BUDGET_DEFAULTS, leaseMs }).filter((s) => SWEPT.includes(s.name))) {
      const same = leaseMs === BUDGET_DEFAULTS.leaseMs ? scenarios.find((r) => r.name === scenario.name) : undefined;
      runs.push(same ?? (await timed(log, `lease_s ${leaseS} ${scenario.name}`, () => runBudget(scenario))));
    }
    leaseSweep.push({ leaseS, runs });
  }
  return { scenarios, leaseSweep };
}
