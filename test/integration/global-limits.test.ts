// Global limits through the gateway (issue 12): several
// clockedGateway runtimes — each its own limiter table and lease book, i.e.
// several isolates' worth of state — over the one real LimitLedger in
// workerd, on clocks the test moves together.
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ledgerStandingOf, resetLedger } from "../../src/durable/ledger-client";
import { boundUnits, leaseMsFor } from "../../src/engine/lease-types";
import { compileLimit, type LimitSpec } from "../../src/engine/limit";
import { rateLimit } from "../../src/limits/rate-limit";
import { callGateway, clockedGateway, exchangeFor, gatewayRequest, problemOf, unique, uniqueIp } from "../helpers";
import { adminCall, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

afterEach(() => {
  vi.restoreAllMocks();
});

/** An anonymous caller's `request` limits, nothing else charged. */
function ipConfig(limits: LimitSpec[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return testConfig({ categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, request: { limits: { ip: limits } } }, ...extra });
}

function get(ip: string, path = "/things"): Request {
  return gatewayRequest(path, { ip });
}

/** LIMIT_LEDGER behind a proxy that counts the RPC calls made on its stubs, or throws on every one; `answered` runs as each answer comes back. */
function ledgerNamespace(mode: "count" | "fail" = "count", answered: () => void = () => {}): { ns: DurableObjectNamespace; calls: string[] } {
  const calls: string[] = [];
  const real = env.LIMIT_LEDGER;
  const ns = {
    idFromName: (name: string) => real.idFromName(name),
    get: (id: DurableObjectId) => {
      const stub = real.get(id);
      const call =
        <A extends unknown[], R>(name: string, fn: (...args: A) => R) =>
        (...args: A): R => {
          calls.push(name);
          if (mode === "fail") throw new Error("Durable Object reset because its code was updated.");
          // An RPC call's answer is a thenable, not always a Promise.
          return Promise.resolve(fn(...args)).then((v) => {
            answered();
            return v;
          }) as R;
        };
      return {
        grant: call("grant", (req: Parameters<typeof stub.grant>[0]) => stub.grant(req)),
        giveBack: call("giveBack", (req: Parameters<typeof stub.giveBack>[0]) => stub.giveBack(req)),
        settle: call("settle", (req: Parameters<typeof stub.settle>[0]) => stub.settle(req)),
        standing: call("standing", (req: Parameters<typeof stub.standing>[0]) => stub.standing(req)),
        reset: call("reset", () => stub.reset()),
      };
    },
  } as unknown as DurableObjectNamespace;
  return { ns, calls };
}

describe("a global limit across several isolates", () => {
  it("holds a caller spread over four isolates within B + (Δ + L)·C/W in every window, and near the exact figure overall", async () => {
    // 40 per second, bursts of 20: L = 50 ms (the minimum), so the overshoot is at most 2 units.
    const spec = { count: 40, window_s: 1, burst: 20, scope: "global" as const };
    const config = ipConfig([spec]);
    const start = Date.now();
    const isolates = [0, 1, 2, 3].map(() => clockedGateway(config, {}, start));
    const ip = uniqueIp();
    const admitted: number[] = [];
    let refusedWithoutRetryAfter = 0;
    // Cycles of 400 ms: 100 ms of a request per isolate every 5 ms (800/s against 40/s), then 300 ms of quiet,
    // so the ledger refills between floods and isolates hold leases of several units when one begins.
    for (let cycle = 0; cycle < 5; cycle++) {
      for (let t = start + cycle * 400; t < start + cycle * 400 + 100; t += 5) {
        const answers = await Promise.all(
          isolates.map((gateway) => {
            gateway.clock.nowMs = t;
            return gateway.call(get(ip), { settle: true });
          }),
        );
        for (const res of answers) {
          if (res.status === 200) admitted.push(t);
          else if (res.status !== 429 || res.headers.get("retry-after") === null) refusedWithoutRetryAfter++;
        }
      }
    }
    expect(refusedWithoutRetryAfter).toBe(0);
    const limit = compileLimit(spec);
    const leaseMs = leaseMsFor(limit, 0.02, 50);
    let overshoot = 0;
    for (let i = 0; i < admitted.length; i++) {
      for (let j = i; j < admitted.length; j++) {
        const count = j - i + 1;
        const deltaMs = admitted[j]! - admitted[i]!;
        expect(count, `${count} admitted in ${deltaMs} ms`).toBeLessThanOrEqual(boundUnits(limit, deltaMs, leaseMs));
        overshoot = Math.max(overshoot, count - (limit.burst + Math.floor((deltaMs * limit.count) / limit.windowMs)));
      }
    }
    // The exact GCRA admits 20 + 1.7 s × 40/s = 88 here; leases lose at most a few to units left unspent.
    expect(admitted.length).toBeGreaterThanOrEqual(75);
    expect(overshoot).toBeLessThanOrEqual(2);
  });

  it("refuses with the ledger's retry delay, and admits once it has passed", async () => {
    // 2 per second, burst 2: T = 500 ms.
    const config = ipConfig([{ count: 2, window_s: 1, scope: "global" }]);
    const start = Date.now();
    const a = clockedGateway(config, {}, start);
    const b = clockedGateway(config, {}, start);
    const ip = uniqueIp();
    expect((await a.call(get(ip), { settle: true })).status).toBe(200);
    expect((await b.call(get(ip), { settle: true })).status).toBe(200);
    const refused = await a.call(get(ip), { settle: true });
    expect(refused.status).toBe(429);
    expect(await problemOf(refused)).toMatchObject({ code: "rate_limited", category: "request", retry_after_ms: 500 });
    expect(refused.headers.get("retry-after")).toBe("1");
    a.clock.nowMs = start + 499;
    expect((await a.call(get(ip), { settle: true })).status).toBe(429);
    a.clock.nowMs = start + 500;
    expect((await a.call(get(ip), { settle: true })).status).toBe(200);
  });
});

describe("all or nothing with the isolate's limits", () => {
  it("charges an isolate limit nothing for a request the global limit refuses, and asks the ledger nothing for one an isolate limit refuses", async () => {
    const ledger = ledgerNamespace();
    const config = ipConfig([
      { count: 3, window_s: 60 },
      { count: 2, window_s: 60, scope: "global" },
    ]);
    const gateway = clockedGateway(config, { LIMIT_LEDGER: ledger.ns });
    const ip = uniqueIp();
    expect((await gateway.call(get(ip), { settle: true })).status).toBe(200);
    expect((await gateway.call(get(ip), { settle: true })).status).toBe(200);
    // The third: the isolate limit has room (1 of 3), the global one none.
    const third = await gateway.call(get(ip), { settle: true });
    expect(third.status).toBe(429);
    expect(third.headers.get("ratelimit-policy")).toContain("q=2");
    // A new ledger state (reset), and the isolate limit still has its third unit: the refusal took none.
    await resetLedger(env.LIMIT_LEDGER, `ip:${ip}`);
    gateway.runtime.leases.forgetSubject(`ip:${ip}`);
    expect((await gateway.call(get(ip), { settle: true })).status).toBe(200);
    const asked = ledger.calls.length;
    // Now the isolate limit refuses: the ledger is not asked, and keeps its second unit.
    expect((await gateway.call(get(ip), { settle: true })).status).toBe(429);
    expect(ledger.calls.length).toBe(asked);
    const limit = compileLimit({ count: 2, window_s: 60, scope: "global" });
    expect(await ledgerStandingOf(env.LIMIT_LEDGER, `ip:${ip}`, "request", [limit], gateway.clock.nowMs)).toEqual([{ limit, remaining: 1, resetMs: 30_000 }]);
  });
});

describe("the hot path", () => {
  it("spends from a live lease synchronously, with no ledger call, once recent demand sized the lease", async () => {
    const ledger = ledgerNamespace();
    // 100 per second over a minute: L = 1.2 s.
    const config = ipConfig([{ count: 6000, window_s: 60, scope: "global" }]);
    const gateway = clockedGateway(config, { LIMIT_LEDGER: ledger.ns });
    const start = gateway.clock.nowMs;
    const ip = uniqueIp();
    // One L-long window of demand (60 requests, 20 ms apart): each is a single exact spend at first.
    for (let i = 0; i < 60; i++) {
      gateway.clock.nowMs = start + i * 20;
      expect((await gateway.call(get(ip), { settle: true })).status).toBe(200);
    }
    expect(ledger.calls.length).toBeGreaterThanOrEqual(30);
    // The next window: the first request asks for a lease sized to that demand...
    gateway.clock.nowMs = start + 1200;
    expect((await gateway.call(get(ip), { settle: true })).status).toBe(200);
    const asked = ledger.calls.length;
    // ...and the next ones spend from it (16 units of its ~20): the rate-limit step answers synchronously and the ledger hears nothing.
    const step = rateLimit({ table: gateway.runtime.limiter, leases: gateway.runtime.leases, now: gateway.runtime.now, defaults: gateway.runtime.config!.defaults, responseCharges: [] });
    for (let i = 1; i <= 8; i++) {
      gateway.clock.nowMs = start + 1200 + i;
      const x = exchangeFor(gateway.runtime, get(ip), { clientKey: ip, overrides: { LIMIT_LEDGER: ledger.ns } });
      x.caller = { kind: "anonymous", callerKey: `ip:${ip}`, override: null };
      const answer = step(x);
      expect(answer).toBeNull();
      expect((await gateway.call(get(ip), { settle: true })).status).toBe(200);
    }
    expect(ledger.calls.slice(asked)).toEqual([]);
  });
});

describe("the ledger unreachable", () => {
  it('meters the limit in each isolate with on_error "local", and the request log says ledger_error', async () => {
    const broken = ledgerNamespace("fail");
    const config = ipConfig([{ count: 2, window_s: 60, scope: "global" }], { request_log: true });
    const gateway = clockedGateway(config, { LIMIT_LEDGER: broken.ns });
    const ip = uniqueIp();
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    vi.spyOn(console, "warn").mockImplementation(() => {});
    expect((await gateway.call(get(ip), { settle: true })).status).toBe(200);
    expect((await gateway.call(get(ip), { settle: true })).status).toBe(200);
    const third = await gateway.call(get(ip), { settle: true });
    expect(third.status).toBe(429);
    expect(await problemOf(third)).toMatchObject({ code: "rate_limited", retry_after_ms: 30_000 });
    // One call failed; the next ones waited out the retry period without asking.
    expect(broken.calls).toEqual(["grant"]);
    const logged = lines.filter((l) => l.includes('"event":"request"')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logged.map((l) => [l.status, l.ledger_error])).toEqual([
      [200, true],
      [200, true],
      [429, true],
    ]);
    expect(lines.join("\n")).not.toContain(ip);
  });

  it("refuses rather than metering per isolate when every answer comes back after its lease died (a ledger slower than L)", async () => {
    const config = ipConfig([{ count: 100, window_s: 60, scope: "global" }], { request_log: true });
    const clock = { nowMs: Date.now() };
    const slow = ledgerNamespace("count", () => {
      // Each grant answers 1.2 s later on the gateway's clock: L is 1.2 s, so its lease is dead on arrival.
      clock.nowMs += 1200;
    });
    const gateway = clockedGateway(config, { LIMIT_LEDGER: slow.ns }, clock.nowMs);
    Object.defineProperty(gateway.clock, "nowMs", { get: () => clock.nowMs, set: (v: number) => void (clock.nowMs = v) });
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const res = await gateway.call(get(uniqueIp()), { settle: true });
    expect(res.status).toBe(429);
    expect(slow.calls).toEqual(["grant", "grant", "grant", "grant"]);
    const logged = lines.filter((l) => l.includes('"event":"request"')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logged).toHaveLength(1);
    expect(logged[0]!.ledger_error).toBeUndefined();
  });

  it('answers 503 limits_unavailable with Retry-After with on_error "deny", and forwards nothing', async () => {
    const broken = ledgerNamespace("fail");
    const config = ipConfig([{ count: 2, window_s: 60, scope: "global" }], { global: { on_error: "deny" } });
    const gateway = clockedGateway(config, { LIMIT_LEDGER: broken.ns });
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const ip = uniqueIp();
    for (let i = 0; i < 3; i++) {
      const res = await gateway.call(get(ip), { settle: true });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("1");
      expect(await problemOf(res)).toMatchObject({ code: "limits_unavailable", status: 503 });
    }
    // After the retry period the ledger is asked again.
    gateway.clock.nowMs += 1000;
    expect((await gateway.call(get(ip), { settle: true })).status).toBe(503);
    expect(broken.calls).toEqual(["grant", "grant"]);
  });
});

describe("response-priced charges on a global limit", () => {
  it("settle the debt past the reserve on the ledger", async () => {
    const config = testConfig({
      routes: [{ method: "POST", path: "/v1/chat", response_charge: { category: "tokens", reserve: 10, header: "x-usage-total-tokens" } }],
      categories: {
        admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } },
        request: { limits: { key: [{ count: 1_000_000, window_s: 1 }], tenant: [{ count: 1_000_000, window_s: 1 }] } },
        tokens: { limits: { key: [{ count: 100, window_s: 60, scope: "global" }] } },
      },
    });
    const tenant = unique("global-priced");
    await createTenant(config, tenant);
    const key = (await mintKey(config, tenant)).key;
    const gateway = clockedGateway(config);
    const chat = () => gatewayRequest("/v1/chat", { method: "POST", ip: "198.51.100.71", headers: { authorization: `Bearer ${key}`, "x-origin-usage-header": "25" }, body: "{}" });
    expect((await gateway.call(chat(), { settle: true })).status).toBe(200);
    const digest = [...new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key)))].map((b) => b.toString(16).padStart(2, "0")).join("");
    const limit = compileLimit({ count: 100, window_s: 60, scope: "global" });
    // The reserve of 10 was leased, and the other 15 charged on the ledger: 75 left.
    expect(await ledgerStandingOf(env.LIMIT_LEDGER, `key:${digest}`, "tokens", [limit], gateway.clock.nowMs)).toEqual([{ limit, remaining: 75, resetMs: 15_000 }]);
  });
});

describe("explain and reset (GET /callers, DELETE /callers/…/state)", () => {
  const CONFIG = ipConfig([
    { count: 5, window_s: 60 },
    { count: 10, window_s: 60, scope: "global" },
  ]);

  interface Explained {
    limits: { category: string; subject: string; scope: string; limit: { count: number }; remaining: number | null; reset_ms: number | null; ledger_error?: boolean }[];
  }

  it("shows a global limit's scope and the ledger's standing, and reset forgets the ledger's state too", async () => {
    const ip = uniqueIp();
    for (let i = 0; i < 3; i++) expect((await callGateway(get(ip), { TOLLGATE: CONFIG }, { settle: true })).status).toBe(200);
    const explained = await jsonOf<Explained>(await adminCall("GET", `/callers/ip:${ip}`, CONFIG), 200);
    const own = explained.limits.filter((l) => l.category === "request" && l.subject === "ip");
    expect(own.map((l) => [l.scope, l.limit.count])).toEqual([
      ["isolate", 5],
      ["global", 10],
    ]);
    // Three single exact spends (no demand yet to size a lease by): the ledger has 7 left.
    expect(own[1]).toMatchObject({ remaining: 7 });
    expect(own[1]!.reset_ms).toBeGreaterThan(17_000);
    const reset = await adminCall("DELETE", `/callers/ip:${ip}/state`, CONFIG);
    expect(await jsonOf(reset, 200)).toMatchObject({ caller: `ip:${ip}`, reset: true, states_held: 1, ledger_states_held: 1 });
    const after = await jsonOf<Explained>(await adminCall("GET", `/callers/ip:${ip}`, CONFIG), 200);
    expect(after.limits.filter((l) => l.category === "request" && l.subject === "ip").map((l) => l.remaining)).toEqual([5, 10]);
  });

  it("says ledger_error in explain, and answers reset 503 limits_unavailable, when the ledger cannot be reached", async () => {
    const broken = ledgerNamespace("fail");
    vi.spyOn(console, "warn").mockImplementation(() => {});
    const ip = uniqueIp();
    const explained = await jsonOf<Explained>(await adminCall("GET", `/callers/ip:${ip}`, CONFIG, { env: { LIMIT_LEDGER: broken.ns } }), 200);
    expect(explained.limits.find((l) => l.scope === "global")).toMatchObject({ remaining: null, reset_ms: null, ledger_error: true });
    expect(explained.limits.find((l) => l.scope === "isolate" && l.subject === "ip")).toMatchObject({ remaining: 5 });
    const reset = await adminCall("DELETE", `/callers/ip:${ip}/state`, CONFIG, { env: { LIMIT_LEDGER: broken.ns } });
    expect(reset.status).toBe(503);
    expect(reset.headers.get("retry-after")).toBe("1");
    expect(await problemOf(reset)).toMatchObject({ code: "limits_unavailable" });
  });
});

describe("scope in the admin API", () => {
  it("takes scope on an override's limits, refuses any other value naming the field, and applies a global override", async () => {
    const config = ipConfig([{ count: 100, window_s: 60 }]);
    const ip = uniqueIp();
    const bad = await adminCall("PUT", `/overrides/ip:${ip}`, config, { body: { limits: { request: [{ count: 2, window_s: 60, scope: "everywhere" }] } } });
    expect(bad.status).toBe(400);
    expect(await problemOf(bad)).toMatchObject({ code: "invalid_request", field: "limits.request.0.scope" });
    await jsonOf(await adminCall("PUT", `/overrides/ip:${ip}`, config, { body: { limits: { request: [{ count: 2, window_s: 60, scope: "global" }] } } }), 201);
    // Two isolates, one limit of 2: the third request is refused whichever isolate it reaches.
    const a = clockedGateway(config);
    const b = clockedGateway(config);
    expect((await a.call(get(ip), { settle: true })).status).toBe(200);
    expect((await b.call(get(ip), { settle: true })).status).toBe(200);
    expect((await a.call(get(ip), { settle: true })).status).toBe(429);
    expect((await b.call(get(ip), { settle: true })).status).toBe(429);
    const explained = await jsonOf<{ limits: { category: string; subject: string; source: string; scope: string; remaining: number }[] }>(await adminCall("GET", `/callers/ip:${ip}`, config), 200);
    expect(explained.limits.find((l) => l.category === "request" && l.subject === "ip")).toMatchObject({ source: "override", scope: "global", remaining: 0 });
  });
});
