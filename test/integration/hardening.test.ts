// Issue 10: the quota, size and path promises hold against crafted requests.
// Each test sends what an attacker would, through the Worker, to the real
// recording origin and the real quota object.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { callGateway, gatewayRequest, originLog, problemOf, unique, uniqueIp } from "../helpers";
import { testConfig, tenantWithKey as newTenantWithKey } from "./admin-helpers";

const ROUTES = [
  { method: "PUT", path: "/objects/:object", charges: { upload: 1 }, quota: "store" },
  { method: "DELETE", path: "/objects/:object", quota: "release" },
];
const CONFIG = testConfig({ routes: ROUTES });

function usageOf(tenant: string) {
  return env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant)).usage();
}

const tenantWithKey = (config: Record<string, unknown>, body: Record<string, unknown>) => newTenantWithKey(config, body, "hard");

describe("routes cannot be dodged by spelling (item 1)", () => {
  for (const spelling of ["//objects/x", "/objects/x/", "/objects//x", "/OBJECTS/x", "/Objects/x//"]) {
    it(`charges, reserves and refuses ${spelling} like /objects/x`, async () => {
      const { tenant, key } = await tenantWithKey(CONFIG, { quota: { bytes: { hard: 1000 } }, limits: { upload: { key: [{ count: 3, window_s: 3600 }] } } });
      const ip = uniqueIp();
      const put = (path: string, bytes: number | null, tag?: string) => {
        const headers: Record<string, string> = { authorization: `Bearer ${key}` };
        if (tag !== undefined) headers["x-test-tag"] = tag;
        const init: RequestInit & { ip: string } = { method: "PUT", ip, headers };
        if (bytes !== null) {
          headers["content-length"] = String(bytes);
          init.body = new Uint8Array(bytes);
        } else init.body = new ReadableStream({ start: (c) => (c.enqueue(new Uint8Array(10)), c.close()) });
        return callGateway(gatewayRequest(path, init), { TOLLGATE: CONFIG }, { settle: true });
      };
      // No Content-Length: 411, as on the plain spelling.
      expect((await problemOf(await put(spelling, null))).code).toBe("length_required");
      // Over the hard quota: refused before the origin sees it.
      const tag = unique("dodge");
      expect((await problemOf(await put(spelling, 1200, tag))).code).toBe("quota_exceeded");
      expect(await originLog(tag)).toHaveLength(0);
      // Within it: reserved, committed, and the upload category charged each time (3 per hour).
      const stored = await put(spelling, 600, unique("ok"));
      expect(stored.status).toBe(200);
      expect(await usageOf(tenant)).toMatchObject({ bytes: 600, objects: 1 });
      expect((await problemOf(await put("/objects/other", 10))).code).toBe("rate_limited");
    });
  }

  it("forwards the collapsed path, with case and a trailing slash as sent", async () => {
    const tag = unique("collapse");
    const res = await callGateway(gatewayRequest("//A//b/", { ip: uniqueIp(), headers: { "x-test-tag": tag } }), { TOLLGATE: CONFIG }, { settle: true });
    expect(res.status).toBe(200);
    expect((await originLog(tag))[0]!.path).toBe("/A/b/");
  });
});

describe("encoded separators never reach the origin (item 2)", () => {
  for (const path of ["/a%2f..%2f..%2fadmin", "/a%2F..%2Fadmin", "/a%5c..%5cadmin", "/a%5C..", "/file%00.txt", "/objects/x%2fy"]) {
    for (const mode of ["enforce", "shadow", "off"]) {
      it(`refuses ${path} with 400 invalid_path in mode ${mode}`, async () => {
        const tag = unique("sep");
        const res = await callGateway(gatewayRequest(path, { ip: uniqueIp(), headers: { "x-test-tag": tag } }), { TOLLGATE: { ...CONFIG, mode } }, { settle: true });
        expect(res.status).toBe(400);
        expect((await problemOf(res)).code).toBe("invalid_path");
        expect(await originLog(tag)).toHaveLength(0);
      });
    }
  }

  it("forwards other escapes as they are", async () => {
    const tag = unique("esc");
    const res = await callGateway(gatewayRequest("/a%20b/%2e%2e%2Fnot-here%3F", { ip: uniqueIp(), headers: { "x-test-tag": tag } }), { TOLLGATE: CONFIG }, { settle: true });
    // %2F is refused wherever it is.
    expect(res.status).toBe(400);
    const ok = unique("esc-ok");
    expect((await callGateway(gatewayRequest("/a%20b/c%3F", { ip: uniqueIp(), headers: { "x-test-tag": ok } }), { TOLLGATE: CONFIG }, { settle: true })).status).toBe(200);
    expect((await originLog(ok))[0]!.path).toBe("/a%20b/c%3F");
  });
});

describe("a chunked body cannot pass max_request_bytes (item 5)", () => {
  const BOUNDED = testConfig({ max_request_bytes: 1000 });

  function chunked(total: number, chunk = 100): ReadableStream<Uint8Array> {
    let sent = 0;
    return new ReadableStream({
      pull(controller) {
        if (sent >= total) return controller.close();
        const n = Math.min(chunk, total - sent);
        sent += n;
        controller.enqueue(new Uint8Array(n).fill(7));
      },
    });
  }

  it("answers 413 and the origin never receives a complete body", async () => {
    const tag = unique("chunked");
    const res = await callGateway(gatewayRequest("/upload", { method: "POST", ip: uniqueIp(), headers: { "x-test-tag": tag }, body: chunked(5000), duplex: "half" } as RequestInit & { ip: string }), { TOLLGATE: BOUNDED }, { settle: true });
    expect(res.status).toBe(413);
    const body = await problemOf(res);
    expect(body).toMatchObject({ code: "request_too_large", limit: 1000 });
    // The recording origin records a request only once its body ended cleanly: nothing, not even the first 1,000 bytes as a whole body.
    expect(await originLog(tag)).toHaveLength(0);
  });

  it("forwards a chunked body within the bound whole", async () => {
    const tag = unique("chunked-ok");
    const res = await callGateway(gatewayRequest("/upload", { method: "POST", ip: uniqueIp(), headers: { "x-test-tag": tag }, body: chunked(900), duplex: "half" } as RequestInit & { ip: string }), { TOLLGATE: BOUNDED }, { settle: true });
    expect(res.status).toBe(200);
    expect((await originLog(tag))[0]!.body_bytes).toBe(900);
  });
});

describe("address headers from the client never reach the origin (item 6)", () => {
  it("sets X-Real-IP and X-Forwarded-For to the client address and drops the others", async () => {
    const tag = unique("addr");
    const ip = uniqueIp();
    const res = await callGateway(
      gatewayRequest("/who", {
        ip,
        headers: { "x-test-tag": tag, "x-real-ip": "6.6.6.6", "true-client-ip": "6.6.6.6", "x-client-ip": "6.6.6.6", "x-cluster-client-ip": "6.6.6.6", "x-forwarded-for": "6.6.6.6" },
      }),
      { TOLLGATE: CONFIG },
      { settle: true },
    );
    expect(res.status).toBe(200);
    const seen = (await originLog(tag))[0]!;
    expect(seen.headers["x-real-ip"]).toBe(ip);
    expect(seen.headers["x-forwarded-for"]).toBe(ip);
    for (const name of ["true-client-ip", "x-client-ip", "x-cluster-client-ip"]) expect(seen.headers[name]).toBeUndefined();
    expect(JSON.stringify(seen.headers)).not.toContain("6.6.6.6");
  });
});

describe("a config that validates works (item 7)", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["a fractional reservation_ttl_s", { reservation_ttl_s: 1.5 }, "reservation_ttl_s"],
    ["a sub-second audit window", { audit: { window_s: 0.5 } }, "audit.window_s"],
    ["a limiter larger than an isolate can hold", { limiter: { max_memory_mib: 512 } }, "limiter.max_memory_mib"],
    ["a limit with an unknown field", { categories: { request: { limits: { ip: [{ count: 5, window_s: 60, scpoe: "x" }] } } } }, "categories.request.limits.ip.0"],
    ["a route with an unknown field", { routes: [{ path: "/x", qouta: "store" }] }, "routes.0"],
    ["an unknown top-level field", { modes: "shadow" }, "modes"],
  ];
  for (const [what, config, field] of cases) {
    it(`refuses ${what} at validation, naming ${field}`, async () => {
      const res = await callGateway(gatewayRequest("/x", { ip: uniqueIp() }), { TOLLGATE: config });
      expect(res.status).toBe(500);
      const body = await problemOf(res);
      expect(body).toMatchObject({ code: "config_invalid", field });
      const health = (await (await callGateway(new Request("http://gateway.test/_tollgate/health"), { TOLLGATE: config })).json()) as Record<string, unknown>;
      expect(health).toMatchObject({ status: "config_invalid", config: "invalid", error: { field } });
    });
  }

  it("names the field of a bad trusted proxy, never its value (item 13)", async () => {
    const secret = "10.0.0.0/99-internal-hostname";
    const config = { trusted_proxies: ["10.0.0.0/8", secret] };
    const res = await callGateway(gatewayRequest("/x", { ip: uniqueIp() }), { TOLLGATE: config });
    const text = await res.text();
    expect(res.status).toBe(500);
    expect(JSON.parse(text)).toMatchObject({ code: "config_invalid", field: "trusted_proxies.1" });
    expect(text).not.toContain("internal-hostname");
    const health = await (await callGateway(new Request("http://gateway.test/_tollgate/health"), { TOLLGATE: config })).text();
    expect(health).not.toContain("internal-hostname");
  });
});

describe("admin tokens (item 11)", () => {
  const token = "a-token-set-with-echo-that-is-long-enough-0123";

  it("accepts a token configured with a trailing newline", async () => {
    const res = await callGateway(new Request("http://gateway.test/_tollgate/admin/v1/audit?limit=1", { headers: { authorization: `Bearer ${token}`, "cf-connecting-ip": uniqueIp() } }), {
      TOLLGATE: CONFIG,
      ADMIN_TOKEN: `${token}\n`,
    });
    expect(res.status).toBe(200);
  });

  it("disables the admin API with 503 admin_disabled for a token under 32 characters, and health says why", async () => {
    const short = "short-token-0123456789";
    const res = await callGateway(new Request("http://gateway.test/_tollgate/admin/v1/audit", { headers: { authorization: `Bearer ${short}` } }), { TOLLGATE: CONFIG, ADMIN_TOKEN: short });
    expect(res.status).toBe(503);
    const body = await problemOf(res);
    expect(body.code).toBe("admin_disabled");
    expect(String(body.detail)).toContain("32 characters");
    expect(String(body.detail)).not.toContain(short);
    const health = (await (await callGateway(new Request("http://gateway.test/_tollgate/health"), { TOLLGATE: CONFIG, ADMIN_TOKEN: short })).json()) as Record<string, unknown>;
    expect(health).toMatchObject({ status: "ok", admin: { status: "disabled", reason: "ADMIN_TOKEN is shorter than 32 characters" } });
  });
});

describe("object names the store cannot hold (item 12)", () => {
  for (const [what, name] of [
    ["over 1,024 bytes", "n".repeat(1025)],
    ["over 1,024 bytes once decoded", "%C3%A9".repeat(513)],
    ["not UTF-8 once decoded", "bad%FFname"],
  ] as const) {
    it(`answers 400 invalid_request for a name ${what}, on an upload and on a delete, and forwards neither`, async () => {
      const { key } = await tenantWithKey(CONFIG, { quota: { bytes: { hard: 10_000 } } });
      const tag = unique("name");
      const headers = { authorization: `Bearer ${key}`, "x-test-tag": tag };
      const put = await callGateway(gatewayRequest(`/objects/${name}`, { method: "PUT", ip: uniqueIp(), headers: { ...headers, "content-length": "10" }, body: new Uint8Array(10) }), { TOLLGATE: CONFIG }, { settle: true });
      expect(put.status).toBe(400);
      expect(await problemOf(put)).toMatchObject({ code: "invalid_request", field: "object" });
      expect(put.headers.get("retry-after")).toBeNull();
      const del = await callGateway(gatewayRequest(`/objects/${name}`, { method: "DELETE", ip: uniqueIp(), headers }), { TOLLGATE: CONFIG }, { settle: true });
      expect(del.status).toBe(400);
      expect(await originLog(tag)).toHaveLength(0);
    });
  }
});

