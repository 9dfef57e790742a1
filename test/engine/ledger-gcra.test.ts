import { describe, expect, it } from "vitest";
import { chargeDebtOn, EMPTY_STATE, giveBack, grantLease, refundOn, standingAt, stateAt } from "../../src/engine/ledger-gcra";
import { compileLimit } from "../../src/engine/limit";

// 10 per second, burst 10: T = 100 ms. 3 per second: T = 1000/3 ms, metered in units of 1/3 ms.
const TEN = compileLimit({ count: 10, window_s: 1, scope: "global" });
const THREE = compileLimit({ count: 3, window_s: 1, scope: "global" });
const T0 = 1_700_000_000_000;

describe("grantLease", () => {
  it("grants what is wanted while the room after the need is at least twice the extra", () => {
    const out = grantLease(TEN, EMPTY_STATE, 1, 4, T0);
    expect(out).toMatchObject({ granted: true, units: 4, standing: { remaining: 6, resetMs: 400 } });
  });

  it("shrinks a lease to half the room left after the need, down to the need alone", () => {
    let state = EMPTY_STATE;
    const sizes: number[] = [];
    for (let i = 0; i < 6; i++) {
      const out = grantLease(TEN, state, 1, 10, T0);
      if (!out.granted) break;
      sizes.push(out.units);
      state = out.state;
    }
    // room 10 → 1 + 4; room 5 → 1 + 2; room 2 → 1 + 0; room 1 → 1; then nothing fits.
    expect(sizes).toEqual([5, 3, 1, 1]);
  });

  it("refuses a need that does not fit with the exact delay, and grants it that many ms later", () => {
    const full = grantLease(TEN, EMPTY_STATE, 10, 10, T0);
    if (!full.granted) throw new Error("the first grant fits");
    const refused = grantLease(TEN, full.state, 2, 2, T0 + 50);
    expect(refused).toEqual({ granted: false, retryAfterMs: 150, standing: { remaining: 0, resetMs: 950 } });
    expect(grantLease(TEN, full.state, 2, 2, T0 + 199).granted).toBe(false);
    expect(grantLease(TEN, full.state, 2, 2, T0 + 200)).toMatchObject({ granted: true, units: 2 });
  });

  it("keeps fractional intervals exact: 3 per second grants the third unit at 333⅓ ms, so at 334 ms", () => {
    const full = grantLease(THREE, EMPTY_STATE, 3, 3, T0);
    if (!full.granted) throw new Error("the first grant fits");
    expect(grantLease(THREE, full.state, 1, 1, T0 + 333)).toMatchObject({ granted: false, retryAfterMs: 1 });
    expect(grantLease(THREE, full.state, 1, 1, T0 + 334)).toMatchObject({ granted: true, units: 1 });
  });

  it("grants an oversize need whole once everything is earned back, never padded", () => {
    const small = compileLimit({ count: 2, window_s: 1, scope: "global" });
    expect(grantLease(small, EMPTY_STATE, 5, 9, T0)).toMatchObject({ granted: true, units: 5, standing: { remaining: 0, resetMs: 2500 } });
    const busy = stateAt(small, 1, T0);
    expect(grantLease(small, busy, 5, 5, T0)).toMatchObject({ granted: false, retryAfterMs: 1 });
  });
});

describe("giveBack", () => {
  it("credits units·T less the time since the grant", () => {
    const lease = grantLease(TEN, EMPTY_STATE, 5, 5, T0);
    if (!lease.granted) throw new Error("fits");
    // 3 unspent units are 300 ms; 120 ms went by: 180 ms back.
    const back = giveBack(TEN, lease.state, 3, T0, T0 + 120);
    expect(back.creditedUnits).toBe(180);
    expect(standingAt(TEN, back.state, T0 + 120)).toEqual({ remaining: 8, resetMs: 200 });
  });

  it("credits nothing once the units' time has passed, and runs the time to the latest charge the state has seen", () => {
    const lease = grantLease(TEN, EMPTY_STATE, 8, 8, T0);
    if (!lease.granted) throw new Error("fits");
    expect(giveBack(TEN, lease.state, 2, T0, T0 + 200).creditedUnits).toBe(0);
    // Given back at +50 ms but the state was charged at +150 ms by another isolate: 200 − 150.
    expect(giveBack(TEN, lease.state, 2, T0, T0 + 50, T0 + 150).creditedUnits).toBe(50);
  });

  it("never credits below now, and keeps TAT = now for calls stamped earlier", () => {
    const lease = grantLease(TEN, EMPTY_STATE, 1, 1, T0);
    if (!lease.granted) throw new Error("fits");
    const back = giveBack(TEN, lease.state, 1, T0, T0 + 40);
    expect(back.creditedUnits).toBe(60);
    expect(back.state).toEqual({ tatCeilMs: T0 + 40, deficitUnits: 0 });
    expect(standingAt(TEN, back.state, T0 + 20)).toEqual({ remaining: 9, resetMs: 20 });
  });
});

describe("response-priced settlement on a ledger state", () => {
  it("charges a debt past the burst and refunds never before now", () => {
    const debt = chargeDebtOn(TEN, EMPTY_STATE, 25, T0);
    expect(standingAt(TEN, debt, T0)).toEqual({ remaining: 0, resetMs: 2500 });
    expect(grantLease(TEN, debt, 1, 1, T0 + 1600)).toMatchObject({ granted: true });
    expect(grantLease(TEN, debt, 1, 1, T0 + 1599)).toMatchObject({ granted: false, retryAfterMs: 1 });
    expect(standingAt(TEN, refundOn(TEN, debt, 30, T0), T0)).toEqual({ remaining: 10, resetMs: 0 });
    expect(standingAt(TEN, refundOn(TEN, debt, 5, T0), T0)).toEqual({ remaining: 0, resetMs: 2000 });
  });
});
