// Bench only, never deployed: the gateway's bundle (bench/.build/index.js,
// from `wrangler deploy --dry-run`) and the controls it is measured against,
// in one Worker, so every variant runs in the same isolate, on the same
// thread, against the same origin, and a round can switch between them
// request by request. The `x-bench-variant` header picks one:
//
// - (none) or `gateway`: Tollgate's own fetch handler, as deployed.
// - `gateway-base`: the same from another build (bench/.build/base/, the
//   gateway at `npm run bench -- --base=<rev>`; without --base that file
//   re-exports the first build, so both names are the same module). Two
//   builds side by side in one isolate: how a change is measured.
// - `gateway-off`: a second copy of the bundle (bench/.build/off/, its own
//   module state) run with `mode: "off"` (the TOLLGATE_OFF binding).
// - `pass`: a plain pass-through, what a user would otherwise deploy:
//   fetch(ORIGIN_URL + path + query) with the client's headers, the answer
//   returned as the runtime gives it. No header hygiene, no log line.
// - `hygienic`: the least forward that keeps the gateway's contract for
//   headers, and writes the request log's one line: the hop-by-hop names
//   (`Connection` and every name it lists, `Keep-Alive`, `TE`, `Trailer`,
//   `Transfer-Encoding`, `Upgrade`, `Proxy-Authorization`,
//   `Proxy-Connection`), the client's `Forwarded`, `X-Forwarded-Host`,
//   `True-Client-IP`, `X-Client-IP`, `X-Cluster-Client-IP` and the
//   method-override headers dropped; `X-Forwarded-For` and `X-Real-IP` set
//   to the client's address and `X-Tollgate-Tenant` / `X-Tollgate-Key-Id`
//   to who is calling; the answer's hop-by-hop names dropped; one request-log
//   line of the gateway's shape. No key lookup, no limiter, no RateLimit
//   headers, no accounting.
// - `ok`: a 2-byte answer made by the Worker itself: what the runtime spends
//   taking a request and writing an answer, the floor under every variant.
// - `answer-429`: the gateway's 429 for a key over its limit (status,
//   headers, problem+json body of the same shape, its figures from the
//   clock), with no check before it.
// - `answer-401`: the gateway's 401 for a made-up key, after the one check
//   such a key costs it: an HMAC-SHA256 of the key's body compared with its
//   last six characters.
//
// The harness (bench/run.mjs) checks at start that each control does what
// the gateway does: the origin sees the same header names from `hygienic`
// as from the gateway, and the controls' answers carry the gateway's status
// and header names.
import gateway from "./.build/index.js";
import base from "./.build/base/index.js";
import off from "./.build/off/index.js";

// The Durable Object classes the gateway binds, from the same bundle.
export { LimitLedger, OrgQuota, TenantQuota } from "./.build/index.js";

const encoder = new TextEncoder();

export default {
  fetch(request, env, ctx) {
    switch (request.headers.get("x-bench-variant")) {
      case null:
      case "gateway":
        return gateway.fetch(request, env, ctx);
      case "gateway-base":
        return base.fetch(request, env, ctx);
      case "gateway-off":
        return off.fetch(request, offEnvOf(env), ctx);
      case "pass":
        return pass(request, env);
      case "hygienic":
        return hygienic(request, env);
      case "ok":
        return new Response("ok");
      case "answer-429":
        return answer429();
      case "answer-401":
        return answer401(request);
      default:
        return new Response("unknown x-bench-variant", { status: 400 });
    }
  },
};

let offEnv = null;
let offEnvFor = null;

/** The bindings with TOLLGATE_OFF as TOLLGATE, made once per env (the gateway compiles its runtime once per config). */
function offEnvOf(env) {
  if (offEnvFor !== env) {
    offEnvFor = env;
    offEnv = { ...env, TOLLGATE: env.TOLLGATE_OFF };
  }
  return offEnv;
}

function originUrl(request, env) {
  const url = request.url;
  // The path and query as sent: everything after the authority.
  return env.ORIGIN_URL + url.slice(url.indexOf("/", url.indexOf("//") + 2));
}

function pass(request, env) {
  const hasBody = request.method !== "GET" && request.method !== "HEAD";
  return fetch(originUrl(request, env), { method: request.method, headers: request.headers, body: hasBody ? request.body : null, redirect: "manual" });
}

/**
 * Request names never forwarded that the runtime would forward: the
 * hop-by-hop names it passes on, the addresses a client may not assert, the
 * method overrides. (workerd's fetch drops Connection, Keep-Alive, TE,
 * Trailer, Upgrade and Transfer-Encoding itself: the least forward does not
 * delete them again. The harness's check sends them all.)
 */
const DROPPED = ["proxy-authorization", "proxy-connection", "forwarded", "x-forwarded-host", "true-client-ip", "x-client-ip", "x-cluster-client-ip", "x-http-method-override", "x-http-method", "x-method-override"];
/** Answer names never passed back (hop-by-hop). */
const ANSWER_DROPPED = ["connection", "keep-alive", "transfer-encoding"];
const TENANT = "bench";
const KEY_ID = "k0123456789a";

function hygienic(request, env) {
  const startedAtMs = Date.now();
  const headers = new Headers(request.headers);
  const connection = headers.get("connection");
  if (connection !== null) {
    for (const name of connection.split(",")) {
      const trimmed = name.trim();
      if (trimmed !== "") headers.delete(trimmed);
    }
  }
  for (let i = 0; i < DROPPED.length; i++) headers.delete(DROPPED[i]);
  const address = headers.get("cf-connecting-ip") ?? "";
  headers.set("x-forwarded-for", address);
  headers.set("x-real-ip", address);
  headers.set("x-tollgate-tenant", TENANT);
  headers.set("x-tollgate-key-id", KEY_ID);
  const method = request.method;
  const hasBody = method !== "GET" && method !== "HEAD";
  const target = originUrl(request, env);
  return fetch(target, { method, headers, body: hasBody ? request.body : null, redirect: "manual" }).then((origin) => {
    const answer = new Response(origin.body, origin);
    const out = answer.headers;
    for (let i = 0; i < ANSWER_DROPPED.length; i++) out.delete(ANSWER_DROPPED[i]);
    const length = out.get("content-length");
    const pathEnd = target.indexOf("?", env.ORIGIN_URL.length);
    const path = target.slice(env.ORIGIN_URL.length, pathEnd === -1 ? target.length : pathEnd);
    console.log(
      `{"level":"info","event":"request","format_version":1,"at_unix_ms":${startedAtMs},"tenant":${JSON.stringify(TENANT)},"key_id":${JSON.stringify(KEY_ID)},"method":${JSON.stringify(method)},"path":${JSON.stringify(path)},"status":${origin.status},"decision":"admitted","duration_ms":${Date.now() - startedAtMs},"bytes_in":${Number(request.headers.get("content-length") ?? 0)},"bytes_out":${length === null ? "null" : Number(length)}}`,
    );
    return answer;
  });
}

const POLICY = "request-key-1h";

function answer429() {
  // A key admitted once an hour: the wait is what is left of the hour.
  const retryMs = 3_600_000 - (Date.now() % 3_600_000);
  const retryS = Math.ceil(retryMs / 1000);
  const body = JSON.stringify({
    type: "https://tollgate.dev/problems/rate_limited",
    title: "Too Many Requests",
    status: 429,
    detail: `Rate limit exceeded in category "request": the same request is admitted in ${retryMs} ms.`,
    code: "rate_limited",
    hint: "Wait `retry_after_ms` milliseconds (see `Retry-After`) before sending again.",
    category: "request",
    retry_after_ms: retryMs,
    "violated-policies": [POLICY],
  });
  return new Response(body, {
    status: 429,
    headers: {
      "content-type": "application/problem+json",
      "cache-control": "no-store",
      "retry-after": String(retryS),
      "ratelimit-policy": `"${POLICY}";q=1;w=3600, "request-tenant-1s";q=1000000000;w=1`,
      ratelimit: `"${POLICY}";r=0;t=${retryS}`,
      "x-ratelimit-limit": "1",
      "x-ratelimit-remaining": "0",
      "x-ratelimit-reset": String(retryS),
    },
  });
}

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

async function answer401(request) {
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
