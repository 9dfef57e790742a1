// The last step of a WebSocket upgrade: the same
// origin URL and header rules as the HTTP forward, then the origin's end of
// the stream is opened and, when the origin accepts, the client is answered
// 101 with its end of a WebSocketPair and the StreamSession relays between
// the two. The stream slot and the in-flight slot are held while the origin
// is asked; a stream then gives its in-flight slot back (it may stay open
// for hours). An origin that answers anything but 101 (a refusal, or an
// answer from a framework that ignores `Upgrade`) has answered an HTTP
// request: it is settled as one (the in-flight slot until the body is
// delivered, the response charge from its header or body, the request log),
// so an upgrade header is no way around a response-priced charge. An origin
// that cannot be reached is 502 origin_unreachable, as for any request.
//
// The open runs under waitUntil, as the HTTP settlement does: a client that
// hangs up during the origin handshake must not strand the slots it took.
import type { Exchange } from "../exchange";
import { problem } from "../errors";
import { errorName, log } from "../log/logger";
import { NOT_FOUND } from "../proxy/response-cost-result";
import { closeQuietly, openOriginSocket, upgradeHeaders } from "../proxy/websocket";
import { keepAlive } from "../utils/wait-until";
import { settleResponseCharge } from "./response-charge";
import { extraHeaders, type ForwardOptions, originHeadersFor, settleAsHttp, upstreamOf } from "./settle";
import { StreamSession, type StreamSessionOptions } from "./stream-session";

export interface StreamForwardOptions extends StreamSessionOptions, ForwardOptions {}

const NEVER_TOO_LARGE = (): boolean => false;

/**
 * Proxies an admitted upgrade to the origin as a WebSocket.
 * Needs the upstreams, the limiter table, the defaults and the rent, forward and usage options; returns the stream pipeline's forward (x to the 101 Response).
 * @example const forwardStream = forwardWebSocket({ upstreams, stripCredential: false, forwardMethodOverride: false, maxRequestBytes: 0, table, defaults, rentPeriodMs: 60_000, usageMaxPending: 10_000, usageFlushIntervalMs: 60_000 });
 */
export function forwardWebSocket(options: StreamForwardOptions): (x: Exchange) => Promise<Response> {
  const upstreams = options.upstreams;
  return function forwardWebSocketStep(x) {
    const headers = upgradeHeaders(originHeadersFor(x, options));
    const upstream = upstreamOf(x, upstreams);
    const env = x.env;
    const target = upstream.url(x.path, x.search, x.request.url);
    const opening = open(x, target, headers, options, upstream.name, (url, init) => upstream.fetch(url, init, env)).catch((err: unknown) => {
      log.error("stream_open_failed", { error: errorName(err) });
      x.releaseStream?.();
      x.releaseSlot?.();
      x.decision = "internal_error";
      return problem("internal_error", { detail: "The gateway failed to open the stream." });
    });
    keepAlive(x.ctx, opening);
    return opening;
  };
}

async function open(x: Exchange, target: string, headers: Headers, options: StreamForwardOptions, originName: string, send: (url: string, init: RequestInit) => Promise<Response>): Promise<Response> {
  const upgrade = await openOriginSocket(target, headers, send);
  if (upgrade.kind !== "open") {
    // No stream: the stream slot goes back now; the rest is an HTTP request's settlement.
    x.releaseStream?.();
    const response = upgrade.kind === "refused" ? Promise.resolve(upgrade.response) : Promise.reject(upgrade.cause);
    return settleAsHttp(x, { response, tooLarge: NEVER_TOO_LARGE, origin: originName }, options);
  }
  const pair = new WebSocketPair();
  const client = pair[0];
  const server = pair[1];
  try {
    new StreamSession(x, server, upgrade.socket, options).start();
  } catch (err) {
    closeQuietly(upgrade.socket, 1011, "gateway error");
    throw err;
  }
  // A stream holds its stream slot, not an in-flight slot.
  const release = x.releaseSlot;
  x.releaseSlot = null;
  release?.();
  opened(x, options);
  const extra = [...extraHeaders(x, null)];
  if (upgrade.protocol !== null) extra.push(["sec-websocket-protocol", upgrade.protocol]);
  return new Response(null, { status: 101, webSocket: client, headers: extra });
}

/** Key usage and the `requests` metric, as for any forwarded request; a response-priced route's reserve stands (a stream has no answer to price). */
function opened(x: Exchange, options: StreamForwardOptions): void {
  const nowMs = x.runtime.now();
  const caller = x.caller;
  if (caller.kind === "key") x.runtime.keyUsage.recordKeyUse(caller.keyId, x.clientAddress, nowMs, options.usageMaxPending);
  const tenant = x.tenant;
  if (tenant !== null) x.runtime.meter.add(tenant.slug, "requests", 1, nowMs, options.usageMaxPending);
  if (x.priced !== null) settleResponseCharge(x, NOT_FOUND.absent, nowMs, options.usageMaxPending);
}
