// delay_max_ms: a request refused for a short, exact delay is held and
// forwarded at the instant the limit allows, on a clock and timers the test
// holds (no wall-clock sleeps).
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Sleep } from "../../src/limits/delay";
import { compileRuntime } from "../../src/runtime";
import { database } from "../../src/db/client";
import { eventually, gatewayRequest, originLog, problemOf, unique, uniqueIp } from "../helpers";
import { adminCall, jsonOf, testConfig } from "./admin-helpers";

interface Timer {
  dueMs: number;
  resolve: (elapsed: boolean) => void;
}

/**
 * A gateway on a held clock whose held requests wait on timers the test fires
 * with fireNext(). Its policy snapshot is loaded first, so that requests sent
 * at once are decided in the order they are sent (a first request waits for
 * that load, and its joiners would resume before it).
 */
async function heldGateway(config: Record<string, unknown>) {
  const clock = { nowMs: 1_800_000_000_000 };
  const timers: Timer[] = [];
  const sleep: Sleep = (ms, signal) =>
    new Promise<boolean>((resolve) => {
      if (signal?.aborted) return resolve(false);
      const timer: Timer = { dueMs: clock.nowMs + ms, resolve };
      timers.push(timer);
      signal?.addEventListener("abort", () => {
        timers.splice(timers.indexOf(timer), 1);
        resolve(false);
      });
    });
  const testEnv = { ...env, TOLLGATE: config, ADMIN_TOKEN: undefined } as unknown as Env;
  const runtime = compileRuntime(testEnv, { clock: () => clock.nowMs, sleep });
  await runtime.policy.load(() => database(testEnv.DB), clock.nowMs);
  return {
    clock,
    runtime,
    /** Offsets from now of the timers not yet fired, in ms, soonest first. */
    pendingMs: () => timers.map((t) => t.dueMs - clock.nowMs).sort((a, b) => a - b),
    /** Moves the clock to the next timer's instant and fires it. */
    fireNext(): void {
      timers.sort((a, b) => a.dueMs - b.dueMs);
      const next = timers.shift();
      if (next === undefined) throw new Error("no timer is pending");
      clock.nowMs = next.dueMs;
      next.resolve(true);
    },
    async call(request: Request): Promise<Response> {
      const ctx = createExecutionContext();
      const response = await runtime.gateway(request, testEnv, ctx);
      const body = await response.arrayBuffer();
      await waitOnExecutionContext(ctx);
      return new Response(response.status === 204 ? null : body, response);
    },
  };
}

const FIVE_PER_S = { categories: { request: { limits: { ip: [{ count: 5, window_s: 1, delay_max_ms: 1500 }] } } } };

/** Starts `n` calls at once; each promise is tagged with whether it has settled. */
function burst(gateway: Awaited<ReturnType<typeof heldGateway>>, n: number, ip: string, tag: string) {
  return Array.from({ length: n }, () => {
    const entry = { done: false, response: null as unknown as Promise<Response> };
    entry.response = gateway.call(gatewayRequest("/held", { ip, headers: { "x-test-tag": tag } })).finally(() => {
      entry.done = true;
    });
    return entry;
  });
}

describe("delay_max_ms", () => {
  it("serves 10 requests at once against 5/s (burst 5): five at once, the last five held and spaced at 200 ms", async () => {
    const gateway = await heldGateway(FIVE_PER_S);
    const ip = uniqueIp();
    const tag = unique("held");
    const startMs = gateway.clock.nowMs;
    const calls = burst(gateway, 10, ip, tag);
    for (const first of calls.slice(0, 5)) {
      const answer = await first.response;
      expect(answer.status).toBe(200);
      expect(answer.headers.get("tollgate-delayed-ms")).toBeNull();
    }
    expect(gateway.pendingMs()).toEqual([200, 400, 600, 800, 1000]);
    expect(gateway.runtime.held.count).toBe(5);
    for (let k = 0; k < 5; k++) {
      gateway.fireNext();
      const answer = await calls[5 + k]!.response;
      expect(answer.status).toBe(200);
      expect(answer.headers.get("tollgate-delayed-ms")).toBe(String(200 * (k + 1)));
      expect(gateway.clock.nowMs - startMs).toBe(200 * (k + 1));
      // The next one waits for its own instant: arrival order, one emission interval apart.
      for (const later of calls.slice(6 + k)) expect(later.done).toBe(false);
    }
    expect(gateway.runtime.held.count).toBe(0);
    expect(await originLog(tag)).toHaveLength(10);
  });

  it("refuses with the usual 429 the requests of 20 more whose wait would pass 1500 ms, and holds the rest", async () => {
    const gateway = await heldGateway(FIVE_PER_S);
    const ip = uniqueIp();
    const tag = unique("more");
    const first = burst(gateway, 10, ip, tag);
    for (const call of first.slice(0, 5)) expect((await call.response).status).toBe(200);
    const more = burst(gateway, 20, ip, tag);
    // Waits of 1200 and 1400 ms fit; the 18 others would wait 1600 ms or more.
    expect(gateway.pendingMs()).toEqual([200, 400, 600, 800, 1000, 1200, 1400]);
    for (const call of more.slice(2)) {
      const refused = await call.response;
      expect(refused.status).toBe(429);
      const body = await problemOf(refused);
      expect(body).toMatchObject({ code: "rate_limited", category: "request" });
      expect(body.retry_after_ms).toBe(1600);
      expect(refused.headers.get("retry-after")).toBe("2");
      expect(refused.headers.get("tollgate-delayed-ms")).toBeNull();
    }
    for (let k = 0; k < 7; k++) gateway.fireNext();
    const held = [...first.slice(5), ...more.slice(0, 2)];
    const delays: string[] = [];
    for (const call of held) {
      const answer = await call.response;
      expect(answer.status).toBe(200);
      delays.push(answer.headers.get("tollgate-delayed-ms")!);
    }
    expect(delays).toEqual(["200", "400", "600", "800", "1000", "1200", "1400"]);
    expect(await originLog(tag)).toHaveLength(12);
  });

  it("holds at most limiter.max_delayed at once; past it, the usual 429", async () => {
    const gateway = await heldGateway({ ...FIVE_PER_S, limiter: { max_delayed: 2 } });
    const ip = uniqueIp();
    const calls = burst(gateway, 10, ip, unique("bound"));
    for (const call of calls.slice(0, 5)) expect((await call.response).status).toBe(200);
    expect(gateway.pendingMs()).toEqual([200, 400]);
    for (const call of calls.slice(7)) {
      const refused = await call.response;
      expect(refused.status).toBe(429);
      expect((await problemOf(refused)).retry_after_ms).toBe(600);
    }
    gateway.fireNext();
    gateway.fireNext();
    for (const call of calls.slice(5, 7)) expect((await call.response).status).toBe(200);
  });

  it("counts a held request against the in-flight bounds; past them, the usual 429", async () => {
    const gateway = await heldGateway({ ...FIVE_PER_S, in_flight: { per_credential: 6 } });
    const ip = uniqueIp();
    const calls = burst(gateway, 10, ip, unique("slots"));
    // Five admitted and one held hold the caller's six slots: the next four are refused, not held.
    expect(gateway.pendingMs()).toEqual([200]);
    for (const call of calls.slice(6)) {
      const refused = await call.response;
      expect(refused.status).toBe(429);
      expect((await problemOf(refused)).code).toBe("rate_limited");
    }
    for (const call of calls.slice(0, 5)) expect((await call.response).status).toBe(200);
    gateway.fireNext();
    expect((await calls[5]!.response).status).toBe(200);
  });

  it("holds nothing in shadow mode: a request a limit would hold is forwarded at once, marked", async () => {
    const gateway = await heldGateway({ mode: "shadow", categories: { request: { limits: { ip: [{ count: 1, window_s: 1, delay_max_ms: 1500 }] } } } });
    const ip = uniqueIp();
    expect((await gateway.call(gatewayRequest("/shadowed", { ip }))).status).toBe(200);
    const answer = await gateway.call(gatewayRequest("/shadowed", { ip }));
    expect(gateway.pendingMs()).toEqual([]);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("tollgate-delayed-ms")).toBeNull();
    expect(answer.headers.get("tollgate-shadow")).toContain("rate_limited");
  });

  it("holds a request whose wait is exactly delay_max_ms", async () => {
    const gateway = await heldGateway({ categories: { request: { limits: { ip: [{ count: 1, window_s: 1, delay_max_ms: 1000 }] } } } });
    const ip = uniqueIp();
    expect((await gateway.call(gatewayRequest("/exact", { ip }))).status).toBe(200);
    const held = gateway.call(gatewayRequest("/exact", { ip }));
    expect(gateway.pendingMs()).toEqual([1000]);
    gateway.fireNext();
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(answer.headers.get("tollgate-delayed-ms")).toBe("1000");
  });

  it("gives back the delay place of a request refused for want of an in-flight slot, so the isolate still holds requests after many", async () => {
    const gateway = await heldGateway({ categories: { request: { limits: { ip: [{ count: 1, window_s: 1, delay_max_ms: 10_000 }] } } }, in_flight: { per_credential: 1 }, limiter: { max_delayed: 3 } });
    const [busy, other] = [uniqueIp(), uniqueIp()];
    expect((await gateway.call(gatewayRequest("/busy", { ip: busy }))).status).toBe(200);
    // Held: it holds the caller's only in-flight slot while it waits.
    const held = gateway.call(gatewayRequest("/busy", { ip: busy }));
    expect(gateway.runtime.held.count).toBe(1);
    // Ten more of the same caller could wait, but have no slot to wait in: refused, each giving its place back.
    for (let i = 0; i < 10; i++) {
      const refused = await gateway.call(gatewayRequest("/busy", { ip: busy }));
      expect(refused.status).toBe(429);
    }
    expect(gateway.runtime.held.count).toBe(1);
    // Another caller's request is still held, not refused for want of a place.
    expect((await gateway.call(gatewayRequest("/other", { ip: other }))).status).toBe(200);
    const otherHeld = gateway.call(gatewayRequest("/other", { ip: other }));
    expect(gateway.runtime.held.count).toBe(2);
    gateway.fireNext();
    gateway.fireNext();
    // Each forwarded in the slot it took when it was held (not refused for want of a second one).
    for (const answer of [await held, await otherHeld]) {
      expect(answer.status).toBe(200);
      expect(answer.headers.get("tollgate-delayed-ms")).toBe("1000");
    }
  });

  it("keeps Tollgate-Delayed-Ms when the answer's RateLimit headers change after the call (a charge_on_status failure)", async () => {
    const gateway = await heldGateway({
      categories: { request: { limits: { ip: [{ count: 1, window_s: 1, delay_max_ms: 1500 }] } }, login_failure: { limits: { ip: [{ count: 3, window_s: 900 }] } } },
      routes: [{ method: "POST", path: "/login", charges: { login_failure: 1 }, charge_on_status: ["4xx"] }],
    });
    const ip = uniqueIp();
    const login = () => gatewayRequest("/login", { method: "POST", ip, body: "u", headers: { "x-origin-status": "401" } });
    expect((await gateway.call(login())).status).toBe(401);
    const held = gateway.call(login());
    gateway.fireNext();
    const answer = await held;
    expect(answer.status).toBe(401);
    expect(answer.headers.get("tollgate-delayed-ms")).toBe("1000");
    // The headers were rebuilt once the failure was charged (two of three spent), the request limit still the tightest.
    expect(answer.headers.get("ratelimit")).toBe('"request-ip-1s";r=0;t=1');
    expect(answer.headers.get("ratelimit-policy")).toBe('"request-ip-1s";q=1;w=1, "login_failure-ip-900s";q=3;w=900');
  });

  it("charges nothing for a held client that hangs up, and frees its place and its in-flight slot", async () => {
    const gateway = await heldGateway({ categories: { request: { limits: { ip: [{ count: 1, window_s: 1, delay_max_ms: 1500 }] } } } });
    const ip = uniqueIp();
    const tag = unique("gone");
    expect((await gateway.call(gatewayRequest("/a", { ip, headers: { "x-test-tag": tag } }))).status).toBe(200);
    const controller = new AbortController();
    const leaving = gateway.call(gatewayRequest("/b", { ip, signal: controller.signal, headers: { "x-test-tag": tag } }));
    expect(gateway.pendingMs()).toEqual([1000]);
    expect(gateway.runtime.inFlight.countOf(`ip:${ip}`)).toBe(1);
    controller.abort();
    expect((await leaving).status).toBe(429);
    expect(gateway.pendingMs()).toEqual([]);
    expect(gateway.runtime.held.count).toBe(0);
    await eventually(() => gateway.runtime.inFlight.countOf(`ip:${ip}`) === 0, "the held request's in-flight slot is released");
    // The next request gets the instant the one that left had: 1000 ms, not 2000.
    const next = gateway.call(gatewayRequest("/c", { ip, headers: { "x-test-tag": tag } }));
    expect(gateway.pendingMs()).toEqual([1000]);
    gateway.fireNext();
    const answer = await next;
    expect(answer.status).toBe(200);
    expect(answer.headers.get("tollgate-delayed-ms")).toBe("1000");
    // The origin never saw the request that left.
    expect((await originLog(tag)).map((seen) => seen.path)).toEqual(["/a", "/c"]);
  });

  it("takes delay_max_ms on limits through the admin API, and refuses one over 10000 naming the field", async () => {
    const tenant = unique("delayadmin");
    const limits = (delay: number) => ({ limits: { request: { key: [{ count: 5, window_s: 1, delay_max_ms: delay }] } } });
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}`, testConfig(), { body: limits(1500) }), 201);
    const refused = await adminCall("PUT", `/tenants/${tenant}/limits`, testConfig(), { body: limits(10_001) });
    expect(refused.status).toBe(400);
    expect((await refused.json()) as Record<string, unknown>).toMatchObject({ code: "invalid_request", field: "limits.request.key.0.delay_max_ms" });
  });

  it("decides a held request again when an override for its caller lands while it waits", async () => {
    const gateway = await heldGateway({ categories: { request: { limits: { ip: [{ count: 1, window_s: 1, delay_max_ms: 1500 }] } } } });
    const ip = uniqueIp();
    expect((await gateway.call(gatewayRequest("/a", { ip }))).status).toBe(200);
    const held = gateway.call(gatewayRequest("/b", { ip }));
    expect(gateway.pendingMs()).toEqual([1000]);
    await jsonOf(await adminCall("PUT", `/overrides/ip:${ip}`, testConfig(), { body: { limits: { request: [{ count: 1, window_s: 60 }] } } }), 201);
    // The admin write clears the isolate's policy snapshot (here: this runtime's, cleared by hand).
    gateway.runtime.policy.clear();
    gateway.fireNext();
    // Decided again under the override (a limit of its own, with its own state), not forwarded on the one it was held under.
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(answer.headers.get("ratelimit-policy")).toBe('"request-ip-60s";q=1;w=60');
    expect(answer.headers.get("tollgate-delayed-ms")).toBe("1000");
    // A second request is refused by the override at once: its 1 per 60 s is spent.
    const after = await gateway.call(gatewayRequest("/c", { ip }));
    expect(after.status).toBe(429);
    expect(after.headers.get("ratelimit-policy")).toBe('"request-ip-60s";q=1;w=60');
  });
});
