// The single flight of ledger asks (src/limits/global-leases.ts), driven by
// concurrent requests through the gateway over the real LimitLedger, with the
// ledger's `grant` held by the test: one ask per (subject, category) in flight
// however many requests find their leases short, and an ask that never
// settles is not joined past its age guard.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_FLIGHT_MS } from "../../src/cache/read-through-cache";
import { clockedGateway, eventually, gatewayRequest, uniqueIp } from "../helpers";
import { testConfig } from "./admin-helpers";

/** LIMIT_LEDGER whose `grant` calls are counted and, while `hold` is set, wait until the test releases them. */
function heldLedger() {
  const real = env.LIMIT_LEDGER;
  const waiting: (() => void)[] = [];
  const state = { hold: false, grants: 0 };
  const ns = {
    idFromName: (name: string) => real.idFromName(name),
    get: (id: DurableObjectId) => {
      const stub = real.get(id);
      return {
        grant: (req: Parameters<typeof stub.grant>[0]) => {
          state.grants++;
          if (!state.hold) return stub.grant(req);
          return new Promise((resolve) => waiting.push(() => resolve(stub.grant(req))));
        },
        giveBack: (req: Parameters<typeof stub.giveBack>[0]) => stub.giveBack(req),
        settle: (req: Parameters<typeof stub.settle>[0]) => stub.settle(req),
        standing: (req: Parameters<typeof stub.standing>[0]) => stub.standing(req),
        reset: () => stub.reset(),
      };
    },
  } as unknown as DurableObjectNamespace;
  const releaseAll = () => waiting.splice(0).forEach((release) => release());
  return { ns, state, releaseAll };
}

const CONFIG = testConfig({ categories: { request: { limits: { ip: [{ count: 1000, window_s: 1, scope: "global" }] } } } });

describe("ledger asks from concurrent requests", () => {
  it("sends one ask for twenty requests that find the same leases short, and admits them all once it is answered", async () => {
    const ledger = heldLedger();
    const gw = clockedGateway(CONFIG, { LIMIT_LEDGER: ledger.ns });
    // Warm the policy snapshot with another address, so the twenty below reach the rate-limit step at once.
    expect((await gw.call(gatewayRequest("/warm", { ip: uniqueIp() }), { settle: true })).status).toBe(200);
    const before = ledger.state.grants;
    ledger.state.hold = true;
    const ip = uniqueIp();
    const answers = Array.from({ length: 20 }, () => gw.call(gatewayRequest("/x", { ip }), { settle: true }));
    await eventually(() => ledger.state.grants > before, "the first request asks the ledger");
    // Every request is waiting now (the path to the ledger is synchronous once the policy is held): one ask.
    await Promise.resolve();
    expect(ledger.state.grants - before).toBe(1);
    ledger.state.hold = false;
    ledger.releaseAll();
    expect((await Promise.all(answers)).map((r) => r.status)).toEqual(Array(20).fill(200));
  });

  it("does not join an ask older than the age guard: the next request asks again and is answered", async () => {
    const ledger = heldLedger();
    const gw = clockedGateway(CONFIG, { LIMIT_LEDGER: ledger.ns });
    expect((await gw.call(gatewayRequest("/warm", { ip: uniqueIp() }), { settle: true })).status).toBe(200);
    const ip = uniqueIp();
    ledger.state.hold = true;
    const before = ledger.state.grants;
    // An ask that never settles (its request's context was torn down, say).
    const stranded = gw.call(gatewayRequest("/x", { ip }));
    await eventually(() => ledger.state.grants === before + 1, "the first request asks the ledger");
    ledger.state.hold = false;

    gw.clock.nowMs += MAX_FLIGHT_MS;
    const next = gw.call(gatewayRequest("/x", { ip }), { settle: true });
    await eventually(() => ledger.state.grants === before + 2, "a request past the age guard sends its own ask");
    expect((await next).status).toBe(200);

    ledger.releaseAll();
    expect((await stranded).status).toBe(200);
  });

  it("joins an ask younger than the age guard", async () => {
    const ledger = heldLedger();
    const gw = clockedGateway(CONFIG, { LIMIT_LEDGER: ledger.ns });
    expect((await gw.call(gatewayRequest("/warm", { ip: uniqueIp() }), { settle: true })).status).toBe(200);
    const ip = uniqueIp();
    ledger.state.hold = true;
    const before = ledger.state.grants;
    const first = gw.call(gatewayRequest("/x", { ip }));
    await eventually(() => ledger.state.grants === before + 1, "the first request asks the ledger");
    gw.clock.nowMs += MAX_FLIGHT_MS - 1;
    const second = gw.call(gatewayRequest("/x", { ip }));
    await Promise.resolve();
    expect(ledger.state.grants).toBe(before + 1);
    ledger.state.hold = false;
    ledger.releaseAll();
    expect([(await first).status, (await second).status]).toEqual([200, 200]);
  });
});
