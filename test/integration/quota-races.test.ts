// Storage quotas through the Worker where an upload races something (issue
// 23 items 2 and 7): a same-size re-upload whose body is still coming while a
// delete of the object lands, shadow mode past the hard quota, and the
// configured reservation_ttl_s reaching the quota object. Bodies are held
// open by the test (a stream it releases), never by sleeping.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { callGateway, clockedGateway, gatewayRequest, originLog, unique } from "../helpers";
import { testConfig, tenantWithKey as newTenantWithKey } from "./admin-helpers";

const ROUTES = [
  { method: "PUT", path: "/objects/:object", quota: "store" },
  { method: "DELETE", path: "/objects/:object", quota: "release" },
];
const CONFIG = testConfig({ routes: ROUTES });

function quotaStub(tenant: string) {
  return env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant));
}

const tenantWithKey = (quota: Record<string, unknown>) => newTenantWithKey(CONFIG, { quota }, "races");

/**
 * A body of `bytes` bytes sent in two halves: `reading` resolves when the
 * gateway starts reading it (the upload has passed the quota step and is
 * being forwarded); the second half waits for `finish()`.
 */
function heldBody(bytes: number): { body: ReadableStream<Uint8Array>; reading: Promise<void>; finish: () => void } {
  let started!: () => void;
  const reading = new Promise<void>((resolve) => (started = resolve));
  let finish!: () => void;
  const gate = new Promise<void>((resolve) => (finish = resolve));
  const half = Math.floor(bytes / 2);
  let step = 0;
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (step === 0) {
          step = 1;
          started();
          controller.enqueue(new Uint8Array(half));
          return;
        }
        await gate;
        controller.enqueue(new Uint8Array(bytes - half));
        controller.close();
      },
    },
    { highWaterMark: 0 },
  );
  return { body, reading, finish };
}

function put(key: string, object: string, bytes: number, body: BodyInit, config: unknown = CONFIG, tag?: string): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, "content-length": String(bytes) };
  if (tag !== undefined) headers["x-test-tag"] = tag;
  return callGateway(gatewayRequest(`/objects/${object}`, { method: "PUT", ip: "198.51.100.60", headers, body }), { TOLLGATE: config }, { settle: true });
}

function del(key: string, object: string): Promise<Response> {
  return callGateway(gatewayRequest(`/objects/${object}`, { method: "DELETE", ip: "198.51.100.60", headers: { authorization: `Bearer ${key}` } }), { TOLLGATE: CONFIG }, { settle: true });
}

describe("a same-size re-upload racing a delete (item 2)", () => {
  it("counts the object again when the re-upload's body completes after the delete", async () => {
    const { tenant, key } = await tenantWithKey({ bytes: { hard: 1000 } });
    expect((await put(key, "x", 800, new Uint8Array(800))).status).toBe(200);
    const slow = heldBody(800);
    const pending = put(key, "x", 800, slow.body);
    await slow.reading;
    expect((await del(key, "x")).status).toBe(200);
    expect(await quotaStub(tenant).usage()).toMatchObject({ bytes: 0, objects: 0 });
    slow.finish();
    expect((await pending).status).toBe(200);
    // The origin holds x at 800 bytes again: so do the counters.
    expect(await quotaStub(tenant).usage()).toEqual({ bytes: 800, objects: 1, reserved_bytes: 0, reserved_objects: 0, reservations: 0 });
  });
});

describe("shadow mode (item 7)", () => {
  it("counts an upload past the hard quota that it forwards, and marks it Tollgate-Shadow: quota_exceeded", async () => {
    const { tenant, key } = await tenantWithKey({ bytes: { hard: 1000 } });
    const shadow = { ...CONFIG, mode: "shadow" };
    const tag = unique("shadow");
    const first = await put(key, "a", 600, new Uint8Array(600), shadow, tag);
    expect(first.status).toBe(200);
    expect(first.headers.get("tollgate-shadow")).toBeNull();
    const second = await put(key, "b", 600, new Uint8Array(600), shadow, tag);
    expect(second.status).toBe(200);
    expect(second.headers.get("tollgate-shadow")).toBe("quota_exceeded");
    expect((await originLog(tag)).map((r) => r.body_bytes)).toEqual([600, 600]);
    expect(await quotaStub(tenant).usage()).toEqual({ bytes: 1200, objects: 2, reserved_bytes: 0, reserved_objects: 0, reservations: 0 });
    // Switched to enforce, the counters are true: the next upload is refused.
    const enforced = await put(key, "c", 1, new Uint8Array(1));
    expect(enforced.status).toBe(403);
  });
});

describe("reservation_ttl_s", () => {
  it("reaches the quota object: a reservation expires reservation_ttl_s after it was made, not after the default 900 s", async () => {
    const { tenant, key } = await tenantWithKey({});
    const gateway = clockedGateway(testConfig({ routes: ROUTES, reservation_ttl_s: 120 }));
    const reservedAtMs = gateway.clock.nowMs;
    const slow = heldBody(100);
    const pending = gateway.call(
      gatewayRequest("/objects/ttl", { method: "PUT", ip: "198.51.100.61", headers: { authorization: `Bearer ${key}`, "content-length": "100" }, body: slow.body }),
      { settle: true },
    );
    await slow.reading;
    const held = await runInDurableObject(quotaStub(tenant), async (_, state) => ({
      expiresAt: state.storage.sql.exec<{ expires_at: number }>("SELECT expires_at FROM reservations").toArray().map((r) => r.expires_at),
      alarm: await state.storage.getAlarm(),
    }));
    expect(held).toEqual({ expiresAt: [reservedAtMs + 120_000], alarm: reservedAtMs + 120_000 });
    slow.finish();
    expect((await pending).status).toBe(200);
    expect(await quotaStub(tenant).usage()).toMatchObject({ bytes: 100, reservations: 0 });
    await runInDurableObject(quotaStub(tenant), (_, state) => state.storage.deleteAlarm());
  });
});
