// Everything `npm run simulate` runs for global limits: the five scenarios
// at the defaults, then the sweeps that say what the defaults should be
// (max_overshoot over the first three scenarios, min_lease_ms on a
// per-second limit), and the outage with on_error "deny" and with a timeout
// on ledger calls.
import { type GlobalOptions, type GlobalRunResult, runGlobal } from "./global-run";
import { deploymentFor, GLOBAL_DEFAULTS, globalScenarios, type Scale } from "./global-scenarios";

export interface GlobalPlanResult {
  readonly scenarios: GlobalRunResult[];
  readonly overshootSweep: { readonly maxOvershoot: number; readonly runs: GlobalRunResult[] }[];
  readonly minLeaseSweep: { readonly minLeaseMs: number; readonly run: GlobalRunResult }[];
  readonly outageVariants: { readonly variant: string; readonly run: GlobalRunResult }[];
  readonly rateSweep: { readonly maxOvershoot: number; readonly perS: number; readonly run: GlobalRunResult }[];
}

export const OVERSHOOT_SWEEP: readonly number[] = [0.01, 0.02, 0.05, 0.1];
export const MIN_LEASE_SWEEP_MS: readonly number[] = [50, 250, 500, 1000];
/** A caller's rate, spread over every isolate, at 90 % of its per-minute limit. */
export const RATE_SWEEP_PER_S: readonly number[] = [100, 300, 1000, 3000, 10_000, 30_000];
export const RATE_SWEEP_OVERSHOOTS: readonly number[] = [0.02, 0.05];
/** The outage variants' call timeout: what a bounded wait on the ledger would give. */
export const CALL_TIMEOUT_MS = 1000;

type Log = (line: string) => void;

async function timed(log: Log, label: string, run: () => Promise<GlobalRunResult>): Promise<GlobalRunResult> {
  const started = Date.now();
  const result = await run();
  log(`${label}: ${result.requests} requests, admitted ${result.admittedUnits} (exact ${result.exactUnits}), ${result.callsPerSMean.toFixed(0)} calls/s (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  return result;
}

export async function runGlobalPlan(scale: Scale, seed: number, log: Log, sweeps = true): Promise<GlobalPlanResult> {
  const scenarios: GlobalRunResult[] = [];
  for (const scenario of globalScenarios(scale, seed)) scenarios.push(await timed(log, `global ${scenario.name}`, () => runGlobal(scenario)));
  if (!sweeps) return { scenarios, overshootSweep: [], minLeaseSweep: [], outageVariants: [], rateSweep: [] };

  const overshootSweep: GlobalPlanResult["overshootSweep"] = [];
  for (const maxOvershoot of OVERSHOOT_SWEEP) {
    const options: GlobalOptions = { ...GLOBAL_DEFAULTS, maxOvershoot };
    const runs: GlobalRunResult[] = [];
    for (const scenario of globalScenarios(scale, seed, options).filter((s) => ["steady", "hot", "burst"].includes(s.name))) {
      // The defaults' runs are the scenarios' own.
      const same = maxOvershoot === GLOBAL_DEFAULTS.maxOvershoot ? scenarios.find((r) => r.name === scenario.name) : undefined;
      runs.push(same ?? (await timed(log, `max_overshoot ${maxOvershoot} ${scenario.name}`, () => runGlobal(scenario))));
    }
    overshootSweep.push({ maxOvershoot, runs });
  }

  const minLeaseSweep: GlobalPlanResult["minLeaseSweep"] = [];
  const k = scale === "full" ? 1 : 40 / 300;
  for (const minLeaseMs of MIN_LEASE_SWEEP_MS) {
    const run = await timed(log, `min_lease_ms ${minLeaseMs}`, () =>
      runGlobal({
        name: `per-second-${minLeaseMs}`,
        title: "a per-second limit at 90 %: 900/s against 1,000/s",
        limit: { count: Math.round(1000 * k), window_s: 1, burst: Math.round(1000 * k) },
        demand: [{ fromMs: 0, toMs: 20_000, perS: Math.round(900 * k) }],
        options: { ...GLOBAL_DEFAULTS, minLeaseMs },
        deployment: deploymentFor(scale, seed),
      }),
    );
    minLeaseSweep.push({ minLeaseMs, run });
  }

  const outageVariants: GlobalPlanResult["outageVariants"] = [];
  const base = globalScenarios(scale, seed);
  const hang = base.find((s) => s.name === "outage-hang")!;
  const fail = base.find((s) => s.name === "outage-fail")!;
  outageVariants.push({ variant: "calls wait, on_error local (the defaults)", run: scenarios.find((r) => r.name === "outage-hang")! });
  outageVariants.push({
    variant: `calls wait, a ${CALL_TIMEOUT_MS} ms timeout on ledger calls`,
    run: await timed(log, "outage: hang with a timeout", () => runGlobal({ ...hang, name: "outage-hang-timeout", deployment: { ...hang.deployment, callTimeoutMs: CALL_TIMEOUT_MS } })),
  });
  outageVariants.push({ variant: "calls fail, on_error local (the defaults)", run: scenarios.find((r) => r.name === "outage-fail")! });
  outageVariants.push({
    variant: 'calls fail, on_error "deny"',
    run: await timed(log, "outage: fail with deny", () => runGlobal({ ...fail, name: "outage-fail-deny", options: { ...fail.options, onError: "deny" } })),
  });

  const rateSweep: GlobalPlanResult["rateSweep"] = [];
  for (const maxOvershoot of RATE_SWEEP_OVERSHOOTS) {
    for (const perS of RATE_SWEEP_PER_S) {
      const rate = Math.max(1, Math.round(perS * k));
      const count = Math.round((rate * 60) / 0.9);
      const run = await timed(log, `rate ${perS}/s at max_overshoot ${maxOvershoot}`, () =>
        runGlobal({
          name: `rate-${perS}`,
          title: `${perS}/s at 90 % of its limit`,
          limit: { count, window_s: 60, burst: Math.max(1, Math.round(count / 60)) },
          demand: [{ fromMs: 0, toMs: 15_000, perS: rate }],
          options: { ...GLOBAL_DEFAULTS, maxOvershoot },
          deployment: deploymentFor(scale, seed),
        }),
      );
      rateSweep.push({ maxOvershoot, perS, run });
    }
  }
  return { scenarios, overshootSweep, minLeaseSweep, outageVariants, rateSweep };
}
