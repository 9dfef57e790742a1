// (a) in the end-to-end bench: a pass-through Worker with no checks. It
// fetches ORIGIN_URL + the request's path and query and streams the answer
// back, so the gap between it and Tollgate is Tollgate's own cost.
//
// One path, /bench/local, it answers itself with a small body and no fetch:
// the runtime's own cost of taking a request and answering it, subtracted
// from what a refusal costs (a refusal is answered without a fetch too).
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/bench/local") return new Response("ok", { headers: { "content-type": "text/plain" } });
    const hasBody = request.method !== "GET" && request.method !== "HEAD";
    return fetch(env.ORIGIN_URL + url.pathname + url.search, {
      method: request.method,
      headers: request.headers,
      body: hasBody ? request.body : null,
      redirect: "manual",
    });
  },
};
