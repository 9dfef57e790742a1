// Bench only, never deployed: Tollgate's own bundle (bench/.build/index.js,
// from `wrangler deploy --dry-run`) with an origin inside the isolate: the
// global `fetch` answers ORIGIN_URL's host (http://origin.stub) itself with a
// 2-byte body at once, as the origin of the end-to-end bench does, and
// passes anything else on. One path only this wrapper answers, /__bench/loop, which runs
// `n` requests through the Worker's own `fetch` inside one request. What a
// pass costs is then the isolate's own work (the router, the checks, the
// settlement, the answer's headers, the log line), with no HTTP parsing, no
// socket and no network fetch in it, and enough passes per request that the
// workerd's CPU time per pass is read to a microsecond
// (bench/pipeline-loop.mjs). `what=bare` runs the same loop with no gateway:
// the stub's answer copied, as a pass-through Worker would hand it on.
import gateway from "./.build/index.js";

export { LimitLedger, OrgQuota, TenantQuota } from "./.build/index.js";

const STUB_ORIGIN = "http://origin.stub";
const realFetch = globalThis.fetch;
const ORIGIN_STUB = {
  async fetch() {
    return new Response("ok", { headers: { "content-type": "text/plain", "content-length": "2" } });
  },
};
globalThis.fetch = (input, init) => (typeof input === "string" && input.startsWith(STUB_ORIGIN) ? ORIGIN_STUB.fetch(input, init) : realFetch(input, init));

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

/** A well-formed managed key nobody minted, and an address, for pass i of a flood (cheap and the same work in both loops). */
function floodHeaders(i, headers) {
  let id = "";
  for (let n = i, k = 0; k < 12; k++, n = Math.floor(n / 32)) id += ALPHABET[n % 32];
  headers.set("authorization", `Bearer tg_${id}_${id}${id}${id.slice(0, 8)}`);
  headers.set("cf-connecting-ip", `11.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
}

let wrapped = null;
let floodCounter = 0;

export default {
  async fetch(request, env, ctx) {
    wrapped ??= env;
    const url = new URL(request.url);
    if (url.pathname !== "/__bench/loop") return gateway.fetch(request, wrapped, ctx);
    const n = Number(url.searchParams.get("n") ?? "100");
    const bare = url.searchParams.get("what") === "bare";
    const flood = url.searchParams.get("flood") === "1";
    const target = `${url.origin}${url.searchParams.get("path") ?? "/bench/item?x=1"}`;
    const status = {};
    for (let i = 0; i < n; i++) {
      const headers = new Headers(request.headers);
      if (flood) floodHeaders(floodCounter++, headers);
      const passRequest = new Request(target, { headers });
      let answer;
      if (bare) {
        const origin = await fetch(`${STUB_ORIGIN}/bench/item?x=1`, { headers, redirect: "manual" });
        answer = new Response(origin.body, origin);
      } else answer = await gateway.fetch(passRequest, wrapped, ctx);
      await answer.arrayBuffer();
      status[answer.status] = (status[answer.status] ?? 0) + 1;
    }
    return Response.json(status);
  },
};
