import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { createWorker } from "../../src/app";
import { callGateway, gatewayRequest, originLog, type OriginSeen, problemOf, sha256Hex, unique, uniqueIp } from "../helpers";

const OPEN = { TOLLGATE: { mode: "off" } };

async function seen(response: Response): Promise<OriginSeen> {
  expect(response.status).toBe(200);
  return (await response.json()) as OriginSeen;
}

describe("forwarding to the origin", () => {
  it("passes the exact method, path, query, end-to-end headers and body bytes", async () => {
    const tag = unique("exact");
    const body = new TextEncoder().encode("héllo, origin\u0000\u00ff");
    const res = await callGateway(
      gatewayRequest("/api/v1/things/a%20b?x=1&y=%2F&x=2", {
        method: "POST",
        ip: "203.0.113.9",
        body,
        headers: { "x-test-tag": tag, "x-custom": "kept", "content-type": "application/octet-stream", accept: "text/plain" },
      }),
    );
    const got = await seen(res);
    expect(got.method).toBe("POST");
    expect(got.path).toBe("/api/v1/things/a%20b");
    expect(got.query).toBe("?x=1&y=%2F&x=2");
    expect(got.headers["x-custom"]).toBe("kept");
    expect(got.headers["content-type"]).toBe("application/octet-stream");
    expect(got.headers.accept).toBe("text/plain");
    expect(got.body_bytes).toBe(body.byteLength);
    expect(got.body_sha256).toBe(await sha256Hex(body));
    expect(await originLog(tag)).toHaveLength(1);
  });

  it("streams a multi-megabyte body both ways, byte for byte", async () => {
    const size = 6 * 1024 * 1024 + 7;
    const upload = new Uint8Array(size);
    for (let i = 0; i < size; i++) upload[i] = (i * 31 + 7) & 255;
    const up = await seen(await callGateway(gatewayRequest("/big", { method: "PUT", body: upload, ip: "203.0.113.10" })));
    expect(up.body_bytes).toBe(size);
    expect(up.body_sha256).toBe(await sha256Hex(upload));

    const down = await callGateway(gatewayRequest("/big-download", { ip: "203.0.113.10", headers: { "x-origin-body-bytes": String(size) } }));
    expect(down.status).toBe(200);
    const reader = down.body!.getReader();
    let offset = 0;
    let mismatches = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      for (let i = 0; i < value.byteLength; i++) if (value[i] !== (offset + i) % 251) mismatches++;
      offset += value.byteLength;
    }
    expect(offset).toBe(size);
    expect(mismatches).toBe(0);
  });

  it("passes the origin's status and response headers back", async () => {
    const res = await callGateway(gatewayRequest("/teapot", { ip: "203.0.113.11", headers: { "x-origin-status": "418" } }));
    expect(res.status).toBe(418);
    expect(res.headers.get("x-origin-seen")).toBe("1");

    expect(res.headers.get("content-type")).toBe("application/json");
  });

  it("drops hop-by-hop headers in both directions, including those Connection lists", async () => {
    const tag = unique("hop");
    const res = await callGateway(
      gatewayRequest("/hop", {
        ip: "203.0.113.12",
        headers: {
          "x-test-tag": tag,
          connection: "x-private-hop, keep-alive",
          "x-private-hop": "secret",
          "keep-alive": "timeout=5",
          te: "trailers",
          trailer: "x-later",
          upgrade: "h2c",
          "proxy-authorization": "Basic Zm9vOmJhcg==",
          "proxy-connection": "keep-alive",
          "x-kept": "yes",
        },
      }),
    );
    const got = await seen(res);
    for (const name of ["x-private-hop", "keep-alive", "te", "trailer", "upgrade", "proxy-authorization", "proxy-connection"]) {
      expect(got.raw_header_names, name).not.toContain(name);
    }
    expect(got.headers["x-kept"]).toBe("yes");
    // The origin answers with Connection: keep-alive and Keep-Alive: timeout=5.
    expect(res.headers.get("keep-alive")).toBeNull();
    expect(res.headers.get("connection")).toBeNull();
  });

  it("rewrites X-Forwarded-For to the client address and drops the client's forwarding headers", async () => {
    const got = await seen(
      await callGateway(
        gatewayRequest("/spoof", {
          ip: "198.51.100.23",
          headers: {
            "x-forwarded-for": "1.1.1.1, 2.2.2.2",
            forwarded: "for=1.1.1.1;host=evil.example",
            "x-forwarded-host": "evil.example",
            "x-tollgate-tenant": "someone-else",
            "x-tollgate-key-id": "stolen",
            "x-tollgate-caller": "jwt:stolen",
            "x-real-ip": "1.1.1.1",
          },
        }),
      ),
    );
    expect(got.headers["x-forwarded-for"]).toBe("198.51.100.23");
    expect(got.headers["x-real-ip"]).toBe("198.51.100.23");
    expect(got.headers["x-tollgate-caller"]).toBeUndefined();
    expect(got.headers.forwarded).toBeUndefined();
    expect(got.headers["x-forwarded-host"]).toBeUndefined();
    expect(got.headers["x-tollgate-tenant"]).toBeUndefined();
    expect(got.headers["x-tollgate-key-id"]).toBeUndefined();
  });

  it("takes the client address from X-Forwarded-For only behind a trusted proxy, scanning from the right", async () => {
    const config = { TOLLGATE: { mode: "off", trusted_proxies: ["10.0.0.0/8"] } };
    const behind = await seen(await callGateway(gatewayRequest("/xff", { ip: "10.1.2.3", headers: { "x-forwarded-for": "198.51.100.1, 203.0.113.50, 10.9.9.9" } }), config));
    expect(behind.headers["x-forwarded-for"]).toBe("203.0.113.50");
    const untrusted = await seen(await callGateway(gatewayRequest("/xff", { ip: "192.0.2.8", headers: { "x-forwarded-for": "203.0.113.50" } }), config));
    expect(untrusted.headers["x-forwarded-for"]).toBe("192.0.2.8");
  });

  it("passes the credential on by default and removes it with strip_credential", async () => {
    const headers = { authorization: "Basic b3JpZ2luOnNlY3JldA==", "x-api-key": "origin-key" };
    const kept = await seen(await callGateway(gatewayRequest("/cred", { ip: "203.0.113.19", headers }), OPEN));
    expect(kept.headers.authorization).toBe("Basic b3JpZ2luOnNlY3JldA==");
    const stripped = await seen(await callGateway(gatewayRequest("/cred", { ip: "203.0.113.19", headers }), { TOLLGATE: { mode: "off", strip_credential: true } }));
    expect(stripped.headers.authorization).toBeUndefined();
    expect(stripped.headers["x-api-key"]).toBeUndefined();
  });

  it("keeps every path under the origin's base path", async () => {
    const withBase = { ORIGIN_URL: `${env.ORIGIN_URL}/base/v2/` };
    const cases: [string, string][] = [
      ["/plain", "/base/v2/plain"],
      // Runs of "/" collapse: still a path on the origin, never a host.
      ["//evil.example/x", "/base/v2/evil.example/x"],
      ["/\\evil.example/x", "/base/v2/evil.example/x"],
      ["/a/../../../x", "/base/v2/x"],
      ["/%2e%2e/%2E%2e/x", "/base/v2/x"],
      ["/./y?q=..", "/base/v2/y"],
    ];
    for (const [path, expected] of cases) {
      const tag = unique("confine");
      const res = await callGateway(new Request(`http://gateway.test${path}`, { headers: { "x-test-tag": tag, "cf-connecting-ip": "203.0.113.13" } }), withBase);
      const got = await seen(res);
      expect(got.path, path).toBe(expected);
      expect(got.headers.host, path).toBe(new URL(env.ORIGIN_URL).host);
    }
  });

  it("fetches the request itself when ORIGIN_URL is empty", async () => {
    const tag = unique("zone");
    const res = await callGateway(new Request(`${env.ORIGIN_URL}/zone/path?z=1`, { headers: { "x-test-tag": tag, "cf-connecting-ip": "203.0.113.14" } }), { ORIGIN_URL: "" });
    const got = await seen(res);
    expect(got.path).toBe("/zone/path");
    expect(got.query).toBe("?z=1");
    expect(got.headers["x-forwarded-for"]).toBe("203.0.113.14");
  });

  it("answers 502 origin_unreachable when the origin cannot be reached", async () => {
    const res = await callGateway(gatewayRequest("/down", { ip: "203.0.113.15" }), { ORIGIN_URL: "http://127.0.0.1:1" });
    expect(res.status).toBe(502);
    const body = await problemOf(res);
    expect(body.code).toBe("origin_unreachable");
    expect(JSON.stringify(body)).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|stack/i);
  });

  it("forwards exempt paths untouched by any check", async () => {
    const res = await callGateway(gatewayRequest("/healthz", { ip: "203.0.113.16" }), { TOLLGATE: { anonymous: "deny" } });
    const got = await seen(res);
    expect(got.path).toBe("/healthz");
    expect(res.headers.get("ratelimit")).toBeNull();
    expect(res.headers.get("x-ratelimit-limit")).toBeNull();
  });

  it("passes everything through in mode off: no credential needed, nothing charged, no limit headers", async () => {
    // A config that would refuse all of these in enforce mode.
    const off = { TOLLGATE: { mode: "off", anonymous: "deny", categories: { request: { limits: { ip: [{ count: 1, window_s: 3600 }] } } } } };
    const tag = unique("off");
    for (let i = 0; i < 3; i++) {
      const res = await callGateway(gatewayRequest("/off", { ip: "203.0.113.17", headers: { "x-test-tag": tag, authorization: "Bearer tg_not_a_real_key" } }), off);
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit")).toBeNull();
      expect(res.headers.get("x-ratelimit-remaining")).toBeNull();
      await res.arrayBuffer();
    }
    const seenByOrigin = await originLog(tag);
    expect(seenByOrigin).toHaveLength(3);
    // Forwarded as sent, the credential included.
    expect(seenByOrigin[0]!.headers.authorization).toBe("Bearer tg_not_a_real_key");
  });
});

describe("the gateway's own paths", () => {
  it("logs one line naming the field and the reason, never a value, when the isolate first meets an invalid config, at start or at its first request", async () => {
    const lines: string[] = [];
    const spy = vi.spyOn(console, "error").mockImplementation((line: unknown) => void lines.push(String(line)));
    try {
      // A field nobody else's config spells: its fault is this test's alone.
      const typo = unique("secret_typo").replaceAll("-", "_");
      const bad = { TOLLGATE: { request_log: "off", [typo]: "hunter2-value" } };
      const faults = () => lines.filter((l) => l.includes('"event":"config_invalid"'));
      for (let i = 0; i < 2; i++) {
        await callGateway(gatewayRequest("/_tollgate/health"), bad);
        await callGateway(gatewayRequest("/anything", { ip: uniqueIp() }), bad);
      }
      expect(faults()).toHaveLength(1);
      expect(JSON.parse(faults()[0]!)).toMatchObject({ level: "error", event: "config_invalid", field: typo, message: expect.any(String) });
      expect(faults()[0]).not.toContain("hunter2");
      // At the isolate's start (the env wrangler dev loads), before any request: another config's fault, logged once.
      const other = unique("start_typo").replaceAll("-", "_");
      createWorker({ ...env, TOLLGATE: { [other]: 1 } } as never);
      createWorker({ ...env, TOLLGATE: { [other]: 1 } } as never);
      expect(faults()).toHaveLength(2);
      expect(JSON.parse(faults()[1]!)).toMatchObject({ event: "config_invalid", field: other });
    } finally {
      spy.mockRestore();
    }
  });

  it("answers health with status ok and the default origin", async () => {
    const res = await callGateway(gatewayRequest("/_tollgate/health"));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      status: "ok",
      origins: { default: { kind: "url", usable: true } },
      policy: expect.objectContaining({ on_error: "closed" }),
      // This isolate's penalty box: penalties written, and those past penalty.max_per_minute.
      penalties: { imposed: expect.any(Number), dropped: expect.any(Number), max_per_minute: 600 },
    });
  });

  it("answers health 503 config_invalid with the error when the config is invalid, and refuses gateway requests with config_invalid naming the field", async () => {
    const bad = { TOLLGATE: { mode: "enforce", max_request_bytes: -1 } };
    const health = await callGateway(gatewayRequest("/_tollgate/health"), bad);
    expect(health.status).toBe(503);
    expect(health.headers.get("cache-control")).toBe("no-store");
    expect(await health.json()).toMatchObject({ status: "config_invalid", config: "invalid", error: { field: "max_request_bytes", message: "must be >= 0" } });
    const res = await callGateway(gatewayRequest("/anything", { ip: "203.0.113.18" }), bad);
    expect(res.status).toBe(500);
    const body = await problemOf(res);
    expect(body.code).toBe("config_invalid");
    expect(body.field).toBe("max_request_bytes");
  });

  it("answers 404 for other paths under /_tollgate without forwarding", async () => {
    const res = await callGateway(gatewayRequest("/_tollgate/nope"));
    expect(res.status).toBe(404);
    expect((await problemOf(res)).code).toBe("not_found");
  });
});
