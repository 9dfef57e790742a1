// Shadow limits in the engine: validated and compiled beside the enforced
// ones (never part of a state's identity), left out of admit() and of the
// advertised policies, decided on their own after an admitted request, and
// an entry of only shadow limits never displacing the enforced ones below it.
import { describe, expect, it } from "vitest";
import { peekLimit } from "../../src/engine/caller-state";
import { admit, type Charge } from "../../src/engine/gcra";
import { compileLimit, compileLimits, limitError, sameLimit } from "../../src/engine/limit";
import { LimiterTable } from "../../src/engine/limiter-table";
import { rateLimitHeaders } from "../../src/engine/rate-limit-headers";
import { resolveLimits, resolveSourcedLimits, limitSourceOf } from "../../src/engine/resolve-limits";
import { asCharged, decideShadow } from "../../src/engine/shadow";
import { flushedMinute, MINUTE_MS, SHADOW_POLICIES_PER_MINUTE, TrafficCounts } from "../../src/engine/traffic-counts";
import { mulberry32 } from "../prng";

const T0 = 1_800_000_000_000;

describe("shadow and penalty on a limit", () => {
  it.each([
    [{ count: 5, window_s: 5, shadow: true }],
    [{ count: 5, window_s: 5, shadow: false, scope: "global" }],
    [{ count: 5, window_s: 5, penalty: { after: 1, within_s: 0.5, block_s: 1 } }],
    [{ count: 5, window_s: 5, penalty: { after: 10_000, within_s: 86_400, block_s: 604_800 } }],
  ])("accepts %j", (spec) => {
    expect(limitError(spec)).toBeNull();
  });

  it.each([
    [{ count: 5, window_s: 5, shadow: 1 }, "shadow must be true or false"],
    [{ count: 5, window_s: 5, shadow: true, scope: "global" }, 'shadow must not be set on a limit with scope "global"'],
    [{ count: 5, window_s: 5, penalty: 3 }, "penalty must be an object"],
    [{ count: 5, window_s: 5, penalty: { after: 1, within_s: 1 } }, "penalty.block_s must be a whole number"],
    [{ count: 5, window_s: 5, penalty: { after: 1.5, within_s: 1, block_s: 1 } }, "penalty.after must be a whole number"],
    [{ count: 5, window_s: 5, penalty: { after: 10_001, within_s: 1, block_s: 1 } }, "penalty.after must be a whole number"],
    [{ count: 5, window_s: 5, penalty: { after: 1, within_s: 86_401, block_s: 1 } }, "penalty.within_s must be a number"],
    [{ count: 5, window_s: 5, penalty: { after: 1, within_s: 0.0001, block_s: 1 } }, "penalty.within_s must be a whole number of milliseconds"],
    [{ count: 5, window_s: 5, penalty: { after: 1, within_s: 1, block_s: 1, until: 3 } }, "penalty.until is not a known penalty field"],
  ])("refuses %j, naming the field", (spec, reason) => {
    expect(limitError(spec)).toContain(reason);
  });

  it("keeps shadow and penalty out of the state's identity, so switching shadow off keeps the state", () => {
    const live = compileLimit({ count: 5, window_s: 60 });
    const tried = compileLimit({ count: 5, window_s: 60, shadow: true, penalty: { after: 3, within_s: 60, block_s: 30 } });
    expect(tried).toMatchObject({ shadow: true, penalty: { after: 3, withinMs: 60_000, blockMs: 30_000 } });
    expect(sameLimit(live, tried)).toBe(true);
    expect([tried.keySaltA, tried.keySaltB]).toEqual([live.keySaltA, live.keySaltB]);
  });

  it("meters a shadow limit per isolate whatever the default scope, and keeps the enforced copy of a repeated limit", () => {
    expect(compileLimit({ count: 5, window_s: 60, shadow: true }, "global").scope).toBe("isolate");
    const list = compileLimits([{ count: 5, window_s: 60, shadow: true }, { count: 5, window_s: 60 }]);
    expect(list).toHaveLength(1);
    expect(list[0]!.shadow).toBe(false);
  });
});

describe("admit() and the headers leave shadow limits out", () => {
  it("decides and charges only the enforced limits, and advertises only them", () => {
    const table = new LimiterTable(1, { seed: 11 });
    const limits = compileLimits([{ count: 3, window_s: 60 }, { count: 1, window_s: 60, shadow: true }]);
    const charges: Charge[] = [{ subject: "key:a", category: "request", limits, cost: 1 }];
    const decisions = [0, 1, 2, 3].map((i) => admit(table, charges, T0 + i));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
    // Nothing was charged to the shadow limit by admit().
    expect(peekLimit(table, "key:a", "request", limits[1]!, T0 + 4).remaining).toBe(1);
    const headers = Object.fromEntries(rateLimitHeaders(decisions[0]!, charges));
    expect(headers["RateLimit-Policy"]).toBe('"request-key-60s";q=3;w=60');
  });

  it("gives the same decisions with and without shadow limits, over random spends", () => {
    const random = mulberry32(2031);
    const live = [{ count: 4, window_s: 10 }, { count: 20, window_s: 120, burst: 6 }];
    const withShadow = new LimiterTable(1, { seed: 5 });
    const without = new LimiterTable(1, { seed: 5 });
    const shadowed = compileLimits([...live, { count: 2, window_s: 10, shadow: true }, { count: 3, window_s: 30, shadow: true }]);
    const plain = compileLimits(live);
    let t = T0;
    for (let i = 0; i < 2_000; i++) {
      t += Math.floor(random() * 3_000);
      const cost = 1 + Math.floor(random() * 3);
      const subject = `key:${Math.floor(random() * 3)}`;
      const a = admit(withShadow, [{ subject, category: "request", limits: shadowed, cost }], t);
      if (a.allowed) decideShadow(withShadow, [{ subject, category: "request", limits: shadowed, cost }], t);
      const b = admit(without, [{ subject, category: "request", limits: plain, cost }], t);
      expect({ allowed: a.allowed, retry: a.retryAfterMs }).toEqual({ allowed: b.allowed, retry: b.retryAfterMs });
    }
  });
});

describe("decideShadow", () => {
  it("charges each shadow limit as if it alone were enforced, and charges nothing to one it does not fit", () => {
    const table = new LimiterTable(1, { seed: 9 });
    const reference = new LimiterTable(1, { seed: 9 });
    const limits = compileLimits([{ count: 100, window_s: 60 }, { count: 2, window_s: 60, shadow: true }]);
    const alone = compileLimits([{ count: 2, window_s: 60 }]);
    const refused: number[] = [];
    for (let i = 0; i < 5; i++) {
      const charges: Charge[] = [{ subject: "key:s", category: "request", limits, cost: 1 }];
      expect(admit(table, charges, T0 + i * 1000).allowed).toBe(true);
      const verdicts = decideShadow(table, charges, T0 + i * 1000);
      const enforced = admit(reference, [{ subject: "key:s", category: "request", limits: alone, cost: 1 }], T0 + i * 1000);
      expect(verdicts).toEqual([{ chargeIndex: 0, limit: limits[1], admitted: enforced.allowed, retryAfterMs: enforced.retryAfterMs }]);
      if (!verdicts[0]!.admitted) {
        refused.push(i);
        expect(asCharged(charges, verdicts)[0]!.limits).toEqual([limits[0]]);
      } else {
        expect(asCharged(charges, verdicts)).toBe(charges);
      }
    }
    expect(refused).toEqual([2, 3, 4]);
    expect(peekLimit(table, "key:s", "request", limits[1]!, T0 + 5_000)).toEqual(peekLimit(reference, "key:s", "request", alone[0]!, T0 + 5_000));
  });

  it("sums one request's spends on the same shadow limit", () => {
    const table = new LimiterTable(1, { seed: 4 });
    const limits = compileLimits([{ count: 3, window_s: 60, shadow: true }]);
    const charges: Charge[] = [
      { subject: "key:s", category: "request", limits, cost: 1 },
      { subject: "key:s", category: "request", limits, cost: 2 },
    ];
    expect(decideShadow(table, charges, T0).map((v) => v.admitted)).toEqual([true]);
    expect(decideShadow(table, charges, T0).map((v) => v.admitted)).toEqual([false]);
  });
});

describe("resolving shadow limits", () => {
  const tenantKey = compileLimits([{ count: 100, window_s: 60 }]);
  const shadowOverride = compileLimits([{ count: 1, window_s: 60, shadow: true }]);
  const mixedOverride = compileLimits([{ count: 5, window_s: 60 }, { count: 1, window_s: 60, shadow: true }]);

  it("lets an entry of only shadow limits be tried beside the enforced entry below it, without displacing it", () => {
    const sources = { override: { request: shadowOverride }, tenant: { request: { key: tenantKey } } };
    const resolved = resolveLimits("request", "key", sources);
    expect(resolved).toEqual([tenantKey[0], shadowOverride[0]]);
    // The same list each time: a caller's requests allocate nothing new.
    expect(resolveLimits("request", "key", sources)).toBe(resolved);
    expect(limitSourceOf("request", "key", sources)).toBe("tenant");
    expect(resolveSourcedLimits("request", "key", sources).map((s) => s.source)).toEqual(["tenant", "override"]);
  });

  it("lets an entry with an enforced limit win outright, its shadow limits with it", () => {
    const sources = { override: { request: mixedOverride }, tenant: { request: { key: tenantKey } } };
    expect(resolveLimits("request", "key", sources)).toBe(mixedOverride);
    expect(limitSourceOf("request", "key", sources)).toBe("override");
  });
});

describe("what shadow policies would refuse, in an isolate's traffic counts", () => {
  const bounds = { maxMinutes: 3, maxCells: 4, sketchCapacity: 8 };
  const minute = T0 - (T0 % MINUTE_MS);

  it("counts per policy, tenant and code, with the callers, and merges a failed flush back", () => {
    const counts = new TrafficCounts(bounds);
    counts.countShadow(minute, "acme", "request-key-60s", "rate_limited", "key:a");
    counts.countShadow(minute + 1, "acme", "request-key-60s", "rate_limited", "key:a");
    counts.countShadow(minute + 2, null, "block-7", "blocked", "ip:192.0.2.9");
    const taken = counts.take();
    counts.countShadow(minute + 3, "acme", "request-key-60s", "rate_limited", "key:b");
    counts.putBack(taken);
    const [flushed] = counts.take().map((m) => flushedMinute(m, 10));
    const byPolicy = Object.fromEntries(flushed!.shadow.map((p) => [p.policy, p]));
    expect(byPolicy["request-key-60s"]!.rows).toEqual([{ tenant: "acme", decision: "rate_limited", count: 3 }]);
    expect(byPolicy["request-key-60s"]!.callers.map((c) => [c.item, c.count])).toEqual([
      ["key:a", 2],
      ["key:b", 1],
    ]);
    expect(byPolicy["block-7"]!.rows).toEqual([{ tenant: "anonymous", decision: "blocked", count: 1 }]);
  });

  it("holds at most SHADOW_POLICIES_PER_MINUTE policies a minute, counting the rest as dropped", () => {
    const counts = new TrafficCounts(bounds);
    for (let i = 0; i < SHADOW_POLICIES_PER_MINUTE + 5; i++) counts.countShadow(minute, "t", `policy-${i}`, "rate_limited", null);
    expect(counts.droppedCounts).toBe(5);
    expect(flushedMinute(counts.take()[0]!, 10).shadow).toHaveLength(SHADOW_POLICIES_PER_MINUTE);
  });
});
