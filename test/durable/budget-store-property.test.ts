// A property test of the budget store: random interleavings of reserves
// (forced ones as shadow mode sends them, retried ones), settlements (refund,
// debt, replays, unknown ids) and clock moves across month boundaries,
// against a model of one month budget. After every step the object's `used`
// must equal the model's, every decision must match, and `used` may pass
// `amount` only by the debts and forced spends of the current period.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { expect, it } from "vitest";
import { BUDGET_RESERVATION_RETENTION_MS } from "../../src/durable/budget-store";
import { periodStartMs } from "../../src/engine/budget-period";
import { unique } from "../helpers";

type Op =
  | { op: "reserve"; units: number; force: boolean; retry: boolean }
  | { op: "settle"; pick: number; actual: number }
  | { op: "advance"; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant("reserve" as const), units: fc.integer({ min: 0, max: 6 }), force: fc.boolean(), retry: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("settle" as const), pick: fc.nat(), actual: fc.integer({ min: 0, max: 12 }) }) },
  // Mostly seconds (a settlement from the period before, within a day, while this one spends), sometimes days.
  { weight: 1, arbitrary: fc.record({ op: fc.constant("advance" as const), ms: fc.oneof(fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: 0, max: 20 * 86_400_000 })) }) },
);

interface Reservation {
  id: string;
  units: number;
  start: number;
  atMs: number;
  settled: boolean;
  /** Pruned by a later reserve once older than BUDGET_RESERVATION_RETENTION_MS: its settlement is unknown, its reserve stands. */
  forgotten: boolean;
}

it("agrees with a model of one month budget under any interleaving", async () => {
  const stub = env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(unique("budget-property")));
  // How often the case a refund must not reach happened: a settlement below its reserve from a period already ended, while this one has spent.
  let crossPeriodRefunds = 0;
  await runInDurableObject(stub, async (instance) => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 20 }), fc.array(op, { minLength: 10, maxLength: 80 }), (amount, ops) => {
        const owner = `tenant:${unique("p")}`;
        // A second before a month ends (fast-check draws small advances often).
        let now = Date.parse("2027-01-31T23:59:59Z");
        instance.budgetPut({ owner, category: "request", amount, period: "month", nowMs: now });
        const model = { start: periodStartMs("month", now), used: 0, excess: 0 };
        const reservations: Reservation[] = [];
        const roll = () => {
          const s = periodStartMs("month", now);
          if (s > model.start) Object.assign(model, { start: s, used: 0, excess: 0 });
        };
        for (const o of ops) {
          if (o.op === "advance") {
            now += o.ms;
            continue;
          }
          if (o.op === "reserve") {
            const last = reservations[reservations.length - 1];
            if (o.retry && last !== undefined && !last.settled && !last.forgotten) {
              // A retried reserve (its first answer lost): the same reservation, nothing more spent.
              const again = instance.budgetReserve({ reservationId: last.id, spends: [{ owner, category: "request", units: last.units }], nowMs: now });
              expect(again.status).toBe("reserved");
            } else {
              roll();
              for (const r of reservations) if (r.atMs < now - BUDGET_RESERVATION_RETENTION_MS) r.forgotten = true;
              const id = crypto.randomUUID();
              // A spend of 0 (a response-priced reserve of 0) fits only while something is left.
              const fits = o.units === 0 ? model.used < amount : model.used + o.units <= amount;
              const r = instance.budgetReserve({ reservationId: id, spends: [{ owner, category: "request", units: o.units }], nowMs: now, force: o.force });
              expect(r.status).toBe(fits || o.force ? "reserved" : "exhausted");
              if (fits || o.force) {
                if (!fits) model.excess += o.units;
                model.used += o.units;
                reservations.push({ id, units: o.units, start: model.start, atMs: now, settled: false, forgotten: false });
              }
            }
          } else {
            const target = reservations.length === 0 ? null : reservations[o.pick % reservations.length]!;
            const id = target?.id ?? crypto.randomUUID();
            const result = instance.budgetSettle({ reservationId: id, actual: [{ category: "request", units: o.actual }], nowMs: now });
            // A settled reservation is deleted: a replay is unknown too, and moves nothing.
            if (target === null || target.forgotten || target.settled) expect(result.status).toBe("unknown");
            else {
              expect(result.status).toBe("settled");
              roll();
              if (o.actual > target.units) {
                model.used += o.actual - target.units;
                model.excess += o.actual - target.units;
              } else if (target.start === model.start) model.used -= Math.min(target.units - o.actual, model.used);
              else if (o.actual < target.units && model.used > 0) crossPeriodRefunds += 1;
              target.settled = true;
            }
          }
          roll();
          const [state] = instance.budgetList(owner, now);
          expect(state!.used).toBe(model.used);
          expect(state!.used).toBeLessThanOrEqual(amount + model.excess);
        }
      }),
      { numRuns: 400, seed: 25 },
    );
  });
  expect(crossPeriodRefunds).toBeGreaterThan(0);
});
