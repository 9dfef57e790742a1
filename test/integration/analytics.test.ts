// Workers Analytics Engine: the local binding accepts writeDataPoint and
// stores nothing, so the tests hand the Worker a wrapping dataset that
// records every point, and check one point per request with the fields the
// docs' SQL reads.
import { describe, expect, it, vi } from "vitest";
import { callGateway, eventually, gatewayRequest, unique, uniqueIp } from "../helpers";
import { adminCall, createTenant, jsonOf, keyedCall, mintKey, testConfig } from "./admin-helpers";

interface Point {
  indexes?: string[];
  blobs?: (string | null)[];
  doubles?: number[];
}

function recordingDataset(): { ANALYTICS: { writeDataPoint(p: Point): void }; points: Point[] } {
  const points: Point[] = [];
  return { ANALYTICS: { writeDataPoint: (p: Point) => void points.push(p) }, points };
}

const CONFIG = testConfig({
  routes: [{ method: "PUT", path: "/things/:id", charges: { upload: 3 } }],
  categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, request: { limits: { ip: [{ count: 1, window_s: 60 }] } } },
});

describe("Analytics Engine data points", () => {
  it("writes one point per admitted request: tenant, decision, category, route, caller, status, bytes, duration, cost", async () => {
    const tenant = unique("ae");
    await createTenant(CONFIG, tenant);
    const { key, id } = await mintKey(CONFIG, tenant);
    const { ANALYTICS, points } = recordingDataset();
    const sentAtMs = Date.now();
    const res = await callGateway(gatewayRequest("/things/a", { method: "PUT", ip: "198.51.100.90", headers: { authorization: `Bearer ${key}`, "content-length": "4", "x-origin-body-bytes": "7" }, body: "abcd" }), { TOLLGATE: CONFIG, ANALYTICS }, { settle: true });
    expect(res.status).toBe(200);
    expect(points).toHaveLength(1);
    const [point] = points;
    expect(point!.indexes).toEqual([tenant]);
    expect(point!.blobs).toEqual(["admitted", "upload", "PUT /things/:id", `key:${id}`]);
    const [status, bytesIn, bytesOut, durationMs, cost] = point!.doubles!;
    expect(status).toBe(200);
    expect(bytesIn).toBe(4);
    // The origin answers 7 bytes with Content-Length: bytes out are the answer's declared length.
    expect(bytesOut).toBe(7);
    // The request's own time: whole milliseconds, never more than the call took here.
    expect(Number.isInteger(durationMs)).toBe(true);
    expect(durationMs).toBeLessThanOrEqual(Date.now() - sentAtMs);
    expect(cost).toBe(4);
  });

  it("writes a refused anonymous request's point with its address as a keyed digest, never the address", async () => {
    const ip = uniqueIp();
    const { ANALYTICS, points } = recordingDataset();
    await callGateway(gatewayRequest("/x", { ip }), { TOLLGATE: CONFIG, ANALYTICS }, { settle: true });
    const refused = await callGateway(gatewayRequest("/x", { ip }), { TOLLGATE: CONFIG, ANALYTICS }, { settle: true });
    expect(refused.status).toBe(429);
    await eventually(() => points.length === 2, "both points are written");
    const last = points.find((p) => p.blobs?.[0] === "rate_limited");
    expect(last?.indexes).toEqual(["anonymous"]);
    expect(last?.blobs?.[3]).toMatch(/^hmac:[0-9a-f]{64}$/);
    expect(JSON.stringify(points)).not.toContain(ip);
  });

  it("digests an address once, not once per request", async () => {
    const ip = uniqueIp();
    const { ANALYTICS, points } = recordingDataset();
    await callGateway(gatewayRequest("/x", { ip }), { TOLLGATE: CONFIG, ANALYTICS }, { settle: true });
    const sign = vi.spyOn(crypto.subtle, "sign");
    try {
      for (let i = 0; i < 4; i++) await callGateway(gatewayRequest("/x", { ip }), { TOLLGATE: CONFIG, ANALYTICS }, { settle: true });
      await eventually(() => points.length === 5, "every point is written");
      expect(new Set(points.map((p) => p.blobs?.[3])).size).toBe(1);
      expect(points[0]!.blobs?.[3]).toMatch(/^hmac:[0-9a-f]{64}$/);
      expect(sign).not.toHaveBeenCalled();
    } finally {
      sign.mockRestore();
    }
  });

  it("names a key refused by its block, before any lookup, as key:<id>", async () => {
    const tenant = unique("ae-blocked");
    await createTenant(CONFIG, tenant);
    const { key, id } = await mintKey(CONFIG, tenant);
    await jsonOf(await adminCall("POST", "/blocks", CONFIG, { body: { target: `key:${id}` } }), 201);
    const { ANALYTICS, points } = recordingDataset();
    const res = await callGateway(gatewayRequest("/x", { ip: uniqueIp(), headers: { authorization: `Bearer ${key}` } }), { TOLLGATE: CONFIG, ANALYTICS }, { settle: true });
    expect(res.status).toBe(403);
    await eventually(() => points.length === 1, "the point is written");
    expect(points[0]!.blobs).toEqual(["blocked", "request", "", `key:${id}`]);
  });

  it("writes nothing without the binding, and a broken dataset never fails a request", async () => {
    const tenant = unique("ae-broken");
    await createTenant(CONFIG, tenant);
    const { key } = await mintKey(CONFIG, tenant);
    const broken = { writeDataPoint: () => { throw new Error("dataset full"); } };
    const res = await callGateway(gatewayRequest("/y", { ip: "198.51.100.91", headers: { authorization: `Bearer ${key}` } }), { TOLLGATE: CONFIG, ANALYTICS: broken }, { settle: true });
    expect(res.status).toBe(200);
    expect((await keyedCall(key, "/y", CONFIG, { settle: true })).status).toBe(200);
  });
});
