// The contract fuzz with per-policy shadow: scenarios like those of
// contract-fuzz.test.ts with a third of their limits and budgets marked
// `shadow: true` (policyShadowScenarioArb). A file of its own so that the
// workers project runs it beside the other. `npm run fuzz` runs both.
import { describe, it } from "vitest";
import { policyShadowScenarioArb } from "./contract-fuzz-cases";
import { agreesOnAll, SEED, SHADOW_RUNS } from "./contract-fuzz-run";

describe("the gateway against the contract's model, with shadow policies", () => {
  it(`agrees on ${SHADOW_RUNS} random configs with shadow limits and budgets among them (seed ${SEED})`, { timeout: 60 * 60_000 }, async () => {
    await agreesOnAll(policyShadowScenarioArb, SHADOW_RUNS);
  });
});
