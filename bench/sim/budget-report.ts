// What `npm run simulate` writes about leased budgets: the Markdown tables
// between the simulate markers of docs/budgets.md, and the SVG plot.
import type { BudgetPlanResult } from "./budget-plan";
import type { BudgetRunResult } from "./budget-run";
import { int, ms, pct, ratio } from "./format";
import { scenarioPanels } from "./scenario-panels";
import { panelsSvg } from "./svg-chart";

function waited(r: BudgetRunResult): string {
  return `${pct(r.waited, r.requests)}: ${ms(r.waitedP50Ms)} / ${ms(r.waitedP99Ms)}`;
}

function calls(r: BudgetRunResult): string {
  return `${int(r.callsPerSMean)} / ${int(r.callsPerSMax)} / ${int(r.callsPerSWarmMax)}`;
}

function overStated(r: BudgetRunResult): string {
  return `${int(r.overStatedUnits)} (${pct(r.overStatedUnits, r.admittedUnits)})`;
}

export function budgetScenarioTable(results: readonly BudgetRunResult[]): string {
  const rows = results.map((r) =>
    [
      r.title,
      int(r.requests),
      `${int(r.admittedUnits)} / ${int(r.exactUnits)} (${ratio(r.admittedUnits, r.exactUnits)}); ${r.worstOverUnits === 0 ? "never over" : `over by ${int(r.worstOverUnits)}`}`,
      overStated(r),
      `${int(r.refused)} (${int(r.refusedWhileHeldElsewhere)}; at most ${int(r.maxHeldElsewhereUnits)} units)`,
      int(r.unavailable),
      calls(r),
      `${int(r.callsPer1000Admitted)} (${int(r.callsPer1000FarFromEnd)})`,
      `${int(r.maxQueueMs)} ms`,
      waited(r),
      r.topUpReachMaxMs === null ? "–" : `${ms(r.topUpReachP50Ms)} / ${ms(r.topUpReachMaxMs)}`,
    ].join(" | "),
  );
  return [
    "| scenario | requests | admitted / exact; never over? | `used` over the true spend at the end (units lost with isolates) | refused (while other isolates held units; most held) | 503 | object calls/s: mean / busiest / busiest after 5 s | object calls per 1,000 admitted (far from the end) | longest queue at the object | waited on the object: share, added p50 / p99 | a top-up reaching the isolates: p50 / slowest |",
    "| :--- | ---: | :--- | :--- | :--- | ---: | :--- | :--- | ---: | :--- | :--- |",
    ...rows.map((r) => `| ${r} |`),
  ].join("\n");
}

export function leaseTable(sweep: BudgetPlanResult["leaseSweep"]): string {
  const names = sweep[0]?.runs.map((r) => r.name) ?? [];
  const cell = (r: BudgetRunResult): string => {
    const parts = [`${calls(r)} calls/s`, `${int(r.callsPer1000FarFromEnd)} per 1,000 far from the end`, `waited ${waited(r)}`, `lost ${overStated(r)}`];
    if (r.name === "running-out") parts.push(`admitted ÷ exact ${ratio(r.admittedUnits, r.exactUnits)}, ${int(r.refusedWhileHeldElsewhere)} refused while ≥ 1 unit was held elsewhere (most ${int(r.maxHeldElsewhereUnits)})`);
    return parts.join("; ");
  };
  return [`| lease_s | ${names.join(" | ")} |`, `| ---: | ${names.map(() => ":---").join(" | ")} |`, ...sweep.map(({ leaseS, runs }) => `| ${leaseS} | ${runs.map(cell).join(" | ")} |`)].join("\n");
}

export function budgetMarkdown(plan: BudgetPlanResult, stamp: string): string {
  const parts = [budgetScenarioTable(plan.scenarios)];
  if (plan.leaseSweep.length > 0) parts.push(`\`budgets.lease_s\` (steady, hot and running out as above):\n\n${leaseTable(plan.leaseSweep)}`);
  parts.push(stamp);
  return parts.join("\n\n");
}

export function budgetSvg(plan: BudgetPlanResult, caption: string): string {
  return panelsSvg({ title: "A leased budget over a simulated deployment", caption, xLabel: "seconds", columns: plan.scenarios.length, panels: scenarioPanels(plan.scenarios, "an exact budget admits") });
}
