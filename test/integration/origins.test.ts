// Named origins: routes to a URL origin and to a Workers service binding
// (`service:SERVICE_ORIGIN`, the auxiliary worker test/fixtures/service-origin.mjs
// that vitest.config.ts binds), the same path joining and header rules for
// both, a WebSocket and a priced route through the service, and the faults.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config";
import { callGateway, clockedGateway, gatewayRequest, originLog, problemOf, unique } from "../helpers";
import { createTenant, mintKey, testConfig } from "./admin-helpers";
import { clientOf } from "./streams-helpers";

const HUGE = [{ count: 1_000_000, window_s: 1 }];

function config(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return testConfig({
    origins: { svc: "service:SERVICE_ORIGIN", plain: env.ORIGIN_URL, based: `${env.ORIGIN_URL}/base/` },
    routes: [
      { method: "GET", path: "/j/*", origin: "svc" },
      { method: "POST", path: "/j/*", origin: "plain" },
      { method: "PUT", path: "/j/*", origin: "based" },
      { method: "POST", path: "/v1/chat", origin: "svc", response_charge: { category: "tokens", header: "x-usage-total-tokens", reserve: 10 } },
      { path: "/svc/*", origin: "svc" },
    ],
    categories: { admin: { limits: { admin: HUGE } }, request: { limits: { key: HUGE, tenant: HUGE, ip: HUGE } }, tokens: { limits: { key: [{ count: 100, window_s: 60 }] } } },
    ...extra,
  });
}

interface ServiceEcho {
  service: string;
  method: string;
  url: string;
  path: string;
  query: string;
  headers: Record<string, string>;
}

describe("origins: where a route sends", () => {
  it("joins the path and query the same way for a service binding and a URL origin", async () => {
    const cfg = config();
    const tag = unique("join");
    const path = "/j//A%7E/./x%20y/?q=1&r=%2F";
    const viaService = await callGateway(gatewayRequest(path, { ip: "198.51.100.80" }), { TOLLGATE: cfg }, { settle: true });
    expect(viaService.status).toBe(200);
    const seenByService = (await viaService.json()) as ServiceEcho;
    expect(seenByService.service).toBe("service-origin");
    const viaUrl = await callGateway(gatewayRequest(path, { method: "POST", ip: "198.51.100.80", headers: { "x-test-tag": tag }, body: "" }), { TOLLGATE: cfg }, { settle: true });
    expect(viaUrl.status).toBe(200);
    const [seenByUrl] = await originLog(tag);
    expect(seenByUrl).toBeDefined();
    expect(seenByService.path).toBe(seenByUrl!.path);
    expect(seenByService.query).toBe(seenByUrl!.query);
    // And the same is the right join, not one shared mistake: runs of / collapsed, ~ decoded, the query as sent.
    expect([seenByUrl!.path, seenByUrl!.query]).toEqual(["/j/A~/x%20y/", "?q=1&r=%2F"]);
    // The service sees the host the client asked for.
    expect(new URL(seenByService.url).host).toBe("gateway.test");
  });

  it("joins a URL origin's base path by concatenation", async () => {
    const tag = unique("based");
    const res = await callGateway(gatewayRequest("/j/k", { method: "PUT", ip: "198.51.100.81", headers: { "x-test-tag": tag, "content-length": "0" }, body: "" }), { TOLLGATE: config() }, { settle: true });
    expect(res.status).toBe(200);
    const [seen] = await originLog(tag);
    expect(seen?.path).toBe("/base/j/k");
  });

  it("sends routes without an origin to ORIGIN_URL", async () => {
    const tag = unique("default");
    const res = await callGateway(gatewayRequest("/elsewhere", { ip: "198.51.100.82", headers: { "x-test-tag": tag } }), { TOLLGATE: config() }, { settle: true });
    expect(res.status).toBe(200);
    expect(await originLog(tag)).toHaveLength(1);
  });

  it("applies the header rules to a service origin: the resolved address, the caller's tenant and key, no client-set address headers, no hop-by-hop names", async () => {
    const cfg = config();
    const tenant = unique("svc-headers");
    await createTenant(cfg, tenant);
    const { key, id } = await mintKey(cfg, tenant);
    // A service binding passes every header on (test/proxy/runtime-fetch.test.ts): the gateway deletes the hop-by-hop names itself.
    const hop = { "keep-alive": "timeout=5", te: "trailers", trailer: "x-later", upgrade: "h2c", "proxy-connection": "keep-alive" };
    const res = await callGateway(
      gatewayRequest("/svc/who", { ip: "198.51.100.83", headers: { authorization: `Bearer ${key}`, forwarded: "for=1.2.3.4", "x-forwarded-for": "1.2.3.4", "x-tollgate-tenant": "spoofed", "x-tollgate-caller": "spoofed", connection: "x-drop-me", "x-drop-me": "1", ...hop } }),
      { TOLLGATE: cfg },
      { settle: true },
    );
    expect(res.status).toBe(200);
    const seen = (await res.json()) as ServiceEcho;
    expect(seen.headers["x-forwarded-for"]).toBe("198.51.100.83");
    expect(seen.headers["x-real-ip"]).toBe("198.51.100.83");
    expect(seen.headers["x-tollgate-tenant"]).toBe(tenant);
    expect(seen.headers["x-tollgate-key-id"]).toBe(id);
    expect(seen.headers.forwarded).toBeUndefined();
    expect(seen.headers["x-drop-me"]).toBeUndefined();
    expect(seen.headers["x-tollgate-caller"]).toBeUndefined();
    for (const name of ["connection", ...Object.keys(hop)]) expect(seen.headers[name], name).toBeUndefined();
    expect(res.headers.get("ratelimit-policy")).not.toBeNull();
  });

  it("settles a response-priced charge through a service origin", async () => {
    const cfg = config();
    const tenant = unique("svc-priced");
    await createTenant(cfg, tenant);
    const { key } = await mintKey(cfg, tenant);
    const gateway = clockedGateway(cfg);
    const chat = (tokens: string) =>
      gatewayRequest("/v1/chat", { method: "POST", ip: "198.51.100.84", headers: { authorization: `Bearer ${key}`, "x-origin-usage-header": tokens }, body: "{}" });
    const first = await gateway.call(chat("60"), { settle: true });
    expect(first.status).toBe(200);
    // Reserve 10, then 50 more from the header: 40 of the 100 left.
    expect(first.headers.get("ratelimit")).toMatch(/;r=40(;|$)/);
    const second = await gateway.call(chat("30"), { settle: true });
    expect(second.status).toBe(200);
    expect(second.headers.get("ratelimit")).toMatch(/;r=10(;|$)/);
    // 10 left: a reserve of 10 still fits, then nothing does.
    expect((await gateway.call(chat("10"), { settle: true })).status).toBe(200);
    const refused = await gateway.call(chat("10"), { settle: true });
    expect(refused.status).toBe(429);
    expect(await problemOf(refused)).toMatchObject({ code: "rate_limited", category: "tokens" });
  });

  it("proxies a WebSocket through a service origin", async () => {
    const res = await callGateway(gatewayRequest("/svc/socket", { ip: "198.51.100.85", headers: { upgrade: "websocket", connection: "Upgrade" } }), { TOLLGATE: config() });
    const client = clientOf(res);
    client.send("hello through a binding");
    expect(await client.received(1)).toEqual(["hello through a binding"]);
    client.socket.close(1000, "done");
  });
});

describe("origins: faults", () => {
  it("answers 502 origin_unreachable naming the origin when the service throws, never its error text", async () => {
    const res = await callGateway(gatewayRequest("/svc/throw/now", { ip: "198.51.100.86" }), { TOLLGATE: config() }, { settle: true });
    expect(res.status).toBe(502);
    const text = await res.text();
    expect(text).not.toContain("secret-detail");
    expect(JSON.parse(text)).toMatchObject({ code: "origin_unreachable", origin: "svc" });
    expect(JSON.parse(text).detail).toContain('"svc"');
  });

  it("answers 502 naming the origin for a WebSocket whose service throws", async () => {
    const res = await callGateway(gatewayRequest("/svc/throw/ws", { ip: "198.51.100.87", headers: { upgrade: "websocket", connection: "Upgrade" } }), { TOLLGATE: config() }, { settle: true });
    expect(res.status).toBe(502);
    expect(await problemOf(res)).toMatchObject({ code: "origin_unreachable", origin: "svc" });
  });

  it("is an invalid config naming the field when the service binding is missing, and health says so", async () => {
    const cfg = config();
    const res = await callGateway(gatewayRequest("/svc/x", { ip: "198.51.100.88" }), { TOLLGATE: cfg, SERVICE_ORIGIN: undefined });
    expect(res.status).toBe(500);
    expect(await problemOf(res)).toMatchObject({ code: "config_invalid", field: "origins.svc" });
    const health = await callGateway(gatewayRequest("/_tollgate/health"), { TOLLGATE: cfg, SERVICE_ORIGIN: undefined });
    expect(await health.json()).toMatchObject({ config: "invalid", error: { field: "origins.svc" } });
  });

  it("lists each origin in health with its kind and whether it is usable", async () => {
    const health = await callGateway(gatewayRequest("/_tollgate/health"), { TOLLGATE: config() });
    expect(await health.json()).toMatchObject({
      status: "ok",
      origins: { default: { kind: "url", usable: true }, svc: { kind: "service", usable: true }, plain: { kind: "url", usable: true }, based: { kind: "url", usable: true } },
    });
  });
});

describe("origins: config", () => {
  const invalid = (tollgate: Record<string, unknown>) => {
    const parsed = parseConfig(tollgate);
    expect(parsed.ok).toBe(false);
    return parsed.ok ? null : { field: parsed.field, message: parsed.message };
  };

  it.each([
    ["credentials", "https://user:pw@origin.example"],
    ["a fragment", "https://origin.example/#frag"],
    ["a query", "https://origin.example/?a=1"],
    ["another scheme", "ftp://origin.example"],
    ["no URL at all", "origin.example"],
    ["an empty binding name", "service:"],
    ["a binding name with a dash", "service:MY-API"],
  ])("refuses an origin with %s, naming the field and not the value", (_what, value) => {
    const fault = invalid({ origins: { api: value } });
    expect(fault?.field).toBe("origins.api");
    expect(fault?.message).not.toContain("origin.example");
  });

  it("refuses a route naming an unknown origin", () => {
    expect(invalid({ origins: { api: "https://origin.example" }, routes: [{ path: "/a" }, { path: "/b/*", origin: "nope" }] })?.field).toBe("routes.1.origin");
  });

  it('keeps "default" for ORIGIN_URL: a route may name it, an origins entry may not', () => {
    expect(parseConfig({ routes: [{ path: "/a", origin: "default" }] }).ok).toBe(true);
    expect(invalid({ origins: { default: "https://origin.example" } })?.field).toContain("origins");
  });
});
