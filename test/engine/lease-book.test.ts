import { describe, expect, it } from "vitest";
import { LeaseBook } from "../../src/engine/lease-book";
import { boundUnits, type LeaseGroup, leaseMsFor, type LeaseRef, type Short, withinBound } from "../../src/engine/lease-types";
import { compileLimit } from "../../src/engine/limit";

const T0 = 1_700_000_000_000;
const PER_MINUTE = compileLimit({ count: 600, window_s: 60, scope: "global" }); // L = 1200 ms
const PER_SECOND = compileLimit({ count: 10, window_s: 1, scope: "global" }); // L = 50 ms (the minimum)

function book(maxGroups = 100) {
  return new LeaseBook({ maxOvershoot: 0.02, minLeaseMs: 50, maxGroups, ledgerRetryMs: 1000 });
}

function refsOf(b: LeaseBook, subject: string, costs: [typeof PER_MINUTE, number][], nowMs: number): LeaseRef[] {
  const group = b.group(subject, "request", nowMs);
  return costs.map(([limit, cost]) => ({ group, slot: b.slot(group, limit, nowMs), cost, chargeIndex: 0 }));
}

function firstShort(shorts: ReadonlyMap<LeaseGroup, Short[]>): [LeaseGroup, Short[]] {
  const first = [...shorts][0];
  if (first === undefined) throw new Error("no short group");
  return first;
}

/** Grants every short slot `units` (the ledger's answer), as the lease layer would. */
function grantShorts(b: LeaseBook, refs: LeaseRef[], units: number, nowMs: number) {
  const taken = b.take(refs, nowMs);
  if (taken.kind !== "short") throw new Error(`expected short, got ${taken.kind}`);
  const [group, shorts] = firstShort(taken.shorts);
  const ask = b.askFor(group, shorts, nowMs);
  b.answered(ask, { status: "granted", grants: ask.items.map(() => ({ units, remaining: 100, resetMs: 1000 })) }, nowMs, () => 10);
  return ask;
}

describe("lease time and the bound", () => {
  it("is max_overshoot × W, at least min_lease_ms, in whole ms", () => {
    expect(leaseMsFor(PER_MINUTE, 0.02, 50)).toBe(1200);
    expect(leaseMsFor(PER_SECOND, 0.02, 50)).toBe(50);
    expect(leaseMsFor(compileLimit({ count: 1, window_s: 3 }), 0.02, 50)).toBe(60);
  });

  it("states B + (Δ + L)·C/W: 600/min over any 10 s admits at most 600 + 100 + 12", () => {
    expect(boundUnits(PER_MINUTE, 10_000, 1200)).toBe(712);
    expect(withinBound(PER_MINUTE, 712, 10_000, 1200)).toBe(true);
    expect(withinBound(PER_MINUTE, 713, 10_000, 1200)).toBe(false);
  });
});

describe("LeaseBook", () => {
  it("spends from a live lease with no ask, and finds it short once spent or dead", () => {
    const b = book();
    const refs = refsOf(b, "key:a", [[PER_MINUTE, 1]], T0);
    grantShorts(b, refs, 3, T0);
    expect(b.take(refs, T0 + 1).kind).toBe("taken");
    expect(b.take(refs, T0 + 2).kind).toBe("taken");
    expect(b.take(refs, T0 + 1199).kind).toBe("taken");
    expect(b.take(refs, T0 + 1199).kind).toBe("short");
    grantShorts(b, refs, 3, T0 + 1200);
    // A lease lives L from the time it was asked for: at T0 + 2400 it is dead, with units left.
    expect(b.take(refs, T0 + 2400).kind).toBe("short");
  });

  it("takes from every lease of a request or from none", () => {
    const b = book();
    const both = refsOf(b, "key:b", [[PER_MINUTE, 2], [PER_SECOND, 2]], T0);
    const minute = [both[0]!];
    grantShorts(b, minute, 5, T0);
    // The per-second lease is empty: nothing is taken from the per-minute one.
    expect(b.take(both, T0).kind).toBe("short");
    expect(both[0]!.slot.units).toBe(5);
    grantShorts(b, [both[1]!], 3, T0);
    expect(b.take(both, T0).kind).toBe("taken");
    expect([both[0]!.slot.units, both[1]!.slot.units]).toEqual([3, 1]);
  });

  it("keeps a refusal, for needs at least as large, until the ledger's delay or the hold runs out", () => {
    const b = book();
    const refs = refsOf(b, "key:c", [[PER_MINUTE, 2]], T0);
    const taken = b.take(refs, T0);
    if (taken.kind !== "short") throw new Error("short");
    const [group, shorts] = firstShort(taken.shorts);
    const ask = b.askFor(group, shorts, T0);
    b.answered(ask, { status: "denied", index: 0, retryAfterMs: 700, remaining: 0, resetMs: 60_000 }, T0 + 5, () => 300);
    expect(b.take(refs, T0 + 100)).toMatchObject({ kind: "refused", retryAfterMs: 600 });
    expect(b.take(refsOf(b, "key:c", [[PER_MINUTE, 1]], T0 + 100), T0 + 100).kind).toBe("short");
    expect(b.take(refs, T0 + 700).kind).toBe("short");
  });

  it("gives a dead lease's units back with the next ask, while they still credit something", () => {
    const b = book();
    const refs = refsOf(b, "key:d", [[PER_MINUTE, 1]], T0);
    grantShorts(b, refs, 10, T0);
    expect(b.take(refs, T0).kind).toBe("taken");
    const taken = b.take(refsOf(b, "key:d", [[PER_MINUTE, 50]], T0 + 10), T0 + 10);
    if (taken.kind !== "short") throw new Error("short");
    const [group, shorts] = firstShort(taken.shorts);
    const ask = b.askFor(group, shorts, T0 + 10);
    expect(ask.items[0]).toMatchObject({ need: 50, returning: 9, returningGrantedAtMs: T0 });
    expect(refs[0]!.slot.units).toBe(0);
  });

  it("queues the units of leases that died unspent, and of groups dropped for room", () => {
    const b = book(1);
    const refs = refsOf(b, "key:e", [[PER_MINUTE, 1]], T0);
    grantShorts(b, refs, 400, T0);
    // 400 units are 40 s of this limit: still worth giving back 1.2 s later.
    b.sweep(T0 + 1200);
    expect(b.takeReturns()).toEqual([{ subject: "key:e", category: "request", limit: PER_MINUTE, units: 400, grantedAtMs: T0 }]);
    const again = refsOf(b, "key:e", [[PER_MINUTE, 1]], T0 + 2000);
    grantShorts(b, again, 5, T0 + 2000);
    refsOf(b, "key:f", [[PER_MINUTE, 1]], T0 + 2001);
    expect(b.takeReturns()).toEqual([{ subject: "key:e", category: "request", limit: PER_MINUTE, units: 5, grantedAtMs: T0 + 2000 }]);
    expect(b.size).toBe(1);
  });

  it("sizes a lease from recent demand: the single exact spend at first, more once the demand is steady", () => {
    const b = book();
    const refs = refsOf(b, "key:g", [[PER_MINUTE, 1]], T0);
    const first = grantShorts(b, refs, 1, T0);
    expect(first.items[0]!.want).toBe(1);
    // 100 requests in every 1.2 s window for a while: ~100 expected per lease, so the ask wants 1 + 100 − 2·10.
    let t = T0;
    for (let w = 0; w < 12; w++) {
      for (let i = 0; i < 100; i++) {
        t = T0 + w * 1200 + i * 12;
        if (b.take(refs, t).kind !== "taken") grantShorts(b, refs, 1000, t);
        else continue;
        expect(b.take(refs, t).kind).toBe("taken");
      }
    }
    const taken = b.take(refsOf(b, "key:g", [[PER_MINUTE, 2000]], t + 1), t + 1);
    if (taken.kind !== "short") throw new Error("short");
    const [group, shorts] = firstShort(taken.shorts);
    expect(b.askFor(group, shorts, t + 1).items[0]!.want).toBeGreaterThanOrEqual(2000);
    const sized = b.askFor(group, [{ slot: refs[0]!.slot, need: 1 }], t + 1).items[0]!.want;
    expect(sized).toBeGreaterThan(70);
    expect(sized).toBeLessThanOrEqual(100);
  });
});

describe("an answer that lands after a newer one", () => {
  it("keeps the newer lease and queues the older grant's units to go back", () => {
    const b = book();
    const refs = refsOf(b, "key:late", [[PER_MINUTE, 1]], T0);
    const taken = b.take(refs, T0);
    if (taken.kind !== "short") throw new Error("expected short");
    const [group, shorts] = firstShort(taken.shorts);
    // An ask whose flight outlived its age guard, and a newer one sent meanwhile.
    const old = b.askFor(group, shorts, T0);
    const newer = b.askFor(group, shorts, T0 + 30_000);
    b.answered(newer, { status: "granted", grants: [{ units: 2, remaining: 100, resetMs: 1000 }] }, T0 + 30_001, () => 10);
    b.answered(old, { status: "granted", grants: [{ units: 5, remaining: 100, resetMs: 1000 }] }, T0 + 30_002, () => 10);
    expect(b.takeReturns()).toEqual([{ subject: "key:late", category: "request", limit: PER_MINUTE, units: 5, grantedAtMs: T0 }]);
    // The newer lease's two units are spendable; a late refusal does not undo them either.
    b.answered(old, { status: "denied", index: 0, retryAfterMs: 60_000, remaining: 0, resetMs: 60_000 }, T0 + 30_003, () => 10);
    expect(b.take(refs, T0 + 30_004).kind).toBe("taken");
    expect(b.take(refs, T0 + 30_005).kind).toBe("taken");
    expect(b.take(refs, T0 + 30_006).kind).toBe("short");
  });
});
