// The Worker of bench/forward-variants.mjs: one forward, with one piece of
// the work the gateway's contract asks of an admitted request added per
// variant (`?v=`), so each piece's cost in workerd can be read on its own.
const NOT_FORWARDED = ["connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "proxy-authorization", "proxy-authenticate", "proxy-connection", "forwarded", "x-forwarded-host", "x-forwarded-for", "x-real-ip", "true-client-ip", "x-client-ip", "x-cluster-client-ip", "x-tollgate-tenant", "x-tollgate-key-id", "x-tollgate-caller", "x-http-method-override", "x-http-method", "x-method-override"];
const HOP_BY_HOP = NOT_FORWARDED.slice(0, 9);
const RATE = [
  ["ratelimit-policy", '"request-key-1s";q=1000000000;w=1, "request-tenant-1s";q=1000000000;w=1'],
  ["ratelimit", '"request-key-1s";r=999999999;t=0'],
  ["x-ratelimit-limit", "1000000000"],
  ["x-ratelimit-remaining", "999999999"],
  ["x-ratelimit-reset", "0"],
];

function requestHeaders(request) {
  const headers = new Headers(request.headers);
  for (let i = 0; i < NOT_FORWARDED.length; i++) headers.delete(NOT_FORWARDED[i]);
  headers.set("x-forwarded-for", "127.0.0.1");
  headers.set("x-real-ip", "127.0.0.1");
  headers.set("x-tollgate-tenant", "bench");
  headers.set("x-tollgate-key-id", "k0123456789a");
  return headers;
}

function line(startedAt, status) {
  return `{"level":"info","event":"request","format_version":1,"at_unix_ms":${startedAt},"tenant":"bench","key_id":"k0123456789a","method":"GET","path":"/bench/item","status":${status},"decision":"admitted","duration_ms":0,"bytes_in":0,"bytes_out":2}`;
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const v = url.searchParams.get("v");
    const target = env.ORIGIN_URL + url.pathname;
    if (v === "bare") return fetch(target, { headers: request.headers, redirect: "manual" });
    if (v === "req") return fetch(target, { headers: requestHeaders(request), redirect: "manual" });
    const origin = await fetch(target, { headers: request.headers, redirect: "manual" });
    switch (v) {
      case "await":
        return origin;
      case "copy":
        return new Response(origin.body, origin);
      case "copy-hop": {
        const answer = new Response(origin.body, origin);
        for (let i = 0; i < HOP_BY_HOP.length; i++) answer.headers.delete(HOP_BY_HOP[i]);
        return answer;
      }
      case "copy-rate": {
        const answer = new Response(origin.body, origin);
        for (const [name, value] of RATE) answer.headers.set(name, value);
        return answer;
      }
      case "wait":
        ctx.waitUntil(Promise.resolve());
        return origin;
      case "log":
        console.log(line(Date.now(), origin.status));
        return origin;
      case "all": {
        const answer = new Response(origin.body, origin);
        for (let i = 0; i < HOP_BY_HOP.length; i++) answer.headers.delete(HOP_BY_HOP[i]);
        for (const [name, value] of RATE) answer.headers.set(name, value);
        ctx.waitUntil(Promise.resolve());
        console.log(line(Date.now(), origin.status));
        return answer;
      }
    }
    return new Response("unknown variant", { status: 400 });
  },
};
