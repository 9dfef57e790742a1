// Behaviour the suite did not pin before (issue 19 item 7): a soft quota
// crossed writes quota_soft_exceeded to D1, and a refused credential is
// charged nothing but its one auth-failure unit.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { callGateway, gatewayRequest, problemOf, unique, uniqueIp } from "../helpers";
import { createTenant, mintKey, testConfig } from "./admin-helpers";

describe("audits and charges", () => {
  it("writes one quota_soft_exceeded event to D1 when an upload crosses the soft quota", async () => {
    const config = testConfig({ routes: [{ method: "PUT", path: "/objects/:object", quota: "store" }] });
    const tenant = unique("soft");
    await createTenant(config, tenant, { quota: { bytes: { soft: 100, hard: 1000 } } });
    const { key } = await mintKey(config, tenant);
    const put = (name: string, bytes: number) =>
      callGateway(
        gatewayRequest(`/objects/${name}`, { method: "PUT", ip: uniqueIp(), headers: { authorization: `Bearer ${key}`, "content-length": String(bytes) }, body: new Uint8Array(bytes) }),
        { TOLLGATE: config },
        { settle: true },
      );
    expect((await put("under", 50)).headers.get("tollgate-quota-warning")).toBeNull();
    const over = await put("over", 80);
    expect(over.status).toBe(200);
    expect(over.headers.get("tollgate-quota-warning")).toBe("bytes 130/1000");
    await put("more", 10);
    const rows = await env.DB.prepare("SELECT kind, actor, detail FROM audit_events WHERE tenant = ? AND kind = 'quota_soft_exceeded'").bind(tenant).all<{ kind: string; actor: string; detail: string }>();
    // One per audit window, however many uploads stay over it.
    expect(rows.results).toHaveLength(1);
    expect(rows.results[0]!.actor).toBe("quota");
    expect(JSON.parse(rows.results[0]!.detail)).toMatchObject({ quota_kind: "bytes", usage: 130, limit: 100 });
  });

  it("charges a refused credential one auth-failure unit and nothing else", async () => {
    const config = testConfig({
      auth_failures: [{ count: 2, window_s: 3600 }],
      categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, request: { limits: { ip: [{ count: 1, window_s: 3600 }] } } },
    });
    const ip = uniqueIp();
    const bad = () => callGateway(gatewayRequest("/x", { ip, headers: { authorization: `Bearer tg_${"0".repeat(12)}_${"1".repeat(32)}` } }), { TOLLGATE: config });
    expect((await bad()).status).toBe(401);
    expect((await bad()).status).toBe(401);
    // Two units spent on the auth-failure limit: the third is refused before any check.
    const gated = await bad();
    expect(gated.status).toBe(429);
    expect((await problemOf(gated)).code).toBe("auth_failures");
    // The address's request limit (1 per hour) was never charged by those three.
    expect((await callGateway(gatewayRequest("/x", { ip }), { TOLLGATE: config })).status).toBe(200);
    expect((await callGateway(gatewayRequest("/x", { ip }), { TOLLGATE: config })).status).toBe(429);
  });
});
