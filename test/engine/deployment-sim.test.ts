// The deployment simulation of bench/sim (`npm run simulate`) at its small
// scale and a fixed seed: 40 isolates over 10 regions 20–250 ms from the
// object, isolates coming and going, the object serving 1,000 calls a second.
// The lease code is the real one (GlobalLeases, LeaseBook, decideGlobal; the
// ledger's answerAsk and giveBack); only distance, time and capacity are
// modelled. It runs in Node: the lease layer's runtime imports need no
// Workers API.
import { describe, expect, it } from "vitest";
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
