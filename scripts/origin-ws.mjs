// The recording origin's WebSocket side (scripts/origin.mjs hands it every
// `Upgrade: websocket` request, on any path). An echo: every text or binary
// message comes back unchanged, of the same type. Each upgrade is recorded
// like an HTTP request (read back with GET /__origin/requests?tag=...), plus
// `kind: "websocket"`, the messages it received and how it ended.
//
// Test controls:
//   request header x-origin-ws-refuse: <status>   answer the upgrade with this HTTP status
//                                                 and a JSON body instead of accepting it
//   text message __close:<code>:<reason>          the origin closes with that code and reason
//   text message __drop                           the origin destroys the TCP connection
//                                                 (no close frame)
//   text message __push:<n>                       the origin sends n text messages "push <i>"
// The record's `ws_close` is {code, reason, by}: by "peer" when the gateway
// closed (or went away: code 1006), by "origin" when a control closed it.
import { WebSocketServer } from "ws";

const MAX_PUSH = 100_000;

/** Messages a stream's record keeps (the first ones), so a long bench stream cannot grow the record. */
const MAX_RECORDED_MESSAGES = 50;

export function createWsOrigin(record) {
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (protocols) => protocols.values().next().value ?? false });
  const sockets = new Set();

  function handleUpgrade(req, socket, head) {
    const url = new URL(req.url ?? "/", "http://origin.invalid");
    const seen = {
      kind: "websocket",
      method: req.method,
      url: req.url,
      path: url.pathname,
      query: url.search,
      headers: req.headers,
      raw_header_names: req.rawHeaders.filter((_, i) => i % 2 === 0).map((h) => h.toLowerCase()),
      messages: [],
      messages_received: 0,
      ws_close: null,
    };
    record(seen);
    const refuse = Number(req.headers["x-origin-ws-refuse"] ?? 0);
    if (refuse >= 200 && refuse <= 599) {
      const body = JSON.stringify({ refused: true, status: refuse });
      socket.end(`HTTP/1.1 ${refuse} Refused\r\ncontent-type: application/json\r\nx-origin-seen: 1\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => serve(ws, seen));
  }

  function serve(ws, seen) {
    sockets.add(ws);
    ws.on("error", () => {});
    ws.on("close", (code, reason) => {
      sockets.delete(ws);
      seen.ws_close ??= { code, reason: reason.toString("utf8"), by: "peer" };
    });
    ws.on("message", (data, isBinary) => {
      seen.messages_received += 1;
      if (seen.messages.length < MAX_RECORDED_MESSAGES) seen.messages.push(isBinary ? { binary_bytes: data.length } : { text: data.toString("utf8") });
      if (!isBinary) {
        const text = data.toString("utf8");
        if (text === "__drop") {
          seen.ws_close = { code: 1006, reason: "", by: "origin" };
          ws.terminate();
          return;
        }
        const close = /^__close:(\d{4}):(.*)$/s.exec(text);
        if (close !== null) {
          seen.ws_close = { code: Number(close[1]), reason: close[2], by: "origin" };
          ws.close(Number(close[1]), close[2]);
          return;
        }
        const push = /^__push:(\d+)$/.exec(text);
        if (push !== null) {
          const n = Math.min(Number(push[1]), MAX_PUSH);
          for (let i = 0; i < n; i++) ws.send(`push ${i}`);
          return;
        }
      }
      ws.send(data, { binary: isBinary });
    });
  }

  return {
    handleUpgrade,
    close() {
      for (const ws of sockets) ws.terminate();
      wss.close();
    },
  };
}
