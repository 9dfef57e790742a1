// The last step of a WebSocket upgrade (DESIGN §3 step 9 and §13): the same
// origin URL and header rules as the HTTP forward, then the origin's end of
// the stream is opened and, when the origin accepts, the client is answered
// 101 with its end of a WebSocketPair and the StreamSession relays between
// the two. An origin that refuses the upgrade gets its answer passed back
// whole; an origin that cannot be reached is 502 origin_unreachable. Either
// way the stream slot goes back at once.
//
// The open runs under waitUntil, as the HTTP settlement does: a client that
// hangs up during the origin handshake must not strand the slot it took.
import type { Exchange } from "../context";
import { problem } from "../errors";
import { errorName, log } from "../log/logger";
import { requestLogLine } from "../log/request-log";
import { declaredLength } from "../proxy/content-length";
import { answerFrom } from "../proxy/forward";
import type { Upstreams } from "../proxy/upstream";
import { closeQuietly, openOriginSocket, upgradeHeaders } from "../proxy/websocket";
import { keepAlive } from "../utils/wait-until";
import { extraHeaders, flushUsage, originHeadersFor, originUnreachable, upstreamOf, withHeaders } from "./settle";
import { StreamSession, type StreamSessionOptions } from "./stream-session";

export interface StreamForwardOptions extends StreamSessionOptions {
  /** The default origin and each route's. */
  readonly upstreams: Upstreams;
  readonly stripCredential: boolean;
}

/**
 * Proxies an admitted upgrade to the origin as a WebSocket.
 * @example const forwardStream = forwardWebSocket({ upstreams, stripCredential: false, table, defaults, rentPeriodMs: 60_000, requestLog: true, usageMaxPending: 10_000, usageFlushIntervalMs: 60_000 });
 */
export function forwardWebSocket(options: StreamForwardOptions): (x: Exchange) => Promise<Response> {
  const upstreams = options.upstreams;
  return function forwardWebSocketStep(x) {
    const headers = upgradeHeaders(originHeadersFor(x, options.stripCredential));
    const upstream = upstreamOf(x, upstreams);
    const env = x.env;
    const target = upstream.url(x.path, x.search, x.request.url);
    const opening = open(x, target, headers, options, upstream.name, (url, init) => upstream.fetch(url, init, env)).catch((err: unknown) => {
      log.error("stream_open_failed", { error: errorName(err) });
      x.releaseStream?.();
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
    x.releaseStream?.();
    let answer: Response;
    if (upgrade.kind === "unreachable") {
      log.warn("origin_unreachable", { error: upgrade.error });
      x.decision = "origin_unreachable";
      answer = withHeaders(originUnreachable(originName), extraHeaders(x, null));
    } else {
      opened(x, options);
      answer = answerFrom(upgrade.response, extraHeaders(x, null));
    }
    const nowMs = x.runtime.now();
    if (options.requestLog) log.raw(requestLogLine(x, answer.status, declaredLength(answer.headers), nowMs));
    flushUsage(x, nowMs, options.usageFlushIntervalMs, answer.status, declaredLength(answer.headers));
    return answer;
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
  opened(x, options);
  const extra = [...extraHeaders(x, null)];
  if (upgrade.protocol !== null) extra.push(["sec-websocket-protocol", upgrade.protocol]);
  return new Response(null, { status: 101, webSocket: client, headers: extra });
}

/** Key usage and the `requests` metric, as for any forwarded request. */
function opened(x: Exchange, options: StreamForwardOptions): void {
  const nowMs = x.runtime.now();
  const caller = x.caller;
  if (caller.kind === "key") x.runtime.keyUsage.recordKeyUse(caller.keyId, x.clientAddress, nowMs, options.usageMaxPending, options.usageFlushIntervalMs);
  const tenant = x.tenant;
  if (tenant !== null) x.runtime.meter.add(tenant.slug, "requests", 1, nowMs, options.usageMaxPending);
}
