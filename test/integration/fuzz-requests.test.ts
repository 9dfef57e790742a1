// Issues 10 and 23: 10,000 random requests through the Worker in workerd —
// paths of random bytes and escapes, random headers and values, random
// methods, bodies with and without a length, random admin JSON — against the
// real origin, D1 and quota objects. Whatever arrives: no 500 other than
// config_invalid, no uncaught error (test/unhandled-rejections.ts fails the
// file on one), and every answer the gateway makes itself is problem+json.
// And what the gateway promises holds, read from the recording origin's log:
// nothing refused invalid_path or blocked reaches the origin, a path holding
// `;` is refused invalid_path, the origin's
// X-Forwarded-For and X-Real-IP are the resolved client address, and after
// the run the tenant's quota counters equal the bytes a model of the origin's
// store holds. A fixed seed makes a failure reproduce; the failing request is
// in the message.
//
// Requests that may reach a quota route (PUT or DELETE under /objects, in any
// spelling) for one object name run one at a time, in the order generated:
// two uploads of one name racing each other may reach the origin in one order
// and commit in the other, and then no model could say which size the origin
// holds. Different names run concurrently, as everything else does.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { mulberry32 } from "../prng";
import { callGateway, type OriginSeen, originLog, unique } from "../helpers";
import { ADMIN_TOKEN, AUDITOR_TOKEN, adminCall, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

const SEED = 0x7011_6a7e;
const GATEWAY_REQUESTS = 8_000;
const ADMIN_REQUESTS = 2_000;
const CONCURRENCY = 16;
/**
 * Batches whose origin records are read back together. The origin keeps the
 * last 5,000 requests of every file running: a short round is read back
 * before other files' requests can push its records out.
 */
const ROUND_BATCHES = 5;

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
  // Metering once per interval: a quiet isolate's trailing metering write waits
  // out up to a second under waitUntil, which every settled batch here would
  // wait for; this file checks answers and quota counters, not metering.
  usage: { flush_when_idle: false },
});

type Rand = () => number;
const pick = <T>(rand: Rand, items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
const int = (rand: Rand, max: number): number => Math.floor(rand() * max);

const SEGMENT_PARTS = ["objects", "OBJECTS", "%6Fbjects", "obj%45cts", "static", "v1", "chat", "c%68at", "a", "%61", "%41", "..", ".", "%2e%2e", "%2E", "%2F", "%2f", "%5C", "%00", "%25", "%zz", "%", "%7e", "~", "é", "\u{1F600}", "x y", "?", "#", "=", ";", "'", '"', "<script>", ":object", "*"];
/** A network blocked before the run: its addresses are refused 403 blocked. */
const BLOCKED_NET = "10.2.0.0/20";
const METHODS = ["GET", "GET", "GET", "POST", "PUT", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "FOO", "get"];
const HEADER_NAMES = ["x-forwarded-for", "x-real-ip", "true-client-ip", "forwarded", "connection", "upgrade", "te", "x-api-key", "authorization", "content-type", "x-tollgate-tenant", "x-tollgate-caller", "cookie", "accept-encoding", "x-random"];

function randomSegment(rand: Rand): string {
  let segment = "";
  for (let i = 0, n = 1 + int(rand, 3); i < n; i++) segment += rand() < 0.6 ? pick(rand, SEGMENT_PARTS) : String.fromCharCode(33 + int(rand, 94));
  return segment;
}

function randomPath(rand: Rand): string {
  // Often the routes themselves, spelled every way, so their checks (411, quota, 400 names) are reached.
  if (rand() < 0.1) return `${pick(rand, ["/objects/", "//OBJECTS//", "/objects/x/../", "/%6Fbjects/", "/OBJ%65CTS//"])}${randomSegment(rand)}${rand() < 0.3 ? "/" : ""}`;
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

/** A gateway request and what the test knows of it. */
interface Sent {
  readonly id: number;
  readonly request: Request;
  /** The client address the gateway should resolve (CF-Connecting-IP: no proxy is trusted), in its canonical spelling. */
  readonly ip: string;
}

let nextId = 0;

/** A path to one of a few object names, in any spelling. */
function objectPath(rand: Rand): string {
  return `${pick(rand, ["/objects/", "//OBJECTS/", "/%6Fbjects/", "/obj%65cts//"])}${pick(rand, ["a", "%61", "A", "b", "x%20y", "%C3%A9", "\u00e9", randomSegment(rand)])}${rand() < 0.3 ? "/" : ""}`;
}

function randomGatewayRequest(rand: Rand, key: string, tag: string): Sent | null {
  // One in twelve is an upload or delete with the tenant's key, so the quota fills, empties and is refused.
  const stores = rand() < 1 / 12;
  const method = stores ? pick(rand, ["PUT", "PUT", "PUT", "DELETE"]) : pick(rand, METHODS);
  const headers = new Headers();
  if (stores) headers.set(rand() < 0.8 ? "authorization" : "x-api-key", rand() < 0.8 ? `Bearer ${key}` : key);
  // One busy address among many: its limit (5 per second) is reached. Spelled canonically, as the gateway writes it.
  const ip = rand() < 0.2 ? "10.250.0.1" : rand() < 0.7 ? `10.${int(rand, 4)}.${int(rand, 256)}.${int(rand, 256)}` : `2001:db8:${(1 + int(rand, 0xfffe)).toString(16)}::${(1 + int(rand, 0xfffe)).toString(16)}`;
  headers.set("cf-connecting-ip", ip);
  for (let i = 0, n = int(rand, stores ? 2 : 6); i < n; i++) headers.set(pick(rand, HEADER_NAMES), randomValue(rand, key));
  if (rand() < 0.3) headers.set("x-origin-json-usage", String(int(rand, 50)));
  const id = ++nextId;
  headers.set("x-test-tag", tag);
  headers.set("x-fuzz-id", String(id));
  const body = method === "GET" || method === "HEAD" ? null : randomBody(rand, headers);
  try {
    return { id, ip, request: new Request(`http://gateway.test${stores ? objectPath(rand) : randomPath(rand)}`, { method, headers, body, ...(body instanceof ReadableStream ? { duplex: "half" } : {}) } as RequestInit) };
  } catch {
    return null; // a method or URL the Request class itself refuses never reaches a Worker
  }
}

/**
 * The object a request may store or delete, lower-cased, or null when it
 * cannot reach a quota route: a PUT or DELETE under /objects in any spelling.
 * Requests for one key run one after another. Two spellings of one object
 * name always give one key (the key ignores case, escapes and slashes, so it
 * may join names the gateway keeps apart, never the reverse).
 */
function quotaKey(request: Request): string | null {
  if (request.method !== "PUT" && request.method !== "DELETE") return null;
  const path = new URL(request.url).pathname.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))).toLowerCase();
  if (!path.includes("objects")) return null;
  const segments = path.split("/").filter((segment) => segment !== "");
  return segments[segments.length - 1] ?? "";
}

/** The key of a name the gateway stored or deleted, comparable with quotaKey. */
function keyOfName(name: string): string {
  return [...new TextEncoder().encode(name)].map((b) => String.fromCharCode(b)).join("").toLowerCase();
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

/** How the gateway answered one request. */
interface Answer {
  readonly fromOrigin: boolean;
  readonly status: number;
  /** The problem code of the gateway's own refusal, or null. */
  readonly code: string | null;
}

async function check(request: Request, config: unknown, failures: Failure[]): Promise<Answer | null> {
  const described = `${request.method} ${request.url}`;
  let response: Response;
  try {
    response = await callGateway(request, { TOLLGATE: config }, { settle: true });
  } catch (err) {
    failures.push({ request: described, status: -1, contentType: null, body: `threw ${String(err)}` });
    return null;
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
  return { fromOrigin, status: response.status, code: typeof code === "string" ? code : null };
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

/**
 * The origin's store as the tenant's quota must count it. The origin is one
 * that routes as most do: it decodes each path segment, merges runs of `/`,
 * ignores the case of `objects` and a trailing slash, and stores a PUT to
 * /objects/<name> (or deletes on DELETE) whoever sends it. The tenant's
 * objects are those its key sent: each name it wrote and did not delete
 * since, at the size of its last upload.
 */
class OriginStore {
  readonly objects = new Map<string, number>();

  /** Applies what the origin answered 2xx for `seen`; the object's name when it was an upload or delete (of any caller), else null. */
  apply(seen: OriginSeen, tenant: string): string | null {
    if (seen.method !== "PUT" && seen.method !== "DELETE") return null;
    const segments = seen.path.split("/").filter((segment) => segment !== "");
    if (segments.length !== 2) return null;
    let decoded: string[];
    try {
      decoded = segments.map((segment) => decodeURIComponent(segment));
    } catch {
      return null;
    }
    if (decoded[0]!.toLowerCase() !== "objects") return null;
    const name = decoded[1]!;
    if (seen.headers["x-tollgate-tenant"] !== tenant) return name;
    if (seen.method === "PUT") this.objects.set(name, seen.body_bytes);
    else this.objects.delete(name);
    return name;
  }

  get bytes(): number {
    let total = 0;
    for (const size of this.objects.values()) total += size;
    return total;
  }
}

interface Invariants {
  readonly tenant: string;
  readonly store: OriginStore;
  /** Broken promises, described. */
  readonly broken: string[];
  /** Requests the origin received, all rounds. */
  forwarded: number;
}

/** One batch, concurrently, except that requests for one quota key run in order; the answers by request id. */
async function runBatch(batch: readonly Sent[], config: unknown, failures: Failure[], answers: Map<number, Answer | null>): Promise<void> {
  const chains = new Map<string, Promise<void>>();
  const running: Promise<void>[] = [];
  for (const sent of batch) {
    const run = async () => void answers.set(sent.id, await check(sent.request, config, failures));
    const key = quotaKey(sent.request);
    if (key === null) {
      running.push(run());
      continue;
    }
    const chained = (chains.get(key) ?? Promise.resolve()).then(run);
    chains.set(key, chained);
    running.push(chained);
  }
  await Promise.all(running);
}

/** A round's invariants against what the origin recorded under its tag; the store model advanced in the order requests were generated. */
function checkRound(round: readonly Sent[], seen: readonly OriginSeen[], answers: ReadonlyMap<number, Answer | null>, inv: Invariants): void {
  const byId = new Map(round.map((sent) => [sent.id, sent]));
  const entryOf = new Map<number, OriginSeen>();
  for (const entry of seen) {
    const id = Number(entry.headers["x-fuzz-id"]);
    const sent = byId.get(id);
    if (sent === undefined) {
      inv.broken.push(`the origin received a request with no known x-fuzz-id (${entry.method} ${entry.path})`);
      continue;
    }
    entryOf.set(id, entry);
    const described = `${sent.request.method} ${sent.request.url} from ${sent.ip}`;
    if (entry.headers["x-forwarded-for"] !== sent.ip || entry.headers["x-real-ip"] !== sent.ip) {
      inv.broken.push(`${described}: the origin got X-Forwarded-For ${entry.headers["x-forwarded-for"]} and X-Real-IP ${entry.headers["x-real-ip"]}`);
    }
  }
  inv.forwarded += entryOf.size;
  for (const sent of round) {
    const code = answers.get(sent.id)?.code;
    const entry = entryOf.get(sent.id);
    if ((code === "invalid_path" || code === "blocked") && entry !== undefined) inv.broken.push(`${sent.request.method} ${sent.request.url}: refused ${code} but reached the origin`);
    const answer = answers.get(sent.id);
    // A `;` in the path (path parameters, which servlet containers strip before routing) is refused, never forwarded.
    if (answer != null && new URL(sent.request.url).pathname.includes(";") && code !== "invalid_path" && code !== "blocked") {
      inv.broken.push(`${sent.request.method} ${sent.request.url}: a path holding ; answered ${code ?? `origin ${answer.status}`}, not invalid_path`);
    }
    if (entry === undefined || answer?.fromOrigin !== true || answer.status < 200 || answer.status >= 300) continue;
    const name = inv.store.apply(entry, inv.tenant);
    if (name !== null && quotaKey(sent.request) !== keyOfName(name)) inv.broken.push(`${sent.request.method} ${sent.request.url}: stored or deleted ${name} outside its chain (the test's key missed it)`);
  }
}

describe("10,000 random requests", () => {
  it("never answers 500 (but config_invalid), never throws, refuses only with problem+json, and keeps what it promises", async () => {
    const tenant = unique("fuzz");
    await createTenant(CONFIG, tenant, { quota: { bytes: { hard: 8_000 } } });
    const { key } = await mintKey(CONFIG, tenant);
    await jsonOf(await adminCall("POST", "/blocks", CONFIG, { body: { target: `net:${BLOCKED_NET}` } }), 201);
    const rand = mulberry32(SEED);
    const failures: Failure[] = [];
    const inv: Invariants = { tenant, store: new OriginStore(), broken: [], forwarded: 0 };
    for (let i = 0; i < GATEWAY_REQUESTS; i += CONCURRENCY * ROUND_BATCHES) {
      // A round's requests share one tag: the origin's record is read once per round.
      const tag = unique("fuzz-round");
      const round: Sent[] = [];
      const answers = new Map<number, Answer | null>();
      for (let b = 0; b < ROUND_BATCHES; b++) {
        const batch: Sent[] = [];
        for (let j = 0; j < CONCURRENCY; j++) {
          const sent = randomGatewayRequest(rand, key, tag);
          if (sent !== null) batch.push(sent);
        }
        await runBatch(batch, CONFIG, failures, answers);
        round.push(...batch);
      }
      checkRound(round, await originLog(tag), answers, inv);
    }
    expect(inv.broken.slice(0, 5), `${inv.broken.length} broken promises`).toEqual([]);
    // The quota counts exactly what the origin holds: every upload it stored, at its last size, less what was deleted.
    const usage = await env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant)).usage();
    expect({ bytes: usage.bytes, objects: usage.objects, reserved_bytes: usage.reserved_bytes }).toEqual({ bytes: inv.store.bytes, objects: inv.store.objects.size, reserved_bytes: 0 });
    expect(inv.store.objects.size, "the run stored objects").toBeGreaterThan(0);
    expect(inv.forwarded, "the run reached the origin").toBeGreaterThan(1000);

    const admin = Array.from({ length: ADMIN_REQUESTS }, () => () => randomAdminRequest(rand, tenant));
    await inBatches(admin, CONFIG, failures);
    // A few random configs: an invalid one answers config_invalid, a valid one works.
    for (let i = 0; i < 20; i++) await check(new Request("http://gateway.test/x", { headers: { "cf-connecting-ip": "10.1.1.1" } }), randomJson(rand), failures);
    expect(failures.slice(0, 5), `${failures.length} failures`).toEqual([]);
    // The generators reached every kind of answer they are meant to provoke.
    for (const expected of ["origin 200", "invalid_path", "invalid_credential", "ambiguous_credential", "blocked", "request_too_large", "length_required", "quota_exceeded", "rate_limited", "invalid_request", "admin_unauthorized", "not_found", "config_invalid"]) {
      expect(outcomes.get(expected) ?? 0, `${expected} in ${JSON.stringify([...outcomes])}`).toBeGreaterThan(0);
    }
  }, 600_000);
});
