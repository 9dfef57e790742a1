// Issue 10: 10,000 random requests through the Worker in workerd — paths of
// random bytes and escapes, random headers and values, random methods, bodies
// with and without a length, random admin JSON — against the real origin, D1
// and quota objects. Whatever arrives: no 500 other than config_invalid, no
// uncaught error (test/unhandled-rejections.ts fails the file on one), and
// every answer the gateway makes itself is problem+json. A fixed seed makes a
// failure reproduce; the failing request is in the message.
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../prng";
import { callGateway, unique } from "../helpers";
import { ADMIN_TOKEN, AUDITOR_TOKEN, createTenant, mintKey, testConfig } from "./admin-helpers";

const SEED = 0x7011_6a7e;
const GATEWAY_REQUESTS = 8_000;
const ADMIN_REQUESTS = 2_000;
const CONCURRENCY = 16;

const CONFIG = testConfig({
  max_request_bytes: 4096,
  routes: [
    { method: "PUT", path: "/objects/:object", charges: { upload: 1 }, quota: "store" },
    { method: "DELETE", path: "/objects/:object", quota: "release" },
    { method: "POST", path: "/v1/chat", response_charge: { category: "tokens", json: "usage.total_tokens", reserve: 5 } },
    { path: "/static/*", charges: { reads: 0 } },
  ],
  categories: {
    admin: { limits: { admin: [{ count: 1_000_000, window_s: 1 }] } },
    request: { limits: { ip: [{ count: 5, window_s: 1 }], key: [{ count: 100_000, window_s: 1 }] } },
  },
  auth_failures: [{ count: 1_000_000, window_s: 1 }],
});

type Rand = () => number;
const pick = <T>(rand: Rand, items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
const int = (rand: Rand, max: number): number => Math.floor(rand() * max);

const SEGMENT_PARTS = ["objects", "OBJECTS", "static", "v1", "chat", "a", "..", ".", "%2e%2e", "%2F", "%2f", "%5C", "%00", "%25", "%zz", "%", "~", "é", "\u{1F600}", "x y", "?", "#", "=", ";", "'", '"', "<script>", ":object", "*"];
const METHODS = ["GET", "GET", "GET", "POST", "PUT", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "FOO", "get"];
const HEADER_NAMES = ["x-forwarded-for", "x-real-ip", "true-client-ip", "forwarded", "connection", "upgrade", "te", "x-api-key", "authorization", "content-type", "x-tollgate-tenant", "x-tollgate-caller", "cookie", "accept-encoding", "x-random"];

function randomSegment(rand: Rand): string {
  let segment = "";
  for (let i = 0, n = 1 + int(rand, 3); i < n; i++) segment += rand() < 0.6 ? pick(rand, SEGMENT_PARTS) : String.fromCharCode(33 + int(rand, 94));
  return segment;
}

function randomPath(rand: Rand): string {
  // Often the routes themselves, spelled every way, so their checks (411, quota, 400 names) are reached.
  if (rand() < 0.1) return `${pick(rand, ["/objects/", "//OBJECTS//", "/objects/x/../"])}${randomSegment(rand)}${rand() < 0.3 ? "/" : ""}`;
  let path = "";
  for (let i = 0, n = int(rand, 5); i < n; i++) path += (rand() < 0.15 ? "//" : "/") + randomSegment(rand);
  return path === "" ? "/" : path + (rand() < 0.2 ? "/" : "") + (rand() < 0.2 ? `?q=${int(rand, 1000)}&%zz=${randomSegment(rand)}` : "");
}

/** A header value the Headers class accepts: visible ASCII and spaces. */
function randomValue(rand: Rand, key: string): string {
  const kind = rand();
  if (kind < 0.2) return `Bearer ${key}`;
  if (kind < 0.3) return `Bearer tg_${"x".repeat(int(rand, 20))}_${"y".repeat(int(rand, 40))}`;
  if (kind < 0.4) return `Bearer ${"a".repeat(1 + int(rand, 30))}.${"b".repeat(int(rand, 30))}.${"c".repeat(int(rand, 30))}`;
  if (kind < 0.5) return Array.from({ length: 1 + int(rand, 70) }, () => `${int(rand, 300)}.${int(rand, 300)}.${int(rand, 300)}.${int(rand, 300)}`).join(", ");
  let value = "";
  for (let i = 0, n = int(rand, 200); i < n; i++) value += String.fromCharCode(32 + int(rand, 95));
  return value.trim();
}

function randomBody(rand: Rand, headers: Headers): BodyInit | null {
  const kind = rand();
  if (kind < 0.4) return null;
  const bytes = int(rand, kind < 0.9 ? 6000 : 20_000);
  if (kind < 0.75) {
    headers.set("content-length", String(bytes));
    return new Uint8Array(bytes);
  }
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= bytes) return controller.close();
      const n = Math.min(1 + int(rand, 3000), bytes - sent);
      sent += n;
      controller.enqueue(new Uint8Array(n));
    },
  });
}

function randomGatewayRequest(rand: Rand, key: string): Request | null {
  const method = pick(rand, METHODS);
  const headers = new Headers();
  // One busy address among many: its limit (5 per second) is reached.
  headers.set("cf-connecting-ip", rand() < 0.2 ? "10.250.0.1" : rand() < 0.7 ? `10.${int(rand, 4)}.${int(rand, 256)}.${int(rand, 256)}` : `2001:db8:${int(rand, 0xffff).toString(16)}::${int(rand, 0xffff).toString(16)}`);
  for (let i = 0, n = int(rand, 6); i < n; i++) headers.set(pick(rand, HEADER_NAMES), randomValue(rand, key));
  if (rand() < 0.3) headers.set("x-origin-json-usage", String(int(rand, 50)));
  const body = method === "GET" || method === "HEAD" ? null : randomBody(rand, headers);
  try {
    return new Request(`http://gateway.test${randomPath(rand)}`, { method, headers, body, ...(body instanceof ReadableStream ? { duplex: "half" } : {}) } as RequestInit);
  } catch {
    return null; // a method or URL the Request class itself refuses never reaches a Worker
  }
}

function randomJson(rand: Rand, depth = 0): unknown {
  const kind = int(rand, depth > 3 ? 6 : 9);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return rand() < 0.5;
    case 2:
      return pick(rand, [0, -1, 1, 0.5, 1e300, -0, 2 ** 53, 7, 60, 1000]);
    case 3:
      return pick(rand, ["", "x", "<script>alert(1)</script>", "2030-01-01T00:00:00Z", "yesterday", "ip:10.0.0.1", "net:10.0.0.0/8", "key:abc", "a".repeat(300)]);
    case 4:
      return pick(rand, ["request", "upload", "__proto__", "constructor", "tokens"]);
    case 5:
      return [];
    case 6:
      return Array.from({ length: int(rand, 4) }, () => randomJson(rand, depth + 1));
    default: {
      const keys = ["limits", "quota", "request", "key", "tenant", "jwt", "count", "window_s", "burst", "scope", "bytes", "objects", "soft", "hard", "name", "expires_at", "reason", "target", "org", "__proto__"];
      const out: Record<string, unknown> = {};
      for (let i = 0, n = int(rand, 5); i < n; i++) out[pick(rand, keys)] = randomJson(rand, depth + 1);
      return out;
    }
  }
}

function randomAdminRequest(rand: Rand, tenant: string): Request {
  const routes: [string, string][] = [
    ["PUT", `/tenants/${pick(rand, [tenant, unique("fz"), "BAD SLUG", "-x", "a".repeat(80)])}`],
    ["PUT", `/tenants/${tenant}/limits`],
    ["POST", `/tenants/${tenant}/keys`],
    ["PUT", `/overrides/${pick(rand, ["ip:10.9.9.9", "key:abcdefghjkmn", "jwt:zz", "tenant:x", "ip:2001:db8::1", "nope"])}`],
    ["POST", "/blocks"],
    ["PUT", `/orgs/${pick(rand, [unique("org"), "BAD"])}`],
    ["GET", `/callers/${pick(rand, ["ip:10.0.0.1", "key:zzz", "key:abcdefghjkmn", "jwt:00", "tenant:" + tenant, "tenant:no-such-tenant", "bogus"])}`],
    ["GET", `/audit?limit=${pick(rand, ["1", "0", "x", "999999", "-1"])}`],
    ["GET", `/usage/export?from=${pick(rand, ["2026-01", "2026-13", "x"])}&format=${pick(rand, ["csv", "ndjson", "xml"])}`],
    ["GET", "/tenants?limit=" + pick(rand, ["1", "abc", "100000"])],
  ];
  const [method, path] = pick(rand, routes);
  const headers = new Headers({ authorization: `Bearer ${rand() < 0.9 ? ADMIN_TOKEN : pick(rand, [AUDITOR_TOKEN, "wrong-token-wrong-token-wrong-token", ""])}`, "cf-connecting-ip": "10.200.0.1" });
  let body: string | undefined;
  if (method !== "GET") {
    body = rand() < 0.9 ? JSON.stringify(randomJson(rand)) : pick(rand, ["{", "[]", "null", "\u0000", "a".repeat(70_000)]);
    headers.set("content-type", "application/json");
  }
  return new Request(`http://gateway.test/_tollgate/admin/v1${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
}

interface Failure {
  request: string;
  status: number;
  contentType: string | null;
  body: string;
}

/** What the run saw, so the test fails if the generators stop reaching the paths they are meant to. */
const outcomes = new Map<string, number>();

async function check(request: Request, config: unknown, failures: Failure[]): Promise<void> {
  const described = `${request.method} ${request.url}`;
  let response: Response;
  try {
    response = await callGateway(request, { TOLLGATE: config }, { settle: true });
  } catch (err) {
    failures.push({ request: described, status: -1, contentType: null, body: `threw ${String(err)}` });
    return;
  }
  const fromOrigin = response.headers.get("x-origin-seen") === "1";
  const contentType = response.headers.get("content-type");
  const text = await response.text();
  const ownRefusal = !fromOrigin && response.status >= 400;
  let code: unknown;
  if (ownRefusal) {
    try {
      code = (JSON.parse(text) as { code?: unknown }).code;
    } catch {
      code = undefined;
    }
  }
  const outcome = fromOrigin ? `origin ${response.status}` : typeof code === "string" ? code : `gateway ${response.status}`;
  outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
  const badStatus = response.status >= 500 && !fromOrigin && !(response.status === 500 && code === "config_invalid") && response.status !== 502 && response.status !== 503;
  if (badStatus || (ownRefusal && (contentType !== "application/problem+json" || typeof code !== "string"))) {
    failures.push({ request: described, status: response.status, contentType, body: text.slice(0, 300) });
  }
}

async function inBatches(requests: (() => Request | null)[], config: unknown, failures: Failure[]): Promise<void> {
  for (let i = 0; i < requests.length; i += CONCURRENCY) {
    await Promise.all(
      requests.slice(i, i + CONCURRENCY).map((make) => {
        const request = make();
        return request === null ? Promise.resolve() : check(request, config, failures);
      }),
    );
  }
}

describe("10,000 random requests", () => {
  it("never answers 500 (but config_invalid), never throws, and refuses only with problem+json", async () => {
    const tenant = unique("fuzz");
    await createTenant(CONFIG, tenant, { quota: { bytes: { hard: 50_000 } } });
    const { key } = await mintKey(CONFIG, tenant);
    const rand = mulberry32(SEED);
    const failures: Failure[] = [];
    const gateway = Array.from({ length: GATEWAY_REQUESTS }, () => () => randomGatewayRequest(rand, key));
    const admin = Array.from({ length: ADMIN_REQUESTS }, () => () => randomAdminRequest(rand, tenant));
    await inBatches(gateway, CONFIG, failures);
    await inBatches(admin, CONFIG, failures);
    // A few random configs: an invalid one answers config_invalid, a valid one works.
    for (let i = 0; i < 20; i++) await check(new Request("http://gateway.test/x", { headers: { "cf-connecting-ip": "10.1.1.1" } }), randomJson(rand), failures);
    expect(failures.slice(0, 5), `${failures.length} failures`).toEqual([]);
    // The generators reached every kind of answer they are meant to provoke.
    for (const expected of ["origin 200", "invalid_path", "invalid_credential", "request_too_large", "length_required", "rate_limited", "invalid_request", "admin_unauthorized", "not_found", "config_invalid"]) {
      expect(outcomes.get(expected) ?? 0, `${expected} in ${JSON.stringify([...outcomes])}`).toBeGreaterThan(0);
    }
  }, 600_000);
});
