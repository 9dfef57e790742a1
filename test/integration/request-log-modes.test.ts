// The request log's modes and the per-second refusal cap through the data
// plane (docs/operations.md, "The request log"): console.log is
// the writer, the gateway's clock is the test's.
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseConfig } from "../../src/config";
import { clockedGateway, gatewayRequest, unique, uniqueIp } from "../helpers";
import { adminCall, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

afterEach(() => {
  vi.restoreAllMocks();
});

function capture(): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  vi.spyOn(console, "log").mockImplementation((line: unknown) => {
    lines.push(JSON.parse(String(line)) as Record<string, unknown>);
  });
  return lines;
}

const T0 = 1_900_000_000_000;

describe("request_log", () => {
  it("writes at most 51 lines for 1,000 refusals in one second, and the summary counts every one by decision", async () => {
    const gw = clockedGateway(testConfig({ request_log: "all", anonymous: "deny" }), {}, T0);
    const addresses = Array.from({ length: 200 }, () => uniqueIp());
    const lines = capture();
    for (let i = 0; i < 1000; i++) {
      gw.clock.nowMs = T0 + i;
      const headers: Record<string, string> = i % 2 === 1 ? { authorization: "Bearer not-a-key" } : {};
      const response = await gw.call(gatewayRequest("/flood", { ip: addresses[i % 200]!, headers }));
      expect(response.status).toBe(401);
    }
    await gw.runtime.requestLog.flush();
    expect(lines.length).toBeLessThanOrEqual(51);
    const requests = lines.filter((l) => l.event === "request");
    const summary = lines.find((l) => l.event === "refusals_summarised");
    expect(requests).toHaveLength(50);
    expect(summary).toMatchObject({ window_start_unix_ms: T0, window_s: 1, logged: 50, summarised: 950 });
    const byDecision = summary!.by_decision as Record<string, number>;
    for (const decision of ["credential_required", "invalid_credential"]) {
      expect(byDecision[decision]! + requests.filter((l) => l.decision === decision).length).toBe(500);
    }
    // Addresses appear as keyed digests only.
    const callers = Object.keys(summary!.top_callers as Record<string, number>);
    expect(callers.length).toBeGreaterThan(0);
    for (const caller of callers) expect(caller).toMatch(/^hmac:[0-9a-f]{64}$/);
    const text = JSON.stringify(lines);
    for (const ip of addresses) expect(text).not.toContain(ip);
  }, 60_000);

  it("gives every admitted request its line in \"all\" mode while refusals are capped", async () => {
    const gw = clockedGateway(testConfig({ request_log: "all", request_log_refusals_per_s: 1, categories: { request: { limits: { ip: [{ count: 3, window_s: 3600 }] } } } }), {}, T0);
    const ip = uniqueIp();
    const lines = capture();
    // Not settled: a summarised refusal keeps a timer to its second's end in waitUntil, which settling would wait out.
    for (let i = 0; i < 8; i++) await (await gw.call(gatewayRequest("/mixed", { ip }))).arrayBuffer();
    await gw.runtime.requestLog.flush();
    expect(lines.filter((l) => l.decision === "admitted")).toHaveLength(3);
    expect(lines.filter((l) => l.decision === "rate_limited")).toHaveLength(1);
    expect(lines.filter((l) => l.event === "refusals_summarised")).toEqual([expect.objectContaining({ summarised: 4, by_decision: { rate_limited: 4 } })]);
  });

  it("names a key refused by its block as key:<id> in the summary, as traffic and alerts name it", async () => {
    const config = testConfig({ request_log: "all", request_log_refusals_per_s: 1 });
    const tenant = unique("log-blocked");
    await createTenant(config, tenant);
    const { key, id } = await mintKey(config, tenant);
    await jsonOf(await adminCall("POST", "/blocks", config, { body: { target: `key:${id}` } }), 201);
    const gw = clockedGateway(config, {}, T0);
    const lines = capture();
    for (let i = 0; i < 4; i++) {
      gw.clock.nowMs = T0 + i;
      expect((await gw.call(gatewayRequest("/blocked", { ip: uniqueIp(), headers: { authorization: `Bearer ${key}` } }))).status).toBe(403);
    }
    await gw.runtime.requestLog.flush();
    const summary = lines.find((l) => l.event === "refusals_summarised");
    expect(summary).toMatchObject({ summarised: 3, by_decision: { blocked: 3 }, top_callers: { [`key:${id}`]: 3 } });
  });

  it("\"refusals\" writes the refusals' lines and no admitted one", async () => {
    const gw = clockedGateway(testConfig({ request_log: "refusals", categories: { request: { limits: { ip: [{ count: 1, window_s: 3600 }] } } } }), {}, T0);
    const ip = uniqueIp();
    const lines = capture();
    for (let i = 0; i < 3; i++) await gw.call(gatewayRequest("/r", { ip }), { settle: true });
    expect(lines.map((l) => l.decision)).toEqual(["rate_limited", "rate_limited"]);
  });

  it("\"sampled\" writes an admitted line by request_log_sample: none at 0, every one at 1", async () => {
    for (const [sample, expected] of [[0, 0], [1, 4]] as const) {
      const gw = clockedGateway(testConfig({ request_log: "sampled", request_log_sample: sample }), {}, T0);
      const lines = capture();
      for (let i = 0; i < 4; i++) await gw.call(gatewayRequest("/s", { ip: uniqueIp() }), { settle: true });
      expect(lines.filter((l) => l.decision === "admitted")).toHaveLength(expected);
      vi.restoreAllMocks();
    }
  });

  it("\"off\" (and false) writes nothing, refusals and summaries included", async () => {
    for (const mode of ["off", false] as const) {
      const gw = clockedGateway(testConfig({ request_log: mode, request_log_refusals_per_s: 0, anonymous: "deny" }), {}, T0);
      const spy = vi.spyOn(console, "log").mockImplementation(() => {});
      for (let i = 0; i < 5; i++) await gw.call(gatewayRequest("/o", { ip: uniqueIp() }), { settle: true });
      await gw.runtime.requestLog.flush();
      expect(spy).not.toHaveBeenCalled();
      vi.restoreAllMocks();
    }
  });

  it("accepts the modes and true as \"all\", and names the field of anything else", () => {
    const modeOf = (value: unknown) => {
      const parsed = parseConfig({ request_log: value });
      return parsed.ok ? parsed.config.requestLog : parsed.field;
    };
    expect([modeOf(undefined), modeOf(true), modeOf(false), modeOf("refusals"), modeOf("sampled")]).toEqual(["all", "all", "off", "refusals", "sampled"]);
    expect(modeOf("some")).toBe("request_log");
    const sample = parseConfig({ request_log_sample: 1.5 });
    expect(sample.ok ? null : sample.field).toBe("request_log_sample");
    const cap = parseConfig({ request_log_refusals_per_s: -1 });
    expect(cap.ok ? null : cap.field).toBe("request_log_refusals_per_s");
  });
});
