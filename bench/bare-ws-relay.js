// The streams bench's baseline Worker: it holds both ends of a WebSocket as
// Tollgate does (a WebSocketPair to the client, fetch with Upgrade to the
// origin) and passes every message and close on, with no checks and no
// charges. The gap between it and Tollgate is Tollgate's own per-message
// cost; the gap between it and a direct connection is the price of holding
// both ends in a Worker at all.
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const upstream = await fetch(env.ORIGIN_URL + url.pathname + url.search, { headers: { upgrade: "websocket" } });
    const origin = upstream.webSocket;
    if (origin === null) return upstream;
    const [client, server] = Object.values(new WebSocketPair());
    server.binaryType = "arraybuffer";
    origin.binaryType = "arraybuffer";
    server.accept();
    origin.accept();
    server.addEventListener("message", (event) => origin.send(event.data));
    origin.addEventListener("message", (event) => server.send(event.data));
    const pass = (to) => (event) => {
      try {
        if (event.code === 1005 || event.code === 1006) to.close(1001, "going away");
        else to.close(event.code, event.reason);
      } catch {
        // already closed
      }
    };
    server.addEventListener("close", pass(origin));
    origin.addEventListener("close", pass(server));
    return new Response(null, { status: 101, webSocket: client });
  },
};
