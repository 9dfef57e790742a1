// (a) in the end-to-end bench: a pass-through Worker with no checks. It
// fetches ORIGIN_URL + the request's path and query and streams the answer
// back, so the gap between it and Tollgate is Tollgate's own cost.
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const hasBody = request.method !== "GET" && request.method !== "HEAD";
    return fetch(env.ORIGIN_URL + url.pathname + url.search, {
      method: request.method,
      headers: request.headers,
      body: hasBody ? request.body : null,
      redirect: "manual",
    });
  },
};
