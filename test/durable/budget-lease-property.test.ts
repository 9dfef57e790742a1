// A property test of budget leases: several isolates (the real
// BudgetLeaseBook of src/engine/budget-lease-book.ts) over one real quota
// object (its lease RPCs, src/durable/budget-lease-store.ts), with the
// network as a queue of calls delivered in random order, under random
// interleavings of spends, reports, refunds, lease ends, period rollovers,
// top-ups and isolates that vanish with their leases and calls in flight.
//
// After every step: the object's `used` never passes the amount (no debts
// here: an admitted spend always came from a grant) and never falls below
// the true spend of the period (what requests took, less what they gave
// back). At the end, once every live isolate has closed its leases and
// every call is delivered, `used` exceeds the true spend by at most what the
// vanished isolates held: the units of their leases and of the grants and
// closes that were lost with them (the published over-statement bound).
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { expect, it } from "vitest";
import type { BudgetLeaseResult } from "../../src/durable/budget-lease-types";
import type { TenantQuota } from "../../src/durable/tenant-quota";
import { periodStartMs } from "../../src/engine/budget-period";
import { type BudgetAsk, BudgetLeaseBook, type LeaseDebit, type SlotSpend } from "../../src/engine/budget-lease-book";
import { unique } from "../helpers";

const LEASE_MS = 10_000;
const ISOLATES = 3;

type Op =
  | { op: "spend"; iso: number; units: number }
  | { op: "deliver"; pick: number }
  | { op: "report"; iso: number }
  | { op: "refund"; iso: number; pick: number; units: number }
  | { op: "advance"; ms: number }
  | { op: "raise"; units: number }
  | { op: "vanish"; iso: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ op: fc.constant("spend" as const), iso: fc.nat(ISOLATES - 1), units: fc.integer({ min: 0, max: 4 }) }) },
  { weight: 8, arbitrary: fc.record({ op: fc.constant("deliver" as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("report" as const), iso: fc.nat(ISOLATES - 1) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("refund" as const), iso: fc.nat(ISOLATES - 1), pick: fc.nat(), units: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("advance" as const), ms: fc.oneof(fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 0, max: 40_000 }), fc.integer({ min: 0, max: 40 * 86_400_000 })) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("raise" as const), units: fc.integer({ min: 1, max: 10 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("vanish" as const), iso: fc.nat(ISOLATES - 1) }) },
);

interface Iso {
  book: BudgetLeaseBook;
  alive: boolean;
  debits: LeaseDebit[];
}

/** A call on the wire: an ask (with the spends waiting for it) or a report/close, from one isolate. */
interface Call {
  iso: Iso;
  ask: BudgetAsk;
  waiting: SlotSpend[];
}

it("never admits past the amount nor lets `used` fall below the true spend, and over-states only by what vanished isolates held", async () => {
  const stub = env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(unique("lease-property")));
  let granted = 0;
  await runInDurableObject(stub, async (instance: TenantQuota) => {
    fc.assert(
      fc.property(fc.boolean(), fc.integer({ min: 0, max: 12 }), fc.array(opArb, { minLength: 10, maxLength: 120 }), (credits, amount0, ops) => {
        const owner = `tenant:${unique("l")}`;
        const object = `tenant:${owner.slice("tenant:".length)}`;
        const period = credits ? "none" : "month";
        let now = Date.parse("2027-01-31T23:59:50Z");
        let amount = amount0;
        instance.budgetPut({ owner, category: "request", amount, period, nowMs: now });
        const startOf = (t: number) => (credits ? 0 : periodStartMs("month", t));
        // What requests took, less what they gave back, per period start; and what vanished isolates may leave counted.
        const spent = new Map<number, number>();
        const lost = new Map<number, number>();
        const add = (m: Map<number, number>, k: number | null, v: number) => m.set(k ?? 0, (m.get(k ?? 0) ?? 0) + v);
        const grants = new Map<string, { units: number; start: number }>();
        const isos: Iso[] = Array.from({ length: ISOLATES }, () => ({ book: new BudgetLeaseBook({ leaseMs: LEASE_MS, maxSlots: 8 }), alive: true, debits: [] }));
        const wire: Call[] = [];

        const send = (call: Call) => {
          const { iso, ask } = call;
          const result: BudgetLeaseResult = instance.budgetLease({
            items: ask.items.map((item) => ({ owner, category: "request", need: item.need, waiting: item.waiting, extra: item.extra, lease: item.lease })),
            nowMs: ask.askedAtMs,
            leaseMs: LEASE_MS,
          });
          result.answers.forEach((a, i) => {
            if (a.status === "granted") {
              grants.set(a.leaseId, { units: a.units, start: a.budget.periodStartMs ?? 0 });
              granted += 1;
              // Its isolate is gone: the grant is lost with it.
              if (!iso.alive) add(lost, a.budget.periodStartMs, a.units);
            }
            const lease = ask.items[i]!.lease;
            // A close that is delivered for a vanished isolate still gives back what it says.
            void lease;
          });
          if (!iso.alive) return;
          iso.book.answered(ask, result.answers, now);
          for (const w of call.waiting) w.slot.waiting -= w.units;
          for (const w of call.waiting) {
            const taken = iso.book.take([w], now);
            if (taken.kind === "taken") {
              for (const d of taken.debits) add(spent, d.periodStartMs, d.units);
              iso.debits.push(...taken.debits);
            }
          }
        };

        const check = () => {
          const b = instance.budgetList(owner, now)[0]!;
          const mine = spent.get(startOf(now)) ?? 0;
          expect(b.used).toBeLessThanOrEqual(b.amount);
          expect(b.used).toBeGreaterThanOrEqual(mine);
        };

        for (const o of ops) {
          if (o.op === "advance") {
            // A call is answered (or lost) within 30 s: the runtime gives a request's background work no longer.
            if (o.ms > 30_000) while (wire.length > 0) send(wire.shift()!);
            // A live isolate closes its ended leases with its next budgeted request: one comes before the clock moves on.
            const at = now + Math.min(o.ms, LEASE_MS);
            for (const iso of isos) if (iso.alive) for (const ask of iso.book.reportsDue(at).values()) send({ iso, ask, waiting: [] });
            now += o.ms;
          }
          else if (o.op === "raise") {
            amount += o.units;
            if (credits) instance.budgetTopUp({ owner, category: "request", amount: o.units, nowMs: now });
            else instance.budgetPut({ owner, category: "request", amount, period, nowMs: now });
          } else if (o.op === "deliver") {
            if (wire.length > 0) send(wire.splice(o.pick % wire.length, 1)[0]!);
          } else {
            const iso = isos[o.iso]!;
            if (!iso.alive) continue;
            const slot = iso.book.slot(object, owner, "request", now);
            if (o.op === "spend") {
              const spend = { slot, units: o.units };
              const taken = iso.book.take([spend], now);
              if (taken.kind === "taken") {
                for (const d of taken.debits) add(spent, d.periodStartMs, d.units);
                iso.debits.push(...taken.debits);
              } else {
                slot.waiting += o.units;
                wire.push({ iso, ask: iso.book.askFor(object, [spend], now), waiting: [spend] });
              }
            } else if (o.op === "report") {
              for (const ask of iso.book.reportsDue(now).values()) wire.push({ iso, ask, waiting: [] });
            } else if (o.op === "refund") {
              if (iso.debits.length === 0) continue;
              const debit = iso.debits[o.pick % iso.debits.length]!;
              const units = Math.min(o.units, debit.units);
              if (units === 0) continue;
              debit.units -= units;
              add(spent, debit.periodStartMs, -units);
              if (!iso.book.giveBack(debit, units, now)) instance.budgetAdjust({ adjustments: [{ owner, category: "request", units: -units, periodStartMs: debit.periodStartMs }], nowMs: now });
            } else {
              // Gone with its leases (their unspent and unreported units) and its calls in flight.
              iso.alive = false;
              // Its closes not yet sent (an ended lease, a grant that came late) are lost: what they would give back stays counted.
              for (const ask of iso.book.reportsDue(now).values()) {
                for (const item of ask.items) {
                  const g = item.lease !== null && item.lease.close ? grants.get(item.lease.id) : undefined;
                  if (g !== undefined) add(lost, g.start, g.units - item.lease!.spent);
                }
              }
              if (slot.leaseId !== null) add(lost, slot.periodStartMs, slot.units + slot.spent);
              for (const call of wire) {
                if (call.iso !== iso) continue;
                for (const item of call.ask.items) {
                  if (item.lease === null || !item.lease.close) continue;
                  const g = grants.get(item.lease.id);
                  if (g !== undefined) add(lost, g.start, g.units);
                }
              }
              for (let i = wire.length - 1; i >= 0; i--) if (wire[i]!.iso === iso && wire[i]!.ask.items.every((item) => item.need === null)) wire.splice(i, 1);
            }
          }
          check();
        }
        // The end: every call delivered, every live isolate's leases closed.
        while (wire.length > 0) send(wire.shift()!);
        for (const iso of isos) {
          if (!iso.alive) continue;
          iso.book.dropAll();
          for (const ask of iso.book.reportsDue(now).values()) send({ iso, ask, waiting: [] });
        }
        check();
        const b = instance.budgetList(owner, now)[0]!;
        const start = startOf(now);
        expect(b.used - (spent.get(start) ?? 0)).toBeLessThanOrEqual(lost.get(start) ?? 0);
        expect(b.leased).toBeLessThanOrEqual(lost.get(start) ?? 0);
      }),
      { numRuns: 150 },
    );
  });
  // The runs granted leases (the property did not pass by refusing everything).
  expect(granted).toBeGreaterThan(100);
});
