// The isolate's book of budget leases, on its own: what a request takes, what
// an ask says, how answers (late ones too) apply, and when a lease is reported
// and closed. The book against a real quota object, under random
// interleavings: test/durable/budget-lease-property.test.ts.
import { describe, expect, it } from "vitest";
import { type BudgetAnswer, type BudgetFigures, BudgetLeaseBook, REPORT_EVERY_MS } from "../../src/engine/budget-lease-book";

const T0 = 1_800_000_000_000;
const LEASE_MS = 10_000;

function figures(used: number, amount = 100): BudgetFigures {
  return { owner: "tenant:t", category: "request", period: "month", amount, used, remaining: Math.max(0, amount - used), thresholds: [1], periodStartMs: T0 - 1000, resetsAtMs: T0 + 86_400_000 };
}

function granted(leaseId: string, units: number, expiresAtMs = T0 + LEASE_MS): BudgetAnswer {
  return { status: "granted", leaseId, units, expiresAtMs, budget: figures(units) };
}

function book() {
  const b = new BudgetLeaseBook({ leaseMs: LEASE_MS, maxSlots: 4 });
  return { b, slot: b.slot("tenant:t", "tenant:t", "request", T0) };
}

describe("BudgetLeaseBook", () => {
  it("takes from a live lease with no ask, all or nothing across slots", () => {
    const { b, slot } = book();
    const other = b.slot("org:o", "org:o", "request", T0);
    expect(b.take([{ slot, units: 1 }], T0).kind).toBe("short");
    b.answered(b.askFor("tenant:t", [{ slot, units: 1 }], T0), [granted("a", 3)], T0);
    const both = b.take([{ slot, units: 1 }, { slot: other, units: 1 }], T0);
    expect(both.kind).toBe("short");
    // Nothing was taken from the tenant's lease by the refused pair.
    expect(slot.units).toBe(3);
    const taken = b.take([{ slot, units: 2 }], T0 + 1);
    expect(taken.kind).toBe("taken");
    expect(slot.units).toBe(1);
    // Two spends on one slot add up: 1 + 1 does not fit in the 1 left.
    expect(b.take([{ slot, units: 1 }, { slot, units: 1 }], T0 + 2).kind).toBe("short");
  });

  it("needs a unit left for a spend of 0 (a zero reserve), and takes none", () => {
    const { b, slot } = book();
    b.answered(b.askFor("tenant:t", [{ slot, units: 0 }], T0), [granted("a", 1)], T0);
    expect(b.take([{ slot, units: 0 }], T0).kind).toBe("taken");
    expect(slot.units).toBe(1);
    slot.units = 0;
    expect(b.take([{ slot, units: 0 }], T0).kind).toBe("short");
  });

  it("spends nothing from a lease once it has ended", () => {
    const { b, slot } = book();
    b.answered(b.askFor("tenant:t", [{ slot, units: 1 }], T0), [granted("a", 5, T0 + 100)], T0);
    expect(b.take([{ slot, units: 1 }], T0 + 99).kind).toBe("taken");
    expect(b.take([{ slot, units: 1 }], T0 + 100).kind).toBe("short");
  });

  it("asks for what waits and, as demand grows, for what was taken in the window so far", () => {
    const { b, slot } = book();
    slot.waiting = 4;
    const first = b.askFor("tenant:t", [{ slot, units: 1 }], T0);
    expect(first.items[0]).toMatchObject({ need: 1, waiting: 4, extra: 0, lease: null });
    b.answered(first, [granted("a", 4)], T0);
    slot.waiting = 0;
    for (let i = 0; i < 4; i++) b.take([{ slot, units: 1 }], T0 + i);
    // The next ask closes the spent lease (4 of 4 spent) and asks for 4 more beyond the need: demand doubles the lease.
    const second = b.askFor("tenant:t", [{ slot, units: 1 }], T0 + 5);
    expect(second.items[0]).toMatchObject({ need: 1, waiting: 1, extra: 4, lease: { id: "a", spent: 4, close: true } });
  });

  it("keeps the newer lease when an older ask is answered late, and closes the late grant", () => {
    const { b, slot } = book();
    const older = b.askFor("tenant:t", [{ slot, units: 1 }], T0);
    const newer = b.askFor("tenant:t", [{ slot, units: 1 }], T0 + 10);
    b.answered(newer, [granted("new", 2, T0 + 10 + LEASE_MS)], T0 + 20);
    b.answered(older, [granted("old", 3)], T0 + 30);
    expect(slot.leaseId).toBe("new");
    const due = b.reportsDue(T0 + 40).get("tenant:t")!;
    expect(due.items.map((i) => i.lease)).toContainEqual({ id: "old", spent: 0, close: true });
  });

  it("closes a lease that ended before a new one replaces it", () => {
    const { b, slot } = book();
    b.answered(b.askFor("tenant:t", [{ slot, units: 1 }], T0), [granted("a", 3, T0 + 100)], T0);
    b.take([{ slot, units: 1 }], T0 + 1);
    // The lease ends; an ask sent before its end comes back after it and replaces it.
    const ask = { object: "tenant:t", items: [{ slot, need: 1, waiting: 1, extra: 0, lease: null }], askedAtMs: T0 + 50 };
    b.answered(ask, [granted("b", 1, T0 + 50 + LEASE_MS)], T0 + 200);
    expect(slot.leaseId).toBe("b");
    const due = b.reportsDue(T0 + 201).get("tenant:t")!;
    expect(due.items.map((i) => i.lease)).toContainEqual({ id: "a", spent: 1, close: true });
  });

  it(`reports what was spent at most every ${REPORT_EVERY_MS} ms while spending, and closes a lease once it has ended`, () => {
    const { b, slot } = book();
    b.answered(b.askFor("tenant:t", [{ slot, units: 1 }], T0), [granted("a", 10)], T0);
    b.take([{ slot, units: 2 }], T0 + 10);
    expect(b.reportsDue(T0 + REPORT_EVERY_MS - 1).size).toBe(0);
    expect(b.reportsDue(T0 + REPORT_EVERY_MS).get("tenant:t")!.items.map((i) => i.lease)).toEqual([{ id: "a", spent: 2, close: false }]);
    // Nothing new spent: no report.
    expect(b.reportsDue(T0 + 3 * REPORT_EVERY_MS).size).toBe(0);
    expect(b.reportsDue(T0 + LEASE_MS).get("tenant:t")!.items.map((i) => i.lease)).toEqual([{ id: "a", spent: 2, close: true }]);
    expect(slot.leaseId).toBeNull();
  });

  it("gives units back to the lease a request took them from while it lives, and not after", () => {
    const { b, slot } = book();
    b.answered(b.askFor("tenant:t", [{ slot, units: 1 }], T0), [granted("a", 5)], T0);
    const taken = b.take([{ slot, units: 3 }], T0);
    if (taken.kind !== "taken") throw new Error("not taken");
    const debit = taken.debits[0]!;
    expect(b.giveBack(debit, 2, T0 + 1)).toBe(true);
    expect(slot).toMatchObject({ units: 4, spent: 1 });
    expect(b.takeMore(debit, 10, T0 + 2)).toBe(4);
    expect(b.giveBack(debit, 1, T0 + LEASE_MS)).toBe(false);
  });

  it("remembers a refusal and passes spends of a budget the object says is gone", () => {
    const { b, slot } = book();
    const ask = b.askFor("tenant:t", [{ slot, units: 1 }], T0);
    expect(b.answered(ask, [{ status: "exhausted", budget: figures(100) }], T0)).toMatchObject({ used: 100 });
    expect(slot.refusedAtMs).toBe(T0);
    b.answered(b.askFor("tenant:t", [{ slot, units: 1 }], T0 + 1), [{ status: "none" }], T0 + 1);
    expect(b.take([{ slot, units: 1 }], T0 + 2)).toEqual({ kind: "taken", debits: [] });
  });
});
