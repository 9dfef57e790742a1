// The deployment's scenarios for a leased budget (credits of one tenant),
// at full scale or small (the regression test): the same shapes as global
// limits' (global-scenarios.ts), plus a budget running out under load and a
// top-up after it.
import type { BudgetOptions, BudgetScenario } from "./budget-run";
import { deploymentFor, type Scale } from "./global-scenarios";

/** The defaults of `budgets.*` (src/config.ts). */
export const BUDGET_DEFAULTS: BudgetOptions = { leaseMs: 10_000, exhaustedCacheMs: 5000 };
/** Credits no scenario comes near. */
const PLENTY = 1_000_000_000;

export function budgetScenarios(scale: Scale, seed: number, options: BudgetOptions = BUDGET_DEFAULTS): BudgetScenario[] {
  const k = scale === "full" ? 1 : 40 / 300;
  const s = scale === "full" ? 1 : 0.25;
  const rate = (perS: number): number => Math.round(perS * k);
  const outageEndMs = scale === "full" ? 25_000 : 15_000;
  const afterOutageMs = scale === "full" ? 15_000 : 5_000;
  const d = (extra = {}) => deploymentFor(scale, seed, extra);
  return [
    { name: "steady", title: "steady tenant: 900/s over every isolate", amount: PLENTY, demand: [{ fromMs: 0, toMs: 60_000 * s, perS: rate(900) }], options, deployment: d() },
    { name: "hot", title: "hot tenant: 10,000/s", amount: PLENTY, demand: [{ fromMs: 0, toMs: 60_000 * s, perS: rate(10_000) }], options, deployment: d() },
    {
      name: "burst",
      title: "burst from 0 to 50,000/s",
      amount: PLENTY,
      demand: [
        { fromMs: 0, toMs: 5_000 * s, perS: 0 },
        { fromMs: 5_000 * s, toMs: 15_000 * s, perS: rate(50_000) },
        { fromMs: 15_000 * s, toMs: 20_000 * s, perS: 0 },
      ],
      options,
      deployment: d(),
    },
    {
      name: "running-out",
      title: "credits running out under 10,000/s, then a top-up",
      amount: Math.round(200_000 * k * s),
      topUp: { atMs: 30_000 * s, units: Math.round(50_000 * k * s) },
      demand: [{ fromMs: 0, toMs: 45_000 * s, perS: rate(10_000) }],
      options,
      deployment: d(),
    },
    {
      name: "outage-hang",
      title: "object stops answering for 10 s (calls wait): 10,000/s",
      amount: PLENTY,
      demand: [{ fromMs: 0, toMs: outageEndMs + afterOutageMs, perS: rate(10_000) }],
      options,
      deployment: d({ outage: { fromMs: outageEndMs - 10_000, toMs: outageEndMs, mode: "hang" } }),
    },
    {
      name: "outage-fail",
      title: "object fails every call for 10 s: 10,000/s",
      amount: PLENTY,
      demand: [{ fromMs: 0, toMs: outageEndMs + afterOutageMs, perS: rate(10_000) }],
      options,
      deployment: d({ outage: { fromMs: outageEndMs - 10_000, toMs: outageEndMs, mode: "fail" } }),
    },
  ];
}
