import { describe, expect, it } from "vitest";
import { admit, type Charge, type Decision } from "../../src/engine/gcra";
import { compileLimit, compileLimits } from "../../src/engine/limit";
import { LimiterTable } from "../../src/engine/limiter-table";
import { rateLimitHeaders, retryAfterSeconds } from "../../src/engine/rate-limit-headers";

const SUBJECT = "ip:203.0.113.7";

describe("rateLimitHeaders", () => {
  it("gives the draft-11 fields and the legacy ones for a known allowed decision", () => {
    const limit = compileLimit({ count: 6000, window_s: 60 });
    const charges: Charge[] = [{ subject: SUBJECT, category: "request", limits: [limit], cost: 1 }];
    const decision: Decision = { allowed: true, retryAfterMs: 0, deniedChargeIndex: -1, tightest: { chargeIndex: 0, limit, remaining: 5999, resetMs: 10 } };
    expect(rateLimitHeaders(decision, charges)).toEqual([
      ["RateLimit-Policy", '"request-ip-60s";q=6000;w=60'],
      ["RateLimit", '"request-ip-60s";r=5999;t=1'],
      ["X-RateLimit-Limit", "6000"],
      ["X-RateLimit-Remaining", "5999"],
      ["X-RateLimit-Reset", "1"],
    ]);
  });

  it("reports the count per window as the limit in both families and names the burst in a vendor parameter", () => {
    const table = new LimiterTable(1, { seed: 1 });
    const charges: Charge[] = [
      { subject: "key:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", category: "request", limits: compileLimits([{ count: 1000, window_s: 1, burst: 2000 }]), cost: 1 },
      { subject: "tenant:acme", category: "request", limits: compileLimits([{ count: 3, window_s: 1 }]), cost: 1 },
    ];
    for (let i = 0; i < 3; i++) admit(table, charges, 0);
    const denied = admit(table, charges, 0);
    expect(denied).toMatchObject({ allowed: false, retryAfterMs: 334, deniedChargeIndex: 1 });
    expect(rateLimitHeaders(denied, charges)).toEqual([
      ["RateLimit-Policy", '"request-tenant-1s";q=3;w=1'],
      ["RateLimit", '"request-tenant-1s";r=0;t=1'],
      ["X-RateLimit-Limit", "3"],
      ["X-RateLimit-Remaining", "0"],
      ["X-RateLimit-Reset", "1"],
    ]);
    const keyOnly = admit(table, [charges[0]!], 0);
    expect(rateLimitHeaders(keyOnly, [charges[0]!])[0]).toEqual(["RateLimit-Policy", '"request-key-1s";q=1000;w=1;tollgate-burst=2000']);
    // Both families describe the same limit: X-RateLimit-Limit is q, the count per window; the burst is tollgate-burst.
    expect(rateLimitHeaders(keyOnly, [charges[0]!])[2]).toEqual(["X-RateLimit-Limit", "1000"]);
    expect(rateLimitHeaders(keyOnly, [charges[0]!])[3]).toEqual(["X-RateLimit-Remaining", "1996"]);
  });

  it("leaves w out for a window that is not whole seconds, and rounds t up", () => {
    const limit = compileLimit({ count: 2, window_s: 0.5 });
    const charges: Charge[] = [{ subject: "anonymous", category: "request", limits: [limit], cost: 1 }];
    const decision = admit(new LimiterTable(1, { seed: 1 }), charges, 0);
    expect(rateLimitHeaders(decision, charges).slice(0, 2)).toEqual([
      ["RateLimit-Policy", '"request-anonymous-500ms";q=2'],
      ["RateLimit", '"request-anonymous-500ms";r=1;t=1'],
    ]);
  });

  it("never puts the subject in any header", () => {
    const secret = "key:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const charges: Charge[] = [{ subject: secret, category: "request", limits: compileLimits([{ count: 1, window_s: 1 }]), cost: 1 }];
    const table = new LimiterTable(1, { seed: 1 });
    for (const d of [admit(table, charges, 0), admit(table, charges, 0)]) {
      for (const [, value] of rateLimitHeaders(d, charges)) expect(value).not.toContain("0123456789abcdef");
    }
    const odd: Charge[] = [{ subject: "203.0.113.7", category: 'x"y\\z', limits: compileLimits([{ count: 1, window_s: 1 }]), cost: 1 }];
    const [policy] = rateLimitHeaders(admit(table, odd, 0), odd);
    expect(policy).toEqual(["RateLimit-Policy", '"x_y_z-subject-1s";q=1;w=1']);
  });

  it("gives no headers when nothing was metered", () => {
    expect(rateLimitHeaders({ allowed: true, retryAfterMs: 0, deniedChargeIndex: -1, tightest: null }, [])).toEqual([]);
  });
});

describe("retryAfterSeconds", () => {
  it.each([
    [1, 1],
    [999, 1],
    [1000, 1],
    [1001, 2],
    [895_000, 895],
  ])("turns %i ms into %i s, rounding up", (ms, s) => {
    expect(retryAfterSeconds(ms)).toBe(s);
  });
});
