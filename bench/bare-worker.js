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
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/bench/local") return new Response("ok", { headers: { "content-type": "text/plain" } });
    if (url.pathname === "/bench/problem") return problem429(Date.now() % 1000);
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
