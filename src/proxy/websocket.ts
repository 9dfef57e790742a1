// The WebSocket half of the forward: the origin's end of a
// proxied stream. The gateway holds both ends (the client's through a
// WebSocketPair, the origin's from fetch), so it can charge messages and
// close either side; this file only opens the origin's end and says how a
// close is passed on. Charging lives in src/limits/stream-session.ts.
//
// workerd performs the origin handshake itself: given `Upgrade: websocket` it
// writes its own Sec-WebSocket-Key and -Version (it replaces whatever the
// request carries) and answers 101 with `response.webSocket`; an origin that
// refuses (or ignores `Upgrade`, as most frameworks do) answers an ordinary
// response, which is settled and passed back as any HTTP answer is.

/**
 * Handshake headers that belong to one hop: each side negotiates its own key,
 * version and extensions (compression) with the gateway. The subprotocol
 * (Sec-WebSocket-Protocol) is end to end and passes.
 */
const HANDSHAKE_HEADERS: readonly string[] = ["sec-websocket-key", "sec-websocket-version", "sec-websocket-accept", "sec-websocket-extensions"];

/** The origin request's headers for an upgrade: the HTTP forward's (hop-by-hop dropped, identity set), less one hop's handshake, plus `Upgrade: websocket`. */
export function upgradeHeaders(forwarded: Headers): Headers {
  for (const name of HANDSHAKE_HEADERS) forwarded.delete(name);
  forwarded.set("upgrade", "websocket");
  return forwarded;
}

export type OriginUpgrade =
  | { readonly kind: "open"; readonly socket: WebSocket; readonly protocol: string | null }
  /** The origin answered without 101: an HTTP answer. */
  | { readonly kind: "refused"; readonly response: Response }
  | { readonly kind: "unreachable"; readonly cause: unknown };

/** Opens the origin's end of a stream at `target` (an http(s) URL) through `send` (fetch, or a service binding's). Never throws. */
export async function openOriginSocket(target: string, headers: Headers, send: (url: string, init: RequestInit) => Promise<Response> = (url, init) => fetch(url, init)): Promise<OriginUpgrade> {
  let response: Response;
  try {
    response = await send(target, { method: "GET", headers, redirect: "manual" });
  } catch (err) {
    return { kind: "unreachable", cause: err };
  }
  const socket = response.webSocket;
  if (response.status !== 101 || socket === null) return { kind: "refused", response };
  return { kind: "open", socket, protocol: response.headers.get("sec-websocket-protocol") };
}

/** The closing code a Worker may send: RFC 6455's defined codes that may appear in a close frame, and 3000–4999. */
export function sendableCloseCode(code: number): boolean {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
}

/** RFC 6455 section 7.4.1: 1001 "going away". What the gateway sends one side when the other vanished or was refused. */
export const CLOSE_GOING_AWAY = 1001;
/** "No status received": the peer's close frame carried no code. */
export const CLOSE_NO_STATUS = 1005;
/** "Abnormal closure": the connection dropped without a close frame (workerd reports it so). */
export const CLOSE_ABNORMAL = 1006;

/**
 * Closes `socket` with the code and reason the other side closed with, as far
 * as a close frame can carry them: no code when the other side sent none
 * (1005), 1001 when it vanished (1006, 1015 or anything unsendable).
 * Never throws (the socket may be closed already).
 */
export function passClose(socket: WebSocket, code: number, reason: string, vanishedReason: string): void {
  if (code === CLOSE_NO_STATUS) closeQuietly(socket);
  else if (sendableCloseCode(code)) closeQuietly(socket, code, reason);
  else closeQuietly(socket, CLOSE_GOING_AWAY, vanishedReason);
}

/** socket.close that never throws: closing a socket already closed (or gone) is not an error here. */
export function closeQuietly(socket: WebSocket, code?: number, reason?: string): void {
  try {
    if (code === undefined) socket.close();
    else socket.close(code, reason);
  } catch {
    // Closed already, or its connection is gone.
  }
}

/** socket.send that never throws: a message racing a close is dropped, as it would be on the wire. */
export function sendQuietly(socket: WebSocket, data: string | ArrayBuffer): boolean {
  try {
    socket.send(data);
    return true;
  } catch {
    return false;
  }
}
