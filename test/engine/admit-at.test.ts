import { describe, expect, it } from "vitest";
import { admitAt, type Charge } from "../../src/engine/gcra";
import { compileLimits } from "../../src/engine/limit";
import { LimiterTable } from "../../src/engine/limiter-table";
import { admit } from "../../src/engine/gcra";

const limits = compileLimits([{ count: 1, window_s: 10 }]);
const charge = (i: number): Charge[] => [{ subject: `ip:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, category: "request", limits, cost: 1 }];

describe("admitAt", () => {
  it("decides as of the later instant: a spend held until it fits is admitted there, and the next is given the following instant", () => {
    const table = new LimiterTable(1, { seed: 7 });
    expect(admit(table, charge(1), 0).allowed).toBe(true);
    const denied = admit(table, charge(1), 1);
    expect(denied).toMatchObject({ allowed: false, retryAfterMs: 9999 });
    expect(admitAt(table, charge(1), 1 + denied.retryAfterMs, 1).allowed).toBe(true);
    expect(admit(table, charge(1), 2)).toMatchObject({ allowed: false, retryAfterMs: 19_998 });
  });

  it("never takes another key's state, live now but earned back before the later instant, for a free slot", () => {
    // 10,000 keys each spend their 1 per 10 s at 0; at 1 the even ones hold a second spend until 10,000.
    const table = new LimiterTable(16, { seed: 1 });
    for (let i = 0; i < 10_000; i++) expect(admit(table, charge(i), 0).allowed).toBe(true);
    for (let i = 0; i < 10_000; i += 2) expect(admitAt(table, charge(i), 10_000, 1).allowed).toBe(true);
    // At 2 every key is still charged what it spent: the odd ones wait until 10,000, the even ones until 20,000.
    const wrong: number[] = [];
    for (let i = 0; i < 10_000; i++) if (admit(table, charge(i), 2).retryAfterMs !== (i % 2 === 0 ? 19_998 : 9998)) wrong.push(i);
    expect(wrong).toEqual([]);
  });
});
