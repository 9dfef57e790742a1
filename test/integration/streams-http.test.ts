// Issue 23 item 3: an `Upgrade: websocket` request pays what its route
// charges, a response_charge reserve included, and when the origin answers
// it with anything but 101 (most frameworks ignore `Upgrade`) the answer is
// settled as an HTTP request's: the response charge, the in-flight slot, the
// request log. Against the recording origin (`x-origin-ignore-upgrade: 1`
// makes it answer an upgrade as a plain GET) on a clock the test holds.
import { afterEach, describe, expect, it, vi } from "vitest";
import { clockedGateway, eventually, gatewayRequest, originLog, problemOf, unique, uniqueIp } from "../helpers";
import { testConfig } from "./admin-helpers";
import { clientOf, upgradeRequest } from "./streams-helpers";

afterEach(() => {
  vi.restoreAllMocks();
});

const PRICED = { path: "/priced/*", response_charge: { category: "tokens", header: "x-usage-total-tokens", reserve: 10 } };

function config(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return testConfig({
    routes: [PRICED],
    categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, tokens: { limits: { ip: [{ count: 100, window_s: 3600 }] } } },
    ...extra,
  });
}

/** An upgrade the origin answers as a plain GET, pricing it at `tokens`. */
function ignoredUpgrade(ip: string, tag: string, tokens: number, headers: Record<string, string> = {}): Request {
  return upgradeRequest(`/priced/${unique("chat")}`, { ip, tag, headers: { "x-origin-ignore-upgrade": "1", "x-origin-usage-header": String(tokens), ...headers } });
}

describe("an upgrade the origin answers as HTTP", () => {
  it("is priced by its answer: of five upgrades costing 90 tokens each under a 100-token limit, only the first two are admitted", async () => {
    const gw = clockedGateway(config());
    const ip = uniqueIp();
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const tag = unique("priced");
      const res = await gw.call(ignoredUpgrade(ip, tag, 90), { settle: true });
      statuses.push(res.status);
      if (res.status === 200) {
        expect(res.headers.get("x-origin-seen")).toBe("1");
        expect(res.webSocket).toBeNull();
      } else {
        expect(await problemOf(res)).toMatchObject({ code: "rate_limited", category: "tokens" });
        expect(await originLog(tag)).toEqual([]);
      }
    }
    // The first: 10 reserved, then 80 more as debt (90 of 100). The second fits its reserve (100), then owes 80: the rest wait.
    expect(statuses).toEqual([200, 200, 429, 429, 429]);
    expect(gw.runtime.streams.countOf(`ip:${ip}`)).toBe(0);
  });

  it("gives back what its answer did not use", async () => {
    const gw = clockedGateway(config());
    const ip = uniqueIp();
    // Each answer costs 1 of its 10 reserved: 100 tokens last for far more than ten.
    for (let i = 0; i < 30; i++) expect((await gw.call(ignoredUpgrade(ip, unique("cheap"), 1), { settle: true })).status).toBe(200);
  });

  it("holds an in-flight slot until the origin has answered, and writes the request log line", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => {
      lines.push(String(line));
    });
    const gw = clockedGateway(config({ in_flight: { per_credential: 1 }, request_log: true }));
    const ip = uniqueIp();
    const slow = gw.call(ignoredUpgrade(ip, unique("slow"), 1, { "x-origin-delay-ms": "300" }), { settle: true });
    await eventually(() => gw.runtime.inFlight.countOf(`ip:${ip}`) === 1, "the upgrade holds the caller's one slot");
    expect((await problemOf(await gw.call(gatewayRequest("/plain", { ip }), { settle: true }))).code).toBe("too_many_in_flight");
    expect((await slow).status).toBe(200);
    await eventually(() => gw.runtime.inFlight.countOf(`ip:${ip}`) === 0, "the slot is given back");
    const logged = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.event === "request" && typeof line.path === "string" && line.path.startsWith("/priced/"));
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ method: "GET", status: 200, decision: "admitted" });
  });
});

describe("an upgrade the origin accepts", () => {
  it("pays its route's reserve at open, which stands (a stream has no answer to price)", async () => {
    const gw = clockedGateway(config({ routes: [{ ...PRICED, response_charge: { ...PRICED.response_charge, reserve: 60 } }] }));
    const ip = uniqueIp();
    const first = clientOf(await gw.call(upgradeRequest("/priced/ws", { ip, tag: unique("open") })));
    expect(gw.runtime.inFlight.countOf(`ip:${ip}`)).toBe(0);
    const tag = unique("second");
    expect(await problemOf(await gw.call(upgradeRequest("/priced/ws", { ip, tag })))).toMatchObject({ code: "rate_limited", category: "tokens" });
    expect(await originLog(tag)).toEqual([]);
    first.socket.close(1000, "done");
    await first.closing();
  });
});
