// How the contract fuzz runs a scenario (test/integration/contract-fuzz.test.ts
// and contract-fuzz-shadow.test.ts, two files so that the workers project
// runs them side by side): through the gateway and through the model, the
// differences between them, and a property over many scenarios from the
// seed `npm test` fixes (or `npm run fuzz` picks).
import fc from "fast-check";
import { expect } from "vitest";
import { possibleOutcomes } from "../model/gateway";
import type { Scenario } from "../model/scenario";
import { FAST_CHECK_SEED } from "../fast-check-seed";
import { asTest, differences } from "./contract-fuzz-compare";
import { runThroughGateway } from "./contract-fuzz-gateway";

/** Scenarios in `npm test`: enough to meet every feature, within its share of the suite's time. */
const DEFAULT_RUNS = 40;
/** And as many again with shadow limits and budgets (policyShadowScenarioArb). */
const DEFAULT_SHADOW_RUNS = 30;
// Vite hands VITE_-prefixed variables to the tests in workerd (scripts/fuzz.mjs sets them).
const env = (import.meta as unknown as { env: Record<string, string | undefined> }).env;
export const RUNS = Number(env.VITE_CONTRACT_FUZZ_RUNS ?? DEFAULT_RUNS);
export const SHADOW_RUNS = Number(env.VITE_CONTRACT_FUZZ_RUNS ?? DEFAULT_SHADOW_RUNS);
export const SEED = env.VITE_CONTRACT_FUZZ_SEED === undefined ? FAST_CHECK_SEED : Number(env.VITE_CONTRACT_FUZZ_SEED);

/** The model's and the gateway's runs of one scenario, and how they differ. */
async function disagreements(scenario: Scenario): Promise<string[]> {
  const diffs = await disagreementsOnce(scenario);
  // A 502 means the recording origin dropped a connection (a loaded machine): the scenario runs once more under fresh names.
  return diffs.some((d) => d.includes('"origin_unreachable"')) ? disagreementsOnce(scenario) : diffs;
}

async function disagreementsOnce(scenario: Scenario): Promise<string[]> {
  const startMs = Date.now();
  const observed = await runThroughGateway(scenario, startMs);
  // The origin's answers settle in the order they came back (their scripted delays set it; a loaded machine may not keep it).
  const outcomes = possibleOutcomes(scenario, startMs, observed.answerOrders);
  // The gateway agrees when it did what one of the outcomes the contract allows says; else the closest one's differences.
  const diffs = outcomes.map((expected) => differences(expected, observed)).reduce((best, d) => (d.length < best.length ? d : best));
  if (env.VITE_CONTRACT_FUZZ_TRACE !== undefined) console.log(`scenario of ${scenario.steps.length} steps: ${Date.now() - startMs} ms${diffs.length === 0 ? "" : `\n  ${diffs.join("\n  ")}`}`);
  return diffs;
}

export async function expectAgreement(scenario: Scenario): Promise<void> {
  expect(await disagreements(scenario)).toEqual([]);
}

export async function agreesOnAll(arbitrary: fc.Arbitrary<Scenario>, runs: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(arbitrary, async (scenario) => {
      const diffs = await disagreements(scenario);
      if (diffs.length > 0) throw new Error(`${diffs.join("\n")}\n\nAs a test (paste into ${"test/integration/contract-fuzz.test.ts"}):\n${asTest(scenario, diffs)}`);
    }),
    // VITE_CONTRACT_FUZZ_SHRINK=0 (npm run fuzz -- --no-shrink) reports the first failing case as found.
    { numRuns: runs, seed: SEED, endOnFailure: env.VITE_CONTRACT_FUZZ_SHRINK === "0" },
  );
}
