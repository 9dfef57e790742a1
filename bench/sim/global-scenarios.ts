// The deployment's scenarios for global limits, at full scale (`npm run
// simulate`) or small (the regression test): the same shapes, fewer
// isolates and seconds.
import { type DeploymentParams, REGION_RTT_MS } from "./deployment";
import type { GlobalOptions, GlobalScenario } from "./global-run";

/** The defaults of `global.*` (src/config.ts). */
export const GLOBAL_DEFAULTS: GlobalOptions = { maxOvershoot: 0.02, minLeaseMs: 50, onError: "local" };

export type Scale = "full" | "small";

export function deploymentFor(scale: Scale, seed: number, extra: Partial<DeploymentParams> = {}): DeploymentParams {
  return {
    regionRttMs: REGION_RTT_MS,
    isolatesPerRegion: scale === "full" ? 30 : 4,
    meanIsolateLifeS: scale === "full" ? 60 : 10,
    objectCallsPerS: 1000,
    seed,
    ...extra,
  };
}

/**
 * Rates scale with the isolates (`k` = isolates / 300), so a small run keeps
 * each isolate's traffic, and so the lease sizes and the calls per request,
 * of the full one.
 */
export function globalScenarios(scale: Scale, seed: number, options: GlobalOptions = GLOBAL_DEFAULTS): GlobalScenario[] {
  const k = scale === "full" ? 1 : 40 / 300;
  const s = scale === "full" ? 1 : 0.25;
  const rate = (perS: number): number => Math.round(perS * k);
  // The outage lasts 10 s at either scale, after 15 s of traffic and before 15 s more (5 s each, small).
  const outageEndMs = scale === "full" ? 25_000 : 15_000;
  const afterOutageMs = scale === "full" ? 15_000 : 5_000;
  const d = (extra: Partial<DeploymentParams> = {}): DeploymentParams => deploymentFor(scale, seed, extra);
  return [
    {
      name: "steady",
      title: "steady tenant at 90 % of 1,000/s over every isolate",
      limit: { count: rate(1000) * 60, window_s: 60, burst: rate(1000) },
      demand: [{ fromMs: 0, toMs: 60_000 * s, perS: rate(900) }],
      options,
      deployment: d(),
    },
    {
      name: "hot",
      title: "hot tenant: 10,000/s against 11,000/s",
      limit: { count: rate(11_000) * 60, window_s: 60, burst: rate(11_000) },
      demand: [{ fromMs: 0, toMs: 60_000 * s, perS: rate(10_000) }],
      options,
      deployment: d(),
    },
    {
      name: "burst",
      title: "burst from 0 to 50,000/s against 11,000/s",
      limit: { count: rate(11_000) * 60, window_s: 60, burst: rate(11_000) },
      demand: [
        { fromMs: 0, toMs: 5_000 * s, perS: 0 },
        { fromMs: 5_000 * s, toMs: 15_000 * s, perS: rate(50_000) },
        { fromMs: 15_000 * s, toMs: 20_000 * s, perS: 0 },
      ],
      options,
      deployment: d(),
    },
    {
      name: "outage-hang",
      title: "object stops answering for 10 s (calls wait): 10,000/s against 6,000/s",
      limit: { count: rate(6_000) * 60, window_s: 60, burst: rate(6_000) },
      demand: [{ fromMs: 0, toMs: outageEndMs + afterOutageMs, perS: rate(10_000) }],
      options,
      deployment: d({ outage: { fromMs: outageEndMs - 10_000, toMs: outageEndMs, mode: "hang" } }),
    },
    {
      name: "outage-fail",
      title: "object fails every call for 10 s: 10,000/s against 6,000/s",
      limit: { count: rate(6_000) * 60, window_s: 60, burst: rate(6_000) },
      demand: [{ fromMs: 0, toMs: outageEndMs + afterOutageMs, perS: rate(10_000) }],
      options,
      deployment: d({ outage: { fromMs: outageEndMs - 10_000, toMs: outageEndMs, mode: "fail" } }),
    },
  ];
}
