// The origin of `npm run bench:origins` (bench/origins.mjs): a small Worker,
// reached as a service binding or over HTTP, answering every request with a
// short JSON body naming itself and the path it was asked for.
export default {
  fetch(request) {
    const url = new URL(request.url);
    return new Response(`{"service":"service-origin","path":${JSON.stringify(url.pathname)}}`, { headers: { "content-type": "application/json" } });
  },
};
