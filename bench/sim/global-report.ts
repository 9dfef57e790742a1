// What `npm run simulate` writes about global limits: the Markdown tables
// that go between the simulate markers of docs/global-limits.md, and the
// SVG plot beside it.
import { int, ms, pct, ratio } from "./format";
import type { GlobalRunResult } from "./global-run";
import type { GlobalPlanResult } from "./global-plan";
import { scenarioPanels } from "./scenario-panels";
import { panelsSvg } from "./svg-chart";

function excess(r: GlobalRunResult): string {
  const past = r.worstExcessUnits <= 0 ? "never past it" : `+${int(r.worstExcessUnits)}`;
  return `${past} (bound +${int(r.boundExtraUnits)})`;
}

function calls(r: GlobalRunResult): string {
  return `${int(r.callsPerSMean)} / ${int(r.callsPerSMax)} / ${int(r.callsPerSWarmMax)}`;
}

function waited(r: GlobalRunResult): string {
  return `${pct(r.waited, r.requests)}: ${ms(r.waitedP50Ms)} / ${ms(r.waitedP99Ms)}`;
}

export function globalScenarioTable(results: readonly GlobalRunResult[]): string {
  const rows = results.map((r) =>
    [
      r.title,
      `${int(r.limit.count)}/${r.limit.window_s} s, burst ${int(r.limit.burst)}; L ${int(r.leaseMs)} ms`,
      int(r.requests),
      `${int(r.admittedUnits)} / ${int(r.exactUnits)} (${ratio(r.admittedUnits, r.exactUnits)})${r.admittedLocallyUnits > 0 ? `; ${int(r.admittedLocallyUnits)} metered per isolate` : ""}`,
      excess(r),
      `${int(r.refused)} (${int(r.refusedWhileHeldElsewhere)}; at most ${int(r.maxHeldElsewhereUnits)} units)`,
      calls(r),
      `${int(r.maxQueueMs)} ms`,
      waited(r),
    ].join(" | "),
  );
  return [
    "| scenario | limit | requests | admitted / exact GCRA | worst window past the exact figure | refused (while other isolates held units; most held) | object calls/s: mean / busiest / busiest after 5 s | longest queue at the object | waited on the object: share, added p50 / p99 |",
    "| :--- | :--- | ---: | :--- | :--- | :--- | :--- | ---: | :--- |",
    ...rows.map((r) => `| ${r} |`),
  ].join("\n");
}

export function overshootTable(sweep: GlobalPlanResult["overshootSweep"]): string {
  const rows = sweep.map(({ maxOvershoot, runs }) => {
    const cells = runs.map((r) => `${calls(r)}; ${waited(r)}; ${ratio(r.admittedUnits, r.exactUnits)}; ${excess(r)}`);
    return `| ${maxOvershoot} | ${int(runs[0]!.leaseMs)} ms | ${cells.join(" | ")} |`;
  });
  const names = sweep[0]?.runs.map((r) => r.name) ?? [];
  return [
    `| max_overshoot | L (per-minute limit) | ${names.map((n) => `${n}: calls/s (mean / busiest / after 5 s); waited, p50 / p99; admitted ÷ exact; worst window`).join(" | ")} |`,
    `| ---: | ---: | ${names.map(() => ":---").join(" | ")} |`,
    ...rows,
  ].join("\n");
}

export function minLeaseTable(sweep: GlobalPlanResult["minLeaseSweep"]): string {
  return [
    "| min_lease_ms | L | admitted / exact GCRA | object calls/s: mean / busiest | longest queue | answers after the lease died (`ledger_slow`) | waited: share, p50 / p99 |",
    "| ---: | ---: | :--- | :--- | ---: | ---: | :--- |",
    ...sweep.map(
      ({ minLeaseMs, run: r }) =>
        `| ${minLeaseMs} | ${int(r.leaseMs)} ms | ${int(r.admittedUnits)} / ${int(r.exactUnits)} (${ratio(r.admittedUnits, r.exactUnits)}) | ${int(r.callsPerSMean)} / ${int(r.callsPerSMax)} | ${int(r.maxQueueMs)} ms | ${int(r.warnings.ledger_slow ?? 0)} | ${waited(r)} |`,
    ),
  ].join("\n");
}

export function outageTable(variants: GlobalPlanResult["outageVariants"]): string {
  return [
    "| the object, 10 s | admitted / exact GCRA | metered per isolate | refused 429 / 503 | worst window past the exact figure | waited: share, p50 / p99 / longest |",
    "| :--- | :--- | ---: | :--- | :--- | :--- |",
    ...variants.map(
      ({ variant, run: r }) =>
        `| ${variant} | ${int(r.admittedUnits)} / ${int(r.exactUnits)} (${ratio(r.admittedUnits, r.exactUnits)}) | ${int(r.admittedLocallyUnits)} | ${int(r.refused)} / ${int(r.unavailable)} | ${excess(r)} | ${pct(r.waited, r.requests)}: ${ms(r.waitedP50Ms)} / ${ms(r.waitedP99Ms)} / ${ms(r.waitedMaxMs)} |`,
    ),
  ].join("\n");
}

export function rateTable(sweep: GlobalPlanResult["rateSweep"]): string {
  const overshoots = [...new Set(sweep.map((r) => r.maxOvershoot))];
  const rates = [...new Set(sweep.map((r) => r.perS))];
  const cell = (maxOvershoot: number, perS: number): string => {
    const r = sweep.find((x) => x.maxOvershoot === maxOvershoot && x.perS === perS)?.run;
    if (r === undefined) return "–";
    const perIsolate = (r.requests / 15 / r.isolates.slots).toFixed(1);
    return `${int(r.callsPerSWarmMean)} (${int((1000 * r.objectCalls) / Math.max(1, r.requests))} per 1,000 requests); ${waited(r)}; ${perIsolate}/s per isolate`;
  };
  return [
    `| the caller's rate | ${overshoots.map((o) => `max_overshoot ${o}: object calls/s after 5 s (per 1,000 requests); waited, p50 / p99; requests per isolate`).join(" | ")} |`,
    `| ---: | ${overshoots.map(() => ":---").join(" | ")} |`,
    ...rates.map((perS) => `| ${int(perS)}/s | ${overshoots.map((o) => cell(o, perS)).join(" | ")} |`),
  ].join("\n");
}

/** Everything between the markers. */
export function globalMarkdown(plan: GlobalPlanResult, stamp: string): string {
  const parts = [globalScenarioTable(plan.scenarios)];
  if (plan.overshootSweep.length > 0) parts.push(`\`global.max_overshoot\` (steady, hot and burst as above):\n\n${overshootTable(plan.overshootSweep)}`);
  if (plan.minLeaseSweep.length > 0) parts.push(`\`global.min_lease_ms\`, on a per-second limit (900/s against 1,000/s over every isolate, 20 s):\n\n${minLeaseTable(plan.minLeaseSweep)}`);
  if (plan.rateSweep.length > 0) parts.push(`Object calls against the caller's rate, spread over every isolate at 90 % of a per-minute limit (15 s each):\n\n${rateTable(plan.rateSweep)}`);
  if (plan.outageVariants.length > 0) parts.push(`The object stopping for 10 s (10,000/s against 6,000/s):\n\n${outageTable(plan.outageVariants)}`);
  parts.push(stamp);
  return parts.join("\n\n");
}

export function globalSvg(plan: GlobalPlanResult, caption: string): string {
  return panelsSvg({ title: "Global limits over a simulated deployment", caption, xLabel: "seconds", columns: plan.scenarios.length, panels: scenarioPanels(plan.scenarios, "exact GCRA admits") });
}
