// (a) in the end-to-end bench: a pass-through Worker with no checks. It
// fetches ORIGIN_URL + the request's path and query and streams the answer
// back, so the gap between it and Tollgate is Tollgate's own cost.
//
// One path, /bench/local, it answers itself with a small body and no fetch:
// the runtime's own cost of taking a request and answering it, subtracted
// from what a refusal costs (a refusal is answered without a fetch too).
//
// /bench/problem answers what a Tollgate 429 answers (status, the same eight
// headers, a problem+json body of the same shape and size, serialised per
// request): what such an answer costs the runtime itself, with no check
// before it.
//
// /bench/unauthorized answers what a Tollgate 401 for a made-up key answers,
// after the one check such a key costs there: an HMAC-SHA256 of the key's
// body compared with its last six characters (the key's check).
//
// /bench/limited is the least a rate limiter does to answer (r), the
// gateway's 429 for a key over its limit: the credential read from the
// request, its record found in a Map (a cached key), the key's limit and its
// tenant's checked by GCRA against states in a Map, and the 429 of the
// gateway's shape with the decision's figures (bench/refusal-floor.mjs).
//
// /bench/limited-accounted and /bench/unauthorized-accounted are the same
// 429 and 401 with the least of what the contract asks a refusal to do
// besides answering: the 401 checks and then charges the address's
// auth-failure limit (GCRA, as for the 429); both count the refusal per
// caller and category for the sustained-refusal audit, per tenant and
// decision in the minute with a bounded count of the callers refused (the
// traffic rollups), and in the second with the same (the request log's
// summary), and write the request-log line of the first 50 refusals of each
// second. Maps only, bounded, nothing flushed anywhere.
//
// With the binding CONTRACT ("log" or "no-log") it forwards as (b) must by
// the gateway's contract, and does nothing else: no key lookup, no limiter,
// no usage count. The origin request's headers are the client's less the
// names a gateway may not pass on, plus who is calling; the answer is the
// origin's less its hop-by-hop names, plus the RateLimit headers of two
// policies; the request's settlement is kept alive with waitUntil; and with
// "log" one JSON line of the request log's size is written per request. Its
// throughput against (a) is the most any gateway keeping that contract can
// reach in this runtime; (b) against it is what Tollgate's checks cost.
export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/bench/local") return new Response("ok", { headers: { "content-type": "text/plain" } });
    if (url.pathname === "/bench/problem") return problem429(Date.now() % 1000);
    if (url.pathname === "/bench/unauthorized") return unauthorized(request);
    if (url.pathname === "/bench/limited") return limited(request);
    if (url.pathname === "/bench/limited-accounted") return limitedAccounted(request);
    if (url.pathname === "/bench/unauthorized-accounted") return unauthorizedAccounted(request);
    if (env.CONTRACT !== undefined) return contractForward(request, url, env, ctx);
    const hasBody = request.method !== "GET" && request.method !== "HEAD";
    return fetch(env.ORIGIN_URL + url.pathname + url.search, {
      method: request.method,
      headers: request.headers,
      body: hasBody ? request.body : null,
      redirect: "manual",
    });
  },
};

function problem429(retryAfterMs) {
  const name = "request-key-1s";
  const body = JSON.stringify({
    type: "https://tollgate.dev/problems/rate_limited",
    title: "Too Many Requests",
    status: 429,
    detail: `Rate limit exceeded in category "request": the same request is admitted in ${retryAfterMs} ms.`,
    code: "rate_limited",
    hint: "Wait `retry_after_ms` milliseconds (see `Retry-After`) before sending again.",
    category: "request",
    retry_after_ms: retryAfterMs,
    "violated-policies": [name],
  });
  return new Response(body, {
    status: 429,
    headers: {
      "ratelimit-policy": `"${name}";q=1;w=1, "request-tenant-1s";q=1000000000;w=1`,
      ratelimit: `"${name}";r=0;t=1`,
      "x-ratelimit-limit": "1",
      "x-ratelimit-remaining": "0",
      "x-ratelimit-reset": "1",
      "retry-after": String(Math.ceil(retryAfterMs / 1000)),
      "content-type": "application/problem+json",
      "cache-control": "no-store",
    },
  });
}

/** Request names a gateway may not pass to the origin (hop-by-hop, the addresses and identity it writes itself, method overrides). */
const NOT_FORWARDED = ["connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "proxy-authorization", "proxy-authenticate", "proxy-connection", "forwarded", "x-forwarded-host", "x-forwarded-for", "x-real-ip", "true-client-ip", "x-client-ip", "x-cluster-client-ip", "x-tollgate-tenant", "x-tollgate-key-id", "x-tollgate-caller", "x-http-method-override", "x-http-method", "x-method-override"];
const HOP_BY_HOP = NOT_FORWARDED.slice(0, 9);

async function contractForward(request, url, env, ctx) {
  const startedAt = Date.now();
  const headers = new Headers(request.headers);
  for (let i = 0; i < NOT_FORWARDED.length; i++) headers.delete(NOT_FORWARDED[i]);
  const address = request.headers.get("cf-connecting-ip") ?? "127.0.0.1";
  headers.set("x-forwarded-for", address);
  headers.set("x-real-ip", address);
  headers.set("x-tollgate-tenant", "bench");
  headers.set("x-tollgate-key-id", "k0123456789a");
  const hasBody = request.method !== "GET" && request.method !== "HEAD";
  const origin = await fetch(env.ORIGIN_URL + url.pathname + url.search, { method: request.method, headers, body: hasBody ? request.body : null, redirect: "manual" });
  const answer = new Response(origin.body, origin);
  const out = answer.headers;
  for (let i = 0; i < HOP_BY_HOP.length; i++) out.delete(HOP_BY_HOP[i]);
  const remaining = 999_999_999 - (startedAt % 1000);
  out.set("ratelimit-policy", '"request-key-1s";q=1000000000;w=1, "request-tenant-1s";q=1000000000;w=1');
  out.set("ratelimit", `"request-key-1s";r=${remaining};t=0`);
  out.set("x-ratelimit-limit", "1000000000");
  out.set("x-ratelimit-remaining", String(remaining));
  out.set("x-ratelimit-reset", "0");
  const length = origin.headers.get("content-length");
  ctx.waitUntil(Promise.resolve());
  if (env.CONTRACT === "log") {
    console.log(
      `{"level":"info","event":"request","format_version":1,"at_unix_ms":${startedAt},"tenant":"bench","key_id":"k0123456789a","method":${JSON.stringify(request.method)},"path":${JSON.stringify(url.pathname)},"status":${origin.status},"decision":"admitted","duration_ms":${Date.now() - startedAt},"bytes_in":0,"bytes_out":${length === null ? "null" : Number(length)}}`,
    );
  }
  return answer;
}

const encoder = new TextEncoder();
const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";
const CHECK_CHARS = 6;
let checkKey = null;
const UNAUTHORIZED_BODY = JSON.stringify({
  type: "https://tollgate.dev/problems/invalid_credential",
  title: "Unauthorized",
  status: 401,
  detail: "The API key is not valid.",
  code: "invalid_credential",
  hint: "Check the credential: an API key this gateway issued, or a valid token from an identity provider it trusts.",
});
const UNAUTHORIZED_INIT = Object.freeze({ status: 401, headers: Object.freeze({ "content-type": "application/problem+json", "cache-control": "no-store" }) });

async function unauthorized(request) {
  const auth = request.headers.get("authorization") ?? "";
  const credential = auth.startsWith("Bearer ") ? auth.slice(7) : "";
  checkKey ??= await crypto.subtle.importKey("raw", encoder.encode("bench-key-check"), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", checkKey, encoder.encode(credential.slice(0, credential.length - CHECK_CHARS))));
  const bits = (mac[0] << 22) | (mac[1] << 14) | (mac[2] << 6) | (mac[3] >>> 2);
  let check = "";
  for (let i = CHECK_CHARS - 1; i >= 0; i--) check += ALPHABET[(bits >>> (i * 5)) & 31];
  if (check === credential.slice(credential.length - CHECK_CHARS)) return new Response("ok");
  return new Response(UNAUTHORIZED_BODY, UNAUTHORIZED_INIT);
}

const records = new Map();
const states = new Map();
const KEY_PERIOD_MS = 3_600_000;
const TENANT_PERIOD_MS = 1e-6;

/** GCRA with a burst of one: the ms until `subject` may spend again (0: admitted now, and its state moved on). */
function gcraRetryMs(subject, nowMs, periodMs, write) {
  const tat = states.get(subject) ?? nowMs;
  if (tat > nowMs) return Math.ceil(tat - nowMs);
  if (write) states.set(subject, Math.max(tat, nowMs) + periodMs);
  return 0;
}

function limited(request) {
  const auth = request.headers.get("authorization");
  const token = auth !== null && auth.startsWith("Bearer ") ? auth.slice(7) : null;
  if (token === null) return new Response("no credential", { status: 401 });
  let record = records.get(token);
  if (record === undefined) {
    record = { key: `key:${token.slice(3, 15)}`, tenant: "tenant:exhausted" };
    records.set(token, record);
  }
  const nowMs = Date.now();
  const keyRetry = gcraRetryMs(record.key, nowMs, KEY_PERIOD_MS, false);
  const tenantRetry = gcraRetryMs(record.tenant, nowMs, TENANT_PERIOD_MS, false);
  const retryMs = Math.max(keyRetry, tenantRetry);
  if (retryMs > 0) return problem429(retryMs);
  gcraRetryMs(record.key, nowMs, KEY_PERIOD_MS, true);
  gcraRetryMs(record.tenant, nowMs, TENANT_PERIOD_MS, true);
  return new Response("ok");
}

/**
 * Counts `key` in `map`, holding at most `cap` keys: past them it starts
 * over, the least a bound costs (dropping the oldest key instead walks over
 * every key deleted before it: a Map keeps their places until it rebuilds).
 */
function countBounded(map, key, cap) {
  const had = map.get(key);
  if (had !== undefined) {
    map.set(key, had + 1);
    return;
  }
  if (map.size >= cap) map.clear();
  map.set(key, 1);
}

const sustained = new Map();
const minuteCells = new Map();
const minuteCallers = new Map();
const secondCallers = new Map();
let minute = -1;
let second = -1;
let secondRefusals = 0;

/** A refusal's accounting, at its least (see the head of this file); writes its log line while the second has room. */
function account(request, nowMs, tenant, decision, caller, category, status) {
  const m = Math.floor(nowMs / 60_000);
  if (m !== minute) {
    minute = m;
    minuteCells.clear();
    minuteCallers.clear();
    sustained.clear();
  }
  const cell = `${tenant}\n${decision}`;
  minuteCells.set(cell, (minuteCells.get(cell) ?? 0) + 1);
  countBounded(minuteCallers, caller, 64);
  countBounded(sustained, `${category}:${caller}`, 10_000);
  const s = Math.floor(nowMs / 1000);
  if (s !== second) {
    second = s;
    secondRefusals = 0;
    secondCallers.clear();
  }
  secondRefusals += 1;
  if (secondRefusals <= 50) {
    console.log(
      `{"level":"info","event":"request","format_version":1,"at_unix_ms":${nowMs},"tenant":${tenant === "anonymous" ? "null" : JSON.stringify(tenant)},"key_id":null,"method":${JSON.stringify(request.method)},"path":"/bench/item","status":${status},"decision":${JSON.stringify(decision)},"duration_ms":0,"bytes_in":0,"bytes_out":null}`,
    );
  } else {
    countBounded(secondCallers, caller, 16);
  }
}

// limitedAccounted and unauthorizedAccounted repeat limited's and
// unauthorized's lines rather than call them: (s) and (q) stay the very code
// the earlier figures of docs/performance.md were measured with, and the
// accounted controls pay no extra call that the plain ones do not.
function limitedAccounted(request) {
  const auth = request.headers.get("authorization");
  const token = auth !== null && auth.startsWith("Bearer ") ? auth.slice(7) : null;
  if (token === null) return new Response("no credential", { status: 401 });
  let record = records.get(token);
  if (record === undefined) {
    record = { key: `key:${token.slice(3, 15)}`, tenant: "tenant:exhausted" };
    records.set(token, record);
  }
  const nowMs = Date.now();
  const keyRetry = gcraRetryMs(record.key, nowMs, KEY_PERIOD_MS, false);
  const tenantRetry = gcraRetryMs(record.tenant, nowMs, TENANT_PERIOD_MS, false);
  const retryMs = Math.max(keyRetry, tenantRetry);
  if (retryMs > 0) {
    account(request, nowMs, "exhausted", "rate_limited", record.key, "request", 429);
    return problem429(retryMs);
  }
  gcraRetryMs(record.key, nowMs, KEY_PERIOD_MS, true);
  gcraRetryMs(record.tenant, nowMs, TENANT_PERIOD_MS, true);
  return new Response("ok");
}

/** auth_failures: 60 per 60 s, one a second here (GCRA with a burst of one; a fresh address always fits). */
const GATE_PERIOD_MS = 1000;
/** Addresses the gate holds at most (bounded as countBounded is). */
const GATE_ADDRESSES = 100_000;
const gateStates = new Map();

/** The gate's GCRA, as gcraRetryMs, over its own bounded Map. */
function gateRetryMs(address, nowMs, write) {
  const tat = gateStates.get(address) ?? nowMs;
  if (tat > nowMs) return Math.ceil(tat - nowMs);
  if (write) {
    if (gateStates.size >= GATE_ADDRESSES) gateStates.clear();
    gateStates.set(address, Math.max(tat, nowMs) + GATE_PERIOD_MS);
  }
  return 0;
}

async function unauthorizedAccounted(request) {
  const nowMs = Date.now();
  const address = request.headers.get("cf-connecting-ip") ?? "unknown";
  if (gateRetryMs(address, nowMs, false) > 0) return new Response("gate closed", { status: 429 });
  const auth = request.headers.get("authorization") ?? "";
  const credential = auth.startsWith("Bearer ") ? auth.slice(7) : "";
  checkKey ??= await crypto.subtle.importKey("raw", encoder.encode("bench-key-check"), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", checkKey, encoder.encode(credential.slice(0, credential.length - CHECK_CHARS))));
  const bits = (mac[0] << 22) | (mac[1] << 14) | (mac[2] << 6) | (mac[3] >>> 2);
  let check = "";
  for (let i = CHECK_CHARS - 1; i >= 0; i--) check += ALPHABET[(bits >>> (i * 5)) & 31];
  if (check === credential.slice(credential.length - CHECK_CHARS)) return new Response("ok");
  gateRetryMs(address, nowMs, true);
  account(request, nowMs, "anonymous", "invalid_credential", `ip:${address}`, "auth_failures", 401);
  return new Response(UNAUTHORIZED_BODY, UNAUTHORIZED_INIT);
}
