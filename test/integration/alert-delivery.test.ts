// Alert delivery at its edges, on clocks the test holds: the 24-hour retry
// window to the millisecond, retry delays that grow with each attempt (read
// from the message's own retry call, which the pool's queue result does not
// report), a webhook's redirect answered as it is and never followed, a
// malformed message dropped, an alert given up on never sent again; and the
// alerts raised once per period (ledger.unavailable once a minute, block.hit
// once per block).
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { type AlertMessage, newAlertId } from "../../src/alerts/alert";
import { ALERT_RETRY_WINDOW_MS, deliverAlerts } from "../../src/alerts/deliver";
import type { Bindings } from "../../src/exchange";
import { clockedGateway, eventually, gatewayRequest, unique, uniqueIp } from "../helpers";
import { adminCall, jsonOf, testConfig } from "./admin-helpers";
import { FAILING_LEDGER, recordingQueue } from "./alert-helpers";

const SECRET = "whsec-test-0123456789abcdef";
const BASE_S = 5;

function hookConfig(url: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return testConfig({ alerts: { webhook_url: url, retry_base_s: BASE_S }, ...extra });
}

function webhook(name: string, statuses: string): string {
  return `${env.ORIGIN_URL}/__origin/webhook/${name}?statuses=${statuses}`;
}

async function received(name: string): Promise<unknown[]> {
  return (await (await fetch(`${env.ORIGIN_URL}/__origin/webhook/${name}`)).json()) as unknown[];
}

function alertAt(atMs: number): AlertMessage {
  return { id: newAlertId(), type: "quota.soft_exceeded", at: new Date(atMs).toISOString(), tenant: unique("alerted"), data: { quota_kind: "bytes", usage: 950, limit: 1000 } };
}

/** What the handler did with one message: acked, or retried with which delay. */
interface Handled {
  acked: boolean;
  retries: (number | undefined)[];
}

/** Runs the queue handler on one message at `nowMs`, recording its ack or its retry's delay. */
async function deliverAt(config: Record<string, unknown>, body: unknown, nowMs: number, secret: string | null = SECRET): Promise<Handled> {
  const handled: Handled = { acked: false, retries: [] };
  const message = {
    id: unique("msg"),
    timestamp: new Date(nowMs),
    attempts: 1,
    body,
    ack: () => void (handled.acked = true),
    retry: (options?: { delaySeconds?: number }) => void handled.retries.push(options?.delaySeconds),
  };
  const batch = { queue: "tollgate-alerts", messages: [message], ackAll: () => {}, retryAll: () => {} } as unknown as MessageBatch<unknown>;
  await deliverAlerts(batch, { ...env, TOLLGATE: config, ALERT_SECRET: secret ?? undefined } as unknown as Bindings, () => nowMs);
  return handled;
}

async function stored(id: string): Promise<{ state: string; attempts: { outcome: string; status: number | null }[] }> {
  const row = await env.DB.prepare("SELECT state FROM alerts WHERE id = ?").bind(id).first<{ state: string }>();
  const attempts = await env.DB.prepare("SELECT outcome, status FROM alert_attempts WHERE alert_id = ? ORDER BY attempt").bind(id).all<{ outcome: string; status: number | null }>();
  return { state: row?.state ?? "missing", attempts: attempts.results };
}

describe("alert delivery", () => {
  it("retries an alert undelivered up to 24 h after it was raised, then marks it expired, retries it no more, and never sends it again", async () => {
    const name = unique("hook-expiry");
    const config = hookConfig(webhook(name, "500,500,500"));
    const raisedMs = Date.now();
    const alert = alertAt(raisedMs);
    expect(await deliverAt(config, alert, raisedMs + ALERT_RETRY_WINDOW_MS - 1)).toMatchObject({ acked: false, retries: [expect.any(Number)] });
    expect((await stored(alert.id)).state).toBe("pending");
    expect(await deliverAt(config, alert, raisedMs + ALERT_RETRY_WINDOW_MS)).toEqual({ acked: true, retries: [] });
    expect(await stored(alert.id)).toEqual({
      state: "expired",
      attempts: [
        { outcome: "http_500", status: 500 },
        { outcome: "http_500", status: 500 },
      ],
    });
    // The queue brings it back (at least once): an expired alert is acked unsent.
    expect(await deliverAt(config, alert, raisedMs + ALERT_RETRY_WINDOW_MS + 1)).toEqual({ acked: true, retries: [] });
    expect(await received(name)).toHaveLength(2);
  });

  it("waits longer before each retry: retry_base_s, then twice it, then four times", async () => {
    const config = hookConfig(webhook(unique("hook-backoff"), "500,500,500"));
    const nowMs = Date.now();
    const alert = alertAt(nowMs);
    const delays: (number | undefined)[] = [];
    for (let attempt = 0; attempt < 3; attempt++) delays.push(...(await deliverAt(config, alert, nowMs + attempt)).retries);
    expect(delays).toEqual([BASE_S, 2 * BASE_S, 4 * BASE_S]);
  });

  it("waits longer each time while ALERT_SECRET is missing, sending nothing", async () => {
    const name = unique("hook-unsigned");
    const config = hookConfig(webhook(name, ""));
    const nowMs = Date.now();
    const alert = alertAt(nowMs);
    const delays: (number | undefined)[] = [];
    for (let attempt = 0; attempt < 3; attempt++) delays.push(...(await deliverAt(config, alert, nowMs + attempt, null)).retries);
    expect(delays).toEqual([BASE_S, 2 * BASE_S, 4 * BASE_S]);
    expect(await received(name)).toHaveLength(0);
  });

  it("does not follow a webhook's redirect: the 302 is its answer, and the alert is given up on", async () => {
    // The recording origin answers this path 302 to another of its paths (one that would answer 404 to a follower).
    const config = hookConfig(`${env.ORIGIN_URL}/__origin/jwks-redirect/${unique("hook-moved")}`);
    const nowMs = Date.now();
    const alert = alertAt(nowMs);
    expect(await deliverAt(config, alert, nowMs)).toEqual({ acked: true, retries: [] });
    expect(await stored(alert.id)).toEqual({ state: "failed", attempts: [{ outcome: "http_302", status: 302 }] });
  });

  it("never sends again an alert it gave up on, when the queue brings its message back", async () => {
    const name = unique("hook-gone");
    const config = hookConfig(webhook(name, "410,200"));
    const nowMs = Date.now();
    const alert = alertAt(nowMs);
    expect(await deliverAt(config, alert, nowMs)).toEqual({ acked: true, retries: [] });
    expect(await deliverAt(config, alert, nowMs + 1)).toEqual({ acked: true, retries: [] });
    expect(await received(name)).toHaveLength(1);
    expect((await stored(alert.id)).state).toBe("failed");
  });

  it("drops a queue message that is not an alert, acking it rather than retrying it for ever", async () => {
    const config = hookConfig(webhook(unique("hook-junk"), ""));
    const bodies: unknown[] = ["not json at all", { id: "alt_nothex", type: "block.hit", at: new Date().toISOString() }, { hello: 1 }, null];
    const batch = createMessageBatch<unknown>(
      "tollgate-alerts",
      bodies.map((body, i) => ({ id: `junk-${i}`, timestamp: new Date(), attempts: 1, body })),
    );
    const ctx = createExecutionContext();
    await worker.queue!(batch, { ...env, TOLLGATE: config, ALERT_SECRET: SECRET } as unknown as Env, ctx);
    const result = await getQueueResult(batch, ctx);
    expect(result.retryMessages).toEqual([]);
    expect([...result.explicitAcks].sort()).toEqual(["junk-0", "junk-1", "junk-2", "junk-3"]);
  });
});

describe("alerts raised once per period", () => {
  it("raises ledger.unavailable at most once a minute, and again once the minute has passed", async () => {
    const config = hookConfig(webhook(unique("hook-ledger-minute"), ""), {
      global: { on_error: "local" },
      categories: { request: { limits: { ip: [{ count: 1000, window_s: 60, scope: "global" }] } } },
    });
    const { ALERTS, sent } = recordingQueue();
    const gateway = clockedGateway(config, { ALERTS, LIMIT_LEDGER: FAILING_LEDGER, ALERT_SECRET: SECRET });
    const ip = uniqueIp();
    const startMs = gateway.clock.nowMs;
    const ledgerAlerts = () => sent.filter((a) => a.type === "ledger.unavailable").length;
    for (const offsetMs of [0, 1, 30_000, 59_999]) {
      gateway.clock.nowMs = startMs + offsetMs;
      expect((await gateway.call(gatewayRequest("/ledger-minute", { ip }), { settle: true })).status).toBe(200);
    }
    await eventually(() => ledgerAlerts() === 1, "the first failure raises one alert");
    gateway.clock.nowMs = startMs + 60_000;
    expect((await gateway.call(gatewayRequest("/ledger-minute", { ip }), { settle: true })).status).toBe(200);
    await eventually(() => ledgerAlerts() === 2, "a minute later the ledger still failing raises a second");
    expect(sent.map((a) => a.at)).toEqual([new Date(startMs).toISOString(), new Date(startMs + 60_000).toISOString()]);
  });

  it("raises block.hit once per block: a second block's first hit in the same hour raises its own", async () => {
    const config = hookConfig(webhook(unique("hook-two-blocks"), ""));
    const [first, second] = [uniqueIp(), uniqueIp()];
    const ids: number[] = [];
    for (const ip of [first, second]) ids.push((await jsonOf<{ id: number }>(await adminCall("POST", "/blocks", config, { body: { target: `ip:${ip}`, reason: "test" } }), 201)).id);
    const { ALERTS, sent } = recordingQueue();
    const gateway = clockedGateway(config, { ALERTS, ALERT_SECRET: SECRET });
    for (const ip of [first, second, first, second]) expect((await gateway.call(gatewayRequest("/blocked", { ip }), { settle: true })).status).toBe(403);
    await eventually(() => sent.length === 2, "one alert per block");
    expect(sent.map((a) => [a.type, a.data.block_id])).toEqual([
      ["block.hit", ids[0]],
      ["block.hit", ids[1]],
    ]);
  });
});
