// Alerts: raised by the gateway onto the ALERTS queue, delivered by this
// Worker's queue handler to a webhook (the recording origin's
// /__origin/webhook/<name>, which answers a scripted status list) with a
// signature the test verifies, retried on 5xx with the same id, given up on
// a 4xx, and listed with every attempt by GET /alerts.
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import type { AlertMessage } from "../../src/alerts/alert";
import { newAlertId } from "../../src/alerts/alert";
import { backoffS, outcomeOf } from "../../src/alerts/deliver";
import { callGateway, clockedGateway, eventually, gatewayRequest, unique, uniqueIp } from "../helpers";
import { adminCall, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

const SECRET = "whsec-test-0123456789abcdef";

interface Received {
  headers: Record<string, string>;
  body: string;
  status: number;
}

function webhookConfig(name: string, statuses = "", extra: Record<string, unknown> = {}): Record<string, unknown> {
  return testConfig({ alerts: { webhook_url: `${env.ORIGIN_URL}/__origin/webhook/${name}${statuses === "" ? "" : `?statuses=${statuses}`}`, retry_base_s: 5 }, ...extra });
}

async function received(name: string): Promise<Received[]> {
  return (await (await fetch(`${env.ORIGIN_URL}/__origin/webhook/${name}`)).json()) as Received[];
}

function alertMessage(type: AlertMessage["type"] = "quota.soft_exceeded"): AlertMessage {
  return { id: newAlertId(), type, at: new Date().toISOString(), tenant: unique("alerted"), data: { quota_kind: "bytes", usage: 950, limit: 1000 } };
}

/** Runs the queue handler on one message as the queue would (attempts counts from 1), with `config` as TOLLGATE. */
async function deliver(config: Record<string, unknown>, alert: AlertMessage, attempts: number, secret: string | null = SECRET) {
  const batch = createMessageBatch<AlertMessage>("tollgate-alerts", [{ id: `msg-${alert.id}`, timestamp: new Date(), attempts, body: alert }]);
  const ctx = createExecutionContext();
  await worker.queue!(batch as MessageBatch<unknown>, { ...env, TOLLGATE: config, ALERT_SECRET: secret ?? undefined } as unknown as Env, ctx);
  return getQueueResult(batch, ctx);
}

/** Verifies `Tollgate-Signature: t=…,v1=…` over the raw body, as a receiver would. */
async function verify(header: string, body: string, secret: string): Promise<boolean> {
  const match = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  if (match === null) return false;
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  const signature = new Uint8Array(match[2]!.match(/../g)!.map((h) => parseInt(h, 16)));
  return crypto.subtle.verify("HMAC", key, signature, new TextEncoder().encode(`${match[1]}.${body}`));
}

interface ListedAlert {
  id: string;
  state: string;
  attempts: { attempt: number; outcome: string; status: number | null }[];
}

async function listed(config: Record<string, unknown>, id: string): Promise<ListedAlert | undefined> {
  const body = await jsonOf<{ alerts: ListedAlert[] }>(await adminCall("GET", "/alerts?limit=200", config), 200);
  return body.alerts.find((a) => a.id === id);
}

describe("alert delivery", () => {
  it("signs a delivery, retries an answer of 500 with backoff, and delivers once more with the same id; GET /alerts shows both attempts", async () => {
    const name = unique("hook");
    const config = webhookConfig(name, "500");
    const alert = alertMessage();
    const first = await deliver(config, alert, 1);
    // (The pool's queue result does not report a retry's delay; backoffS is pinned below.)
    expect(first.retryMessages.map((m: { msgId: string }) => m.msgId)).toEqual([`msg-${alert.id}`]);
    expect(first.explicitAcks).toEqual([]);
    const second = await deliver(config, alert, 2);
    expect(second.explicitAcks).toEqual([`msg-${alert.id}`]);

    const hits = await received(name);
    expect(hits.map((h) => h.status)).toEqual([500, 200]);
    for (const hit of hits) {
      expect(JSON.parse(hit.body)).toEqual(alert);
      expect(hit.headers["tollgate-alert-id"]).toBe(alert.id);
      expect(await verify(hit.headers["tollgate-signature"]!, hit.body, SECRET)).toBe(true);
      expect(await verify(hit.headers["tollgate-signature"]!, hit.body, "another secret")).toBe(false);
      const t = Number(/^t=(\d+)/.exec(hit.headers["tollgate-signature"]!)![1]);
      expect(Math.abs(t - Date.now() / 1000)).toBeLessThan(60);
    }
    const row = await listed(config, alert.id);
    expect(row?.state).toBe("delivered");
    expect(row?.attempts).toEqual([
      { attempt: 1, at: expect.any(String), outcome: "http_500", status: 500 },
      { attempt: 2, at: expect.any(String), outcome: "delivered", status: 200 },
    ]);

    // The queue may bring a message back (at least once): a delivered alert is not sent again.
    const again = await deliver(config, alert, 3);
    expect(again.explicitAcks).toEqual([`msg-${alert.id}`]);
    expect(await received(name)).toHaveLength(2);
  });

  it("gives up on a 4xx other than 408 and 429 and marks the alert failed", async () => {
    const name = unique("hook-404");
    const config = webhookConfig(name, "404");
    const alert = alertMessage();
    const result = await deliver(config, alert, 1);
    expect(result.explicitAcks).toEqual([`msg-${alert.id}`]);
    expect(result.retryMessages).toEqual([]);
    expect((await listed(config, alert.id))?.state).toBe("failed");
  });

  it("retries a webhook that refuses the connection, and one that answers 429", async () => {
    const closed = testConfig({ alerts: { webhook_url: "http://127.0.0.1:9/hook", retry_base_s: 5 } });
    const alert = alertMessage();
    const result = await deliver(closed, alert, 1);
    expect(result.retryMessages).toHaveLength(1);
    expect((await listed(closed, alert.id))?.attempts[0]?.outcome).toBe("unreachable");
    const busy = webhookConfig(unique("hook-429"), "429");
    const other = alertMessage();
    expect((await deliver(busy, other, 1)).retryMessages).toHaveLength(1);
  });

  it("keeps an alert pending, unsent, while ALERT_SECRET is missing, and health says so", async () => {
    const name = unique("hook-nosecret");
    const config = webhookConfig(name);
    const alert = alertMessage();
    const result = await deliver(config, alert, 1, null);
    expect(result.retryMessages).toHaveLength(1);
    expect(await received(name)).toHaveLength(0);
    const health = (await (await callGateway(gatewayRequest("/_tollgate/health"), { TOLLGATE: config, ALERT_SECRET: undefined })).json()) as { alerts?: { status: string } };
    expect(health.alerts?.status).toBe("misconfigured");
    const ok = (await (await callGateway(gatewayRequest("/_tollgate/health"), { TOLLGATE: config, ALERT_SECRET: SECRET })).json()) as { alerts?: { status: string } };
    expect(ok.alerts?.status).toBe("ok");
  });

  it("backs off exponentially to at most an hour, and reads statuses as the docs say", () => {
    expect([1, 2, 3, 4].map((n) => backoffS(n, 30))).toEqual([30, 60, 120, 240]);
    expect(backoffS(20, 30)).toBe(3600);
    expect(outcomeOf(204).kind).toBe("delivered");
    expect(outcomeOf(408).kind).toBe("retry");
    expect(outcomeOf(503).kind).toBe("retry");
    expect(outcomeOf(410).kind).toBe("refused");
    expect(outcomeOf(301).kind).toBe("refused");
  });
});

describe("raising alerts", () => {
  function recordingQueue(): { ALERTS: { send(message: unknown): Promise<void> }; sent: AlertMessage[] } {
    const sent: AlertMessage[] = [];
    return { ALERTS: { send: async (message: unknown) => void sent.push(message as AlertMessage) }, sent };
  }

  it("queues rate_limit.sustained once a caller passes the audit threshold, naming the address only by digest, and it is delivered", async () => {
    const name = unique("hook-sustained");
    const config = webhookConfig(name, "", {
      audit: { threshold_rejections: 3, window_s: 60 },
      categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, request: { limits: { ip: [{ count: 1, window_s: 60 }] } } },
    });
    const { ALERTS, sent } = recordingQueue();
    const ip = uniqueIp();
    for (let i = 0; i < 6; i++) await callGateway(gatewayRequest("/loud", { ip }), { TOLLGATE: config, ALERTS }, { settle: true });
    await eventually(() => sent.length === 1, "one alert is queued");
    const [alert] = sent;
    expect(alert).toMatchObject({ type: "rate_limit.sustained", data: { category: "request", count: 4 } });
    expect(alert!.caller).toMatch(/^hmac:[0-9a-f]{64}$/);
    expect(JSON.stringify(alert)).not.toContain(ip);
    const result = await deliver(config, alert!, 1);
    expect(result.explicitAcks).toHaveLength(1);
    expect(JSON.parse((await received(name))[0]!.body)).toEqual(alert);
  });

  it("queues at most alerts.max_per_type_per_minute of a type per minute, however many callers pass the threshold, and the next one says how many were dropped", async () => {
    const config = webhookConfig(unique("hook-cap"), "", {
      alerts: { webhook_url: `${env.ORIGIN_URL}/__origin/webhook/${unique("hook-cap")}`, max_per_type_per_minute: 2 },
      audit: { threshold_rejections: 1, window_s: 60 },
      categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, request: { limits: { ip: [{ count: 1, window_s: 60 }] } } },
    });
    const { ALERTS, sent } = recordingQueue();
    const gateway = clockedGateway(config, { ALERTS }, Date.parse("2031-05-01T10:00:05Z"));
    // Each address passes the threshold on its third request: six sustained callers in one minute.
    const loud = async (ip: string) => {
      for (let i = 0; i < 3; i++) await gateway.call(gatewayRequest("/flood", { ip }), { settle: true });
    };
    for (let i = 0; i < 6; i++) await loud(uniqueIp());
    await eventually(() => sent.length >= 2, "two alerts are queued");
    expect(sent.map((a) => [a.type, a.data.dropped])).toEqual([
      ["rate_limit.sustained", undefined],
      ["rate_limit.sustained", undefined],
    ]);
    gateway.clock.nowMs += 60_000;
    await loud(uniqueIp());
    await loud(uniqueIp());
    await eventually(() => sent.length >= 4, "the next minute's alerts are queued");
    expect(sent.slice(2).map((a) => a.data.dropped)).toEqual([4, undefined]);
  });

  it("queues one block.hit per block per hour, however many requests the block refuses", async () => {
    const config = webhookConfig(unique("hook-block"));
    const ip = uniqueIp();
    await jsonOf(await adminCall("POST", "/blocks", config, { body: { target: `ip:${ip}`, reason: "test" } }), 201);
    const { ALERTS, sent } = recordingQueue();
    for (let i = 0; i < 5; i++) expect((await callGateway(gatewayRequest("/x", { ip }), { TOLLGATE: config, ALERTS }, { settle: true })).status).toBe(403);
    await eventually(() => sent.length >= 1, "the block's alert is queued");
    expect(sent.filter((a) => a.type === "block.hit")).toHaveLength(1);
    expect(sent[0]!.data.block_id).toEqual(expect.any(Number));
  });

  it("queues quota.hard_exceeded, naming the tenant and the quota, when an upload is refused over the hard quota", async () => {
    const config = webhookConfig(unique("hook-quota"), "", { routes: [{ method: "PUT", path: "/objects/:object", quota: "store" }] });
    const tenant = unique("alert-quota");
    await createTenant(config, tenant, { quota: { bytes: { hard: 100 } } });
    const { key } = await mintKey(config, tenant);
    const { ALERTS, sent } = recordingQueue();
    const put = gatewayRequest("/objects/big", { method: "PUT", ip: uniqueIp(), headers: { authorization: `Bearer ${key}`, "content-length": "500" }, body: new Uint8Array(500) });
    expect((await callGateway(put, { TOLLGATE: config, ALERTS }, { settle: true })).status).toBe(403);
    await eventually(() => sent.length >= 1, "the quota's alert is queued");
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ type: "quota.hard_exceeded", tenant, data: { quota_kind: "bytes", limit: 100, requested: 500 } });
    expect(JSON.stringify(sent[0])).not.toContain(key);
  });

  it("queues ledger.unavailable when a global limit's ledger fails, once a minute per isolate, with the requests decided by on_error", async () => {
    const config = webhookConfig(unique("hook-ledger"), "", {
      global: { on_error: "local" },
      categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, request: { limits: { ip: [{ count: 100, window_s: 60, scope: "global" }] } } },
    });
    // The real ledger's ids, but every call on its stubs throws, as a reset object's would.
    const failing = {
      idFromName: (name: string) => env.LIMIT_LEDGER.idFromName(name),
      get: () =>
        new Proxy(
          {},
          {
            get: () => () => {
              throw new Error("Durable Object reset because its code was updated.");
            },
          },
        ),
    };
    const { ALERTS, sent } = recordingQueue();
    const ip = uniqueIp();
    for (let i = 0; i < 3; i++) {
      // on_error "local": decided on this isolate's own limits, and admitted.
      expect((await callGateway(gatewayRequest("/ledger-down", { ip }), { TOLLGATE: config, ALERTS, LIMIT_LEDGER: failing }, { settle: true })).status).toBe(200);
    }
    await eventually(() => sent.length >= 1, "the ledger's alert is queued");
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ type: "ledger.unavailable", data: { on_error: "local" } });
    expect(JSON.stringify(sent[0])).not.toContain(ip);
  });

  it("queues nothing without alerts.webhook_url", async () => {
    const config = testConfig({ categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, request: { limits: { ip: [{ count: 1, window_s: 60 }] } } }, audit: { threshold_rejections: 1, window_s: 60 } });
    const { ALERTS, sent } = recordingQueue();
    const ip = uniqueIp();
    for (let i = 0; i < 4; i++) await callGateway(gatewayRequest("/quiet", { ip }), { TOLLGATE: config, ALERTS }, { settle: true });
    expect(sent).toHaveLength(0);
  });

  it("runs the real queue: a message sent to ALERTS reaches this Worker's consumer, which records its attempt", async () => {
    const alert = alertMessage("ledger.unavailable");
    await env.ALERTS.send(alert, { contentType: "json" });
    // wrangler.toml's TOLLGATE has no webhook: the consumer records a `no_webhook` attempt and keeps the alert pending.
    await eventually(async () => (await listed(testConfig(), alert.id)) !== undefined, "the consumer recorded the alert", 10_000);
    expect((await listed(testConfig(), alert.id))?.attempts[0]?.outcome).toBe("no_webhook");
  });

  it.each([
    ["ftp://hooks.example/x"],
    ["http://hooks.example/x"],
    ["https://user:pw@hooks.example/x"],
    ["https://hooks.example/x#frag"],
    ["https://169.254.169.254/latest/meta-data"],
    ["https://10.0.0.1/hook"],
    ["https://[fd00::1]/hook"],
  ])("refuses %s as alerts.webhook_url", async (url) => {
    const res = await callGateway(gatewayRequest("/x", { ip: uniqueIp() }), { TOLLGATE: testConfig({ alerts: { webhook_url: url } }) });
    expect(res.status).toBe(500);
    expect(await res.json()).toMatchObject({ code: "config_invalid", field: "alerts.webhook_url" });
  });
});
