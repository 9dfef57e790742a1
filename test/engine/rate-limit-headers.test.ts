import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { admit, type Charge, type Decision } from "../../src/engine/gcra";
import { compileLimit, compileLimits } from "../../src/engine/limit";
import { LimiterTable } from "../../src/engine/limiter-table";
import { deniedPolicies, type HeaderVersion, rateLimitHeaders, retryAfterSeconds, violatedPolicies } from "../../src/engine/rate-limit-headers";
import { type Item, parseList } from "structured-headers";

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

  it("lists only the policies the request was charged under: a charge of cost 0 is left out", () => {
    const request = compileLimit({ count: 10, window_s: 1 });
    const free = compileLimit({ count: 5, window_s: 60 });
    const charges: Charge[] = [
      { subject: SUBJECT, category: "request", limits: [request], cost: 1 },
      { subject: SUBJECT, category: "static_bytes", limits: [free], cost: 0 },
    ];
    const decision = admit(new LimiterTable(1, { seed: 1 }), charges, 0);
    expect(rateLimitHeaders(decision, charges)[0]).toEqual(["RateLimit-Policy", '"request-ip-1s";q=10;w=1']);
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
      ["RateLimit-Policy", '"request-key-1s";q=1000;w=1;tollgate-burst=2000, "request-tenant-1s";q=3;w=1'],
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

/** A header of `headers`, parsed by an outside RFC 9651 parser into {name, params} per list member. */
function parsed(headers: readonly (readonly [string, string])[], field: string): { name: string; params: Record<string, unknown> }[] {
  const value = headers.find(([name]) => name === field)?.[1];
  if (value === undefined) throw new Error(`no ${field}`);
  return parseList(value).map((member) => {
    const [bare, params] = member as Item;
    expect(typeof bare).toBe("string");
    return { name: bare as string, params: Object.fromEntries([...params].map(([k, v]) => [k, typeof v === "object" && v !== null ? String(v) : v])) };
  });
}

const KEY = "key:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

describe("every policy charged, in both draft versions", () => {
  // A key with a per-minute, an hourly and a daily limit, its tenant with two windows, and a route cost of 3 uploads.
  const keyRequests = compileLimits([
    { count: 2, window_s: 60 },
    { count: 1000, window_s: 3600 },
    { count: 5000, window_s: 86_400 },
  ]);
  const tenantRequests = compileLimits([
    { count: 100, window_s: 1 },
    { count: 10_000, window_s: 3600 },
  ]);
  const uploads = compileLimits([{ count: 10, window_s: 60 }]);
  const charges: Charge[] = [
    { subject: KEY, category: "request", limits: keyRequests, cost: 1 },
    { subject: "tenant:acme", category: "request", limits: tenantRequests, cost: 1 },
    { subject: KEY, category: "upload", limits: uploads, cost: 3 },
  ];

  it.each(["draft-11", "draft-12"] as HeaderVersion[])("lists each limit of each subject in RateLimit-Policy (%s), parsed by an RFC 9651 parser", (version) => {
    const decision = admit(new LimiterTable(1, { seed: 3 }), charges, 0);
    const policies = parsed(rateLimitHeaders(decision, charges, version), "RateLimit-Policy");
    expect(policies).toEqual([
      { name: "request-key-60s", params: { q: 2, w: 60 } },
      { name: "request-key-3600s", params: { q: 1000, w: 3600 } },
      { name: "request-key-86400s", params: { q: 5000, w: 86_400 } },
      { name: "request-tenant-1s", params: { q: 100, w: 1 } },
      { name: "request-tenant-3600s", params: { q: 10_000, w: 3600 } },
      { name: "upload-key-60s", params: { q: 10, w: 60 } },
    ]);
  });

  it("lists both windows of a key with two limits, and RateLimit names the one closest to running out", () => {
    const two: Charge[] = [{ subject: KEY, category: "request", limits: compileLimits([{ count: 2, window_s: 60 }, { count: 1000, window_s: 3600 }]), cost: 1 }];
    const headers = rateLimitHeaders(admit(new LimiterTable(1, { seed: 3 }), two, 0), two);
    expect(parsed(headers, "RateLimit-Policy").map((p) => p.name)).toEqual(["request-key-60s", "request-key-3600s"]);
    expect(parsed(headers, "RateLimit")).toEqual([{ name: "request-key-60s", params: { r: 1, t: 30 } }]);
  });

  it("gives a (available), w (effective window) and c (this request's cost in the policy's category) in draft-12", () => {
    const table = new LimiterTable(1, { seed: 3 });
    admit(table, charges, 0);
    admit(table, charges, 0);
    // Third: 9 of 10 uploads per minute would be spent, so fits; the key's 2/60 s does not.
    const uploadOnly: Charge[] = [charges[2]!];
    const decision = admit(table, uploadOnly, 0);
    expect(decision.allowed).toBe(true);
    const headers = rateLimitHeaders(decision, uploadOnly, "draft-12");
    // 9 uploads spent of a burst of 10: 1 left; earned back fully in 9 × 6 s = 54 s.
    expect(parsed(headers, "RateLimit")).toEqual([{ name: "upload-key-60s", params: { a: 1, w: 54, c: 3 } }]);
    expect(headers.find(([n]) => n === "RateLimit")![1]).toBe('"upload-key-60s";a=1;w=54;c=3');
  });

  it("gives c = 1 for the request category and the route's cost for its own, in the tightest policy", () => {
    const decision = admit(new LimiterTable(1, { seed: 3 }), charges, 0);
    // After one request: request-key-60s has 1 left, uploads 7 left: the key's minute is the tightest.
    expect(parsed(rateLimitHeaders(decision, charges, "draft-12"), "RateLimit")).toEqual([{ name: "request-key-60s", params: { a: 1, w: 30, c: 1 } }]);
    const route: Charge[] = [{ subject: KEY, category: "upload", limits: compileLimits([{ count: 4, window_s: 60 }]), cost: 3 }];
    expect(parsed(rateLimitHeaders(admit(new LimiterTable(1, { seed: 3 }), route, 0), route, "draft-12"), "RateLimit")[0]!.params.c).toBe(3);
  });

  it("says whose quota each policy is in RateLimit-Partition (draft-12 only), never the subject", () => {
    const decision = admit(new LimiterTable(1, { seed: 3 }), charges, 0);
    const twelve = rateLimitHeaders(decision, charges, "draft-12");
    expect(parsed(twelve, "RateLimit-Partition").map((p) => [p.name, p.params.pk])).toEqual([
      ["request-key-60s", "key"],
      ["request-key-3600s", "key"],
      ["request-key-86400s", "key"],
      ["request-tenant-1s", "tenant"],
      ["request-tenant-3600s", "tenant"],
      ["upload-key-60s", "key"],
    ]);
    for (const [, value] of twelve) {
      expect(value).not.toContain("9f86d081");
      expect(value).not.toContain("acme");
    }
    expect(rateLimitHeaders(decision, charges, "draft-11").map(([n]) => n)).not.toContain("RateLimit-Partition");
  });

  it("names every policy a denial did not fit, and only those", () => {
    const table = new LimiterTable(1, { seed: 3 });
    // Uploads of 4 against 10/60 s and the key's 2/60 s: the third request fits neither.
    const heavy: Charge[] = [charges[0]!, { subject: KEY, category: "upload", limits: uploads, cost: 4 }];
    admit(table, heavy, 0);
    admit(table, heavy, 0);
    const denied = admit(table, heavy, 0);
    expect(denied.allowed).toBe(false);
    expect(violatedPolicies(denied, heavy)).toEqual(["request-key-60s", "upload-key-60s"]);
    expect(violatedPolicies(admit(new LimiterTable(1, { seed: 3 }), heavy, 0), heavy)).toEqual([]);
  });

  it("keeps two limits with the same window apart by name", () => {
    const same: Charge[] = [{ subject: KEY, category: "request", limits: compileLimits([{ count: 10, window_s: 60 }, { count: 5, window_s: 60, burst: 20 }]), cost: 1 }];
    const names = parsed(rateLimitHeaders(admit(new LimiterTable(1, { seed: 3 }), same, 0), same), "RateLimit-Policy").map((p) => p.name);
    expect(names).toEqual(["request-key-60s", "request-key-60s-2"]);
  });
});

// The headers' plan is made once per shape of charge list (the limits
// arrays, categories, costs, subject kinds and which charges share a
// subject) and reused: every answer must be what a plan made for it alone
// gives. A copy of each limits array is a list no plan was made for.
describe("rateLimitHeaders, reused across requests", () => {
  const pool = {
    limits: [compileLimits([{ count: 3, window_s: 60 }]), compileLimits([{ count: 5, window_s: 1 }, { count: 50, window_s: 60 }]), compileLimits([{ count: 2, window_s: 60, shadow: true }, { count: 4, window_s: 60 }]), compileLimits([])],
    subjects: ["key:aa", "key:bb", "tenant:acme", "tenant:beta", "ip:203.0.113.7", "anonymous", "jwt:cc"],
    categories: ["request", "upload", "tokens"],
  };
  const chargeArb = fc.record({ limits: fc.nat(pool.limits.length - 1), subject: fc.nat(pool.subjects.length - 1), category: fc.nat(pool.categories.length - 1), cost: fc.integer({ min: 0, max: 3 }) });
  const listArb = fc.array(chargeArb, { minLength: 1, maxLength: 5 });

  it("gives every list, admitted or denied, what a plan of its own gives, in either draft", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(listArb, fc.nat(3)), { minLength: 1, maxLength: 12 }), (requests) => {
        const table = new LimiterTable(1, { seed: 5 });
        for (const [list, spends] of requests) {
          const charges: Charge[] = list.map((c) => ({ limits: pool.limits[c.limits]!, subject: pool.subjects[c.subject]!, category: pool.categories[c.category]!, cost: c.cost }));
          const fresh: Charge[] = charges.map((c) => ({ ...c, limits: [...c.limits] }));
          for (let i = 0; i < spends; i++) admit(table, charges, 0);
          const decision = admit(table, charges, 0);
          for (const version of ["draft-11", "draft-12"] as const) {
            expect(rateLimitHeaders(decision, charges, version)).toEqual(rateLimitHeaders(decision, fresh, version));
            expect(deniedPolicies(decision, charges, version)).toEqual(deniedPolicies(decision, fresh, version));
          }
          expect(violatedPolicies(decision, charges)).toEqual(violatedPolicies(decision, fresh));
        }
      }),
    );
  });

  it("names a policy after the subject kind of each request, not of the first one planned", () => {
    const limits = compileLimits([{ count: 10, window_s: 60 }]);
    const table = new LimiterTable(1, { seed: 6 });
    const asKey: Charge[] = [{ subject: "key:aa", category: "request", limits, cost: 1 }];
    const asIp: Charge[] = [{ subject: "ip:203.0.113.7", category: "request", limits, cost: 1 }];
    expect(rateLimitHeaders(admit(table, asKey, 0), asKey)[0]).toEqual(["RateLimit-Policy", '"request-key-60s";q=10;w=60']);
    expect(rateLimitHeaders(admit(table, asIp, 0), asIp)[0]).toEqual(["RateLimit-Policy", '"request-ip-60s";q=10;w=60']);
    // Two charges of one subject on the same limit are one policy; of two subjects, two.
    const twice: Charge[] = [asKey[0]!, { ...asKey[0]!, cost: 2 }];
    const apart: Charge[] = [asKey[0]!, { ...asKey[0]!, subject: "key:bb", cost: 2 }];
    expect(rateLimitHeaders(admit(table, twice, 0), twice, "draft-12")[0]).toEqual(["RateLimit-Policy", '"request-key-60s";q=10;w=60']);
    expect(rateLimitHeaders(admit(table, apart, 0), apart, "draft-12")[0]).toEqual(["RateLimit-Policy", '"request-key-60s";q=10;w=60, "request-key-60s-2";q=10;w=60']);
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
