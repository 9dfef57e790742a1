import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { callGateway, type EnvOverrides, gatewayRequest, originLog, problemOf, unique } from "../helpers";
import { countingQuota, testConfig, tenantWithKey as newTenantWithKey } from "./admin-helpers";

const CONFIG = testConfig({
  routes: [
    { method: "PUT", path: "/objects/:object", charges: { upload: 1 }, quota: "store" },
    { method: "DELETE", path: "/objects/:object", quota: "release" },
  ],
  categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, request: { limits: { key: [{ count: 10_000, window_s: 1 }], tenant: [{ count: 10_000, window_s: 1 }] } } },
});

interface Upload {
  key: string;
  object: string;
  bytes: number;
  tag?: string;
  headers?: Record<string, string>;
  body?: BodyInit;
  overrides?: EnvOverrides;
}

function upload(u: Upload): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${u.key}`, "content-length": String(u.bytes), ...u.headers };
  if (u.tag !== undefined) headers["x-test-tag"] = u.tag;
  return callGateway(
    gatewayRequest(`/objects/${u.object}`, { method: "PUT", ip: "198.51.100.40", headers, body: u.body ?? new Uint8Array(u.bytes) }),
    { TOLLGATE: CONFIG, ...u.overrides },
    { settle: true },
  );
}

function remove(key: string, object: string, headers: Record<string, string> = {}): Promise<Response> {
  return callGateway(
    gatewayRequest(`/objects/${object}`, { method: "DELETE", ip: "198.51.100.40", headers: { authorization: `Bearer ${key}`, ...headers } }),
    { TOLLGATE: CONFIG },
    { settle: true },
  );
}

function usageOf(tenant: string) {
  return env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant)).usage();
}

const tenantWithKey = (quota: Record<string, unknown>) => newTenantWithKey(CONFIG, { quota }, "quota");

describe("storage quotas at the edge", () => {
  it("refuses an upload over the hard quota with 403 quota_exceeded, before the origin sees it", async () => {
    const { tenant, key } = await tenantWithKey({ bytes: { hard: 1000 } });
    expect((await upload({ key, object: "a.bin", bytes: 600 })).status).toBe(200);
    const tag = unique("refused");
    const res = await upload({ key, object: "b.bin", bytes: 500, tag });
    expect(res.status).toBe(403);
    const body = await problemOf(res);
    expect(body).toMatchObject({ code: "quota_exceeded", kind: "bytes", quota: 1000, usage: 600, requested: 500 });
    expect(typeof body.hint).toBe("string");
    expect(res.headers.get("retry-after")).toBeNull();
    expect(await originLog(tag)).toHaveLength(0);
    expect(await usageOf(tenant)).toMatchObject({ bytes: 600, objects: 1, reserved_bytes: 0 });
    // One quota_hard_exceeded audit event, written in the background; a second refusal in the window adds none.
    expect((await upload({ key, object: "c.bin", bytes: 500 })).status).toBe(403);
    const events = await env.DB.prepare("SELECT actor, detail FROM audit_events WHERE tenant = ? AND kind = 'quota_hard_exceeded'").bind(tenant).all<{ actor: string; detail: string }>();
    expect(events.results).toHaveLength(1);
    expect(events.results[0]!.actor).toBe("quota");
    expect(JSON.parse(events.results[0]!.detail)).toMatchObject({ quota_kind: "bytes", usage: 600, limit: 1000, requested: 500 });
  });

  it("admits exactly 10 of 30 concurrent 100-byte uploads against a 1,000-byte quota", async () => {
    const { tenant, key } = await tenantWithKey({ bytes: { hard: 1000 } });
    const tag = unique("race");
    const responses = await Promise.all(Array.from({ length: 30 }, (_, i) => upload({ key, object: `obj-${i}`, bytes: 100, tag })));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 403)).toHaveLength(20);
    expect(await usageOf(tenant)).toMatchObject({ bytes: 1000, objects: 10, reserved_bytes: 0, reservations: 0 });
    const seen = await originLog(tag);
    expect(seen).toHaveLength(10);
    const admitted = responses.map((r, i) => (r.status === 200 ? `/objects/obj-${i}` : null)).filter((p) => p !== null).sort();
    expect(seen.map((s) => s.path).sort()).toEqual(admitted);
  });

  it("counts an object the tenant already owns once (dedup)", async () => {
    const { tenant, key } = await tenantWithKey({ bytes: { hard: 250 } });
    expect((await upload({ key, object: "same", bytes: 200 })).status).toBe(200);
    // Over the quota if it counted again; a dedup hit costs nothing.
    expect((await upload({ key, object: "same", bytes: 200 })).status).toBe(200);
    expect(await usageOf(tenant)).toMatchObject({ bytes: 200, objects: 1 });
  });

  it("gives the bytes back on delete, so the next upload fits", async () => {
    const { tenant, key } = await tenantWithKey({ bytes: { hard: 300 }, objects: { hard: 1 } });
    expect((await upload({ key, object: "first", bytes: 300 })).status).toBe(200);
    const refused = await upload({ key, object: "second", bytes: 10 });
    expect(refused.status).toBe(403);
    expect((await problemOf(refused)).kind).toBe("bytes");
    expect((await remove(key, "first")).status).toBe(200);
    expect(await usageOf(tenant)).toMatchObject({ bytes: 0, objects: 0 });
    expect((await upload({ key, object: "second", bytes: 300 })).status).toBe(200);
    expect(await usageOf(tenant)).toMatchObject({ bytes: 300, objects: 1 });
  });

  it("keeps the bytes counted when the origin refuses the delete", async () => {
    const { tenant, key } = await tenantWithKey({ bytes: { hard: 300 } });
    expect((await upload({ key, object: "kept", bytes: 100 })).status).toBe(200);
    expect((await remove(key, "kept", { "x-origin-status": "500" })).status).toBe(500);
    expect(await usageOf(tenant)).toMatchObject({ bytes: 100, objects: 1 });
  });

  it("releases the reservation when the origin answers 500", async () => {
    const { tenant, key } = await tenantWithKey({ bytes: { hard: 1000 } });
    const res = await upload({ key, object: "fails", bytes: 400, headers: { "x-origin-status": "500" } });
    expect(res.status).toBe(500);
    expect(await usageOf(tenant)).toMatchObject({ bytes: 0, objects: 0, reserved_bytes: 0, reservations: 0 });
  });

  it("releases the reservation when the origin cannot be reached (502), so the bytes fit again", async () => {
    const { tenant, key } = await tenantWithKey({ bytes: { hard: 1000 } });
    const res = await upload({ key, object: "unreached", bytes: 600, overrides: { ORIGIN_URL: "http://127.0.0.1:1" } });
    expect(res.status).toBe(502);
    expect((await problemOf(res)).code).toBe("origin_unreachable");
    expect(await usageOf(tenant)).toMatchObject({ bytes: 0, objects: 0, reserved_bytes: 0, reservations: 0 });
    expect((await upload({ key, object: "reached", bytes: 600 })).status).toBe(200);
  });

  it("releases the reservation when the client aborts mid-upload", async () => {
    const { tenant, key } = await tenantWithKey({ bytes: { hard: 1_000_000 } });
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 3) {
          controller.error(new Error("client went away"));
          return;
        }
        sent++;
        controller.enqueue(new Uint8Array(1000));
      },
    });
    const tag = unique("abort");
    const res = await upload({ key, object: "aborted", bytes: 100_000, body, tag });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(await usageOf(tenant)).toMatchObject({ bytes: 0, objects: 0, reserved_bytes: 0, reservations: 0 });
  });

  it("warns with Tollgate-Quota-Warning once usage reaches the soft quota", async () => {
    const { key } = await tenantWithKey({ bytes: { soft: 900, hard: 1000 }, objects: { soft: 2 } });
    const first = await upload({ key, object: "w1", bytes: 500 });
    expect(first.headers.get("tollgate-quota-warning")).toBeNull();
    const second = await upload({ key, object: "w2", bytes: 450 });
    expect(second.status).toBe(200);
    expect(second.headers.get("tollgate-quota-warning")).toBe("bytes 950/1000, objects 2/2");
  });

  it("requires Content-Length on uploads (411) and refuses bodies over max_request_bytes (413), forwarding neither", async () => {
    const { key } = await tenantWithKey({ bytes: { hard: 10_000 } });
    const tag = unique("lengths");
    const chunked = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new Uint8Array(10));
        controller.close();
      },
    });
    const noLength = await callGateway(
      gatewayRequest("/objects/nolen", { method: "PUT", ip: "198.51.100.41", headers: { authorization: `Bearer ${key}`, "x-test-tag": tag }, body: chunked }),
      { TOLLGATE: CONFIG },
    );
    expect(noLength.status).toBe(411);
    expect((await problemOf(noLength)).code).toBe("length_required");
    const tooBig = await upload({ key, object: "big", bytes: 2000, tag, overrides: { TOLLGATE: { ...CONFIG, max_request_bytes: 1000 } } });
    expect(tooBig.status).toBe(413);
    expect(await problemOf(tooBig)).toMatchObject({ code: "request_too_large", limit: 1000, size: 2000 });
    expect(await originLog(tag)).toHaveLength(0);
  });

  it("makes one Durable Object call before and one after an upload, and none for other requests", async () => {
    const { key } = await tenantWithKey({ bytes: { hard: 10_000 } });
    const { ns, calls } = countingQuota();
    expect((await upload({ key, object: "counted", bytes: 10, overrides: { TENANT_QUOTA: ns } })).status).toBe(200);
    expect(calls).toEqual(["reserve", "commit"]);
    calls.length = 0;
    for (let i = 0; i < 20; i++) {
      const res = await callGateway(gatewayRequest(`/objects/counted`, { ip: "198.51.100.42", headers: { authorization: `Bearer ${key}` } }), { TOLLGATE: CONFIG, TENANT_QUOTA: ns });
      expect(res.status).toBe(200);
    }
    expect(calls).toEqual([]);
  });

  it("answers uploads 503 quota_unavailable with Retry-After when the object throws, while GETs still pass", async () => {
    const { key } = await tenantWithKey({ bytes: { hard: 10_000 } });
    const broken = {
      idFromName: (name: string) => env.TENANT_QUOTA.idFromName(name),
      get: () => ({
        reserve: async () => {
          throw new Error("Durable Object reset because its code was updated.");
        },
      }),
    } as unknown as DurableObjectNamespace;
    const tag = unique("broken");
    const res = await upload({ key, object: "x", bytes: 10, tag, overrides: { TENANT_QUOTA: broken } });
    expect(res.status).toBe(503);
    expect((await problemOf(res)).code).toBe("quota_unavailable");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await originLog(tag)).toHaveLength(0);
    const get = await callGateway(gatewayRequest("/objects/x", { ip: "198.51.100.43", headers: { authorization: `Bearer ${key}` } }), { TOLLGATE: CONFIG, TENANT_QUOTA: broken });
    expect(get.status).toBe(200);
  });
});
