// The forward and everything after it (docs/design.md steps 9–10 and "A client
// that hangs up"), in one place: the origin call, the quota commit or
// release, the release of the in-flight slot, key usage, metering and the
// request-log line.
//
// Why it is shaped this way: the Workers runtime stops running a request's
// code once its client disconnects, and cancels the I/O that request started
// unless something keeps its context alive. So the settlement is handed to
// waitUntil BEFORE the origin is awaited, and it awaits the origin call
// itself: a client that hangs up mid-upload cannot leave the reservation
// unsettled (the origin stored the bytes; they are committed) nor the slot
// held. The settlement also builds the answer and resolves the request's
// promise with it, so the request's own code awaits nothing. The slot is released
// when the answer's body is delivered or abandoned, or when the client goes
// away (`request.signal`, compatibility flag `enable_request_signal`), since
// an answer nobody reads never finishes.
//
// What it costs to know a body's end (docs/performance.md, "Watching a
// body's end"): nothing is put in the client's path unless a slot must be
// held through the body, and then only one native stream. A body with no
// slot to hold (`mode: "off"`, exempt paths), no body, or a small declared
// one is the origin's own, handed over untouched. A response-priced body is
// already read to its end by the cost tap's branch: that end (the origin's
// body fully received) releases the slot, with no second stream in front of
// the client.
import type { Exchange } from "../exchange";
import { database } from "../db/client";
import { problem } from "../errors";
import { errorName, log } from "../log/logger";
import { requestLogLine, requestLogWanted } from "../log/request-log";
import { declaredLength } from "../proxy/content-length";
import { answerFrom, callOrigin, type ForwardIdentity, type OriginCall, originRequestHeaders } from "../proxy/forward";
import { DEFAULT_ORIGIN_NAME, type Upstream, type Upstreams, upstreamFor } from "../proxy/upstream";
import { warningHeaderValue } from "../durable/quota-client";
import { keepAlive } from "../utils/wait-until";
import type { HeaderList } from "../engine/rate-limit-headers";
import { priceResponse } from "../proxy/response-cost";
import type { CostResult } from "../proxy/response-cost-result";
import { type QuotaSettled, settleQuota } from "./quota";
import { settleResponseCharge } from "./response-charge";
import { settleStatusCharge } from "./status-charge";
import { tooLargeResponse } from "./size";
import { countTraffic, trafficFlushOptions } from "./traffic";
import { writeAnalytics } from "./analytics";
import { raiseRequestAlerts } from "../alerts/raise";

/**
 * A response body of at most this many bytes, declared in Content-Length,
 * releases its slot when it is handed to the runtime: it leaves in one write,
 * and piping it costs more than the time it would hold the slot.
 */
export const SMALL_BODY_BYTES = 16 * 1024;

/** How the origin request's headers are built, for the HTTP and the WebSocket forward alike. */
export interface OriginHeaderRules {
  readonly stripCredential: boolean;
  readonly forwardMethodOverride: boolean;
}

export interface ForwardOptions extends OriginHeaderRules {
  /** The default origin and each route's (a base URL, a service binding, or the zone's own origin). */
  readonly upstreams: Upstreams;
  readonly maxRequestBytes: number;
  readonly usageMaxPending: number;
  readonly usageFlushIntervalMs: number;
}

type Header = readonly [string, string];

/** Resolves once, with whatever ends the wait first. */
function signal(): { promise: Promise<void>; fire: () => void } {
  let fire!: () => void;
  const promise = new Promise<void>((resolve) => (fire = resolve));
  return { promise, fire };
}

function clientGone(request: Request): Promise<void> | null {
  const abort = request.signal;
  if (abort === undefined || abort === null) return null;
  if (abort.aborted) return Promise.resolve();
  return new Promise((resolve) => abort.addEventListener("abort", () => resolve(), { once: true }));
}

/**
 * One forwarded request's settlement: started before the origin is awaited,
 * run to its end under waitUntil. It also builds the answer and hands it to
 * the request (`answer`), so a request costs one continuation on the
 * origin's response, not one here and one in the request's own code.
 */
class Settlement {
  readonly #x: Exchange;
  readonly #call: OriginCall;
  readonly #options: ForwardOptions;
  /** The request's answer, resolved by run() once it can be built. */
  readonly answer: Promise<Response>;
  #resolve!: (answer: Response) => void;
  /** The origin's body as the client gets it (teed when the response is priced by its body). */
  #body: ReadableStream<Uint8Array> | null = null;
  #answerBody: ReadableStream<Uint8Array> | null = null;

  constructor(x: Exchange, call: OriginCall, options: ForwardOptions) {
    this.#x = x;
    this.#call = call;
    this.#options = options;
    this.answer = new Promise<Response>((resolve) => (this.#resolve = resolve));
  }

  /** The background half: runs to the end whether or not the client stays. Never rejects. */
  async run(): Promise<void> {
    try {
      await this.#settle();
    } catch (err) {
      // A bug past this point must neither leave the request unanswered nor keep its slot.
      log.error("settlement_failed", { error: errorName(err) });
      this.#x.decision = "internal_error";
      this.#resolve(problem("internal_error", { detail: "The gateway failed to handle this request." }));
      this.#x.releaseSlot?.();
    }
  }

  async #settle(): Promise<void> {
    const x = this.#x;
    const options = this.#options;
    let origin: Response;
    try {
      origin = await this.#call.response;
    } catch (err) {
      const tooLarge = this.#call.tooLarge();
      if (!tooLarge) log.warn("origin_unreachable", { error: errorName(err) });
      x.decision = tooLarge ? "request_too_large" : x.decision;
      const failed = tooLarge ? tooLargeResponse(options.maxRequestBytes, null) : originUnreachable(this.#call.origin);
      this.#resolve(withHeaders(failed, extraHeaders(x, null)));
      // The answer is a small problem: the slot is not held through the quota object's round trip.
      x.releaseSlot?.();
      await settleQuota(x, false);
      this.#after(tooLarge ? 413 : 502, null, !tooLarge);
      return;
    }
    let quotaResult: QuotaSettled | null = null;
    if (x.upload !== null || x.removal !== null) {
      quotaResult = await settleQuota(x, origin.status >= 200 && origin.status < 300);
      const delta = quotaResult?.deltaBytes ?? 0;
      if (delta !== 0) x.runtime.meter.add(quotaResult!.tenant, "bytes_stored", delta, x.runtime.now(), options.usageMaxPending);
    }
    if (x.statusCharge !== null) {
      // charge_on_status: given back now if the status does not match, before
      // the answer is built (its headers say so) and before a priced
      // settlement of the same request (which takes it into account).
      const settled = settleStatusCharge(x, origin.status, x.runtime.now());
      if (settled !== null) x.rateHeaders = settled;
    }
    // A response-priced route: the cost from a header settles now (that
    // answer's RateLimit headers include it); from the body, once it has been
    // read to its end — also when the client has gone (the origin's bytes
    // are still read: a caller cannot dodge its final usage event by leaving).
    let costSettled: Promise<void> | null = null;
    let body = origin.body;
    const bytesOut = declaredLength(origin.headers);
    const release = x.releaseSlot;
    // The slot is held until the answer's body has been streamed, unless
    // there is none to hold it for: no body, or a small declared one (it
    // leaves in one write; watching it would cost more than it holds).
    const hold = release !== null && body !== null && (bytesOut === null || bytesOut > SMALL_BODY_BYTES);
    // A body the cost tap reads to its end anyway: that end is the slot's.
    let tapEnded: Promise<void> | null = null;
    if (x.priced !== null) {
      const priced = priceResponse(origin, x.priced.charge, { drain: hold });
      body = priced.body;
      tapEnded = priced.ended;
      const settle = (result: CostResult): HeaderList | null => settleResponseCharge(x, result, x.runtime.now(), options.usageMaxPending);
      if (priced.known !== null) {
        const settled = settle(priced.known);
        if (settled !== null) x.rateHeaders = settled;
      } else costSettled = priced.cost.then((result) => void settle(result));
    }
    this.#body = body;
    // Otherwise the origin's body is piped through a native stream whose end
    // is the delivery's: the only way this runtime tells a body's end.
    const delivered = hold && tapEnded === null ? signal() : null;
    const ended = delivered !== null ? delivered.promise : hold ? tapEnded : null;
    this.#resolve(answerFrom(origin, extraHeaders(x, quotaResult), delivered === null ? body : this.#deliveredBody(body!, bytesOut, delivered.fire)));
    this.#after(origin.status, bytesOut, true);
    if (release !== null && ended === null) release();
    if (ended === null && costSettled === null) return;
    // Whether the client actually went away (the signal firing), not whether it could.
    let left = false;
    const gone = clientGone(x.request)?.then(() => {
      left = true;
    });
    if (ended !== null) {
      await (gone === undefined ? ended : Promise.race([ended, gone]));
      release!();
      if (left) this.#cancelAnswer();
    }
    if (costSettled !== null) {
      // A teed branch nobody reads would hold the origin's bytes: once the client is gone, let it go.
      void gone?.then(() => this.#cancelAnswer());
      await costSettled;
    }
  }

  // Nobody will read an answer whose client went away: let its body go. A
  // locked body is being read by the runtime, which cancels it itself.
  #cancelAnswer(): void {
    const body = this.#answerBody ?? this.#body;
    if (body !== null && !body.locked) body.cancel().catch(() => {});
  }

  // The origin's body, piped so that the end of its delivery (finished,
  // failed, or cancelled by the runtime when the client goes) is known.
  #deliveredBody(body: ReadableStream<Uint8Array>, length: number | null, fire: () => void): ReadableStream<Uint8Array> {
    // A FixedLengthStream keeps the origin's Content-Length on the way out
    // (an identity stream would turn the response chunked).
    const { readable, writable } = length === null ? new IdentityTransformStream() : new FixedLengthStream(length);
    body.pipeTo(writable).then(fire, fire);
    this.#answerBody = readable;
    return readable;
  }

  // Key usage, metering, the request log and the background flushes, once the origin answered.
  #after(status: number, bytesOut: number | null, forwarded: boolean): void {
    const x = this.#x;
    const options = this.#options;
    const nowMs = x.runtime.now();
    const caller = x.caller;
    const tenant = x.tenant;
    if (forwarded && caller.kind === "key") x.runtime.keyUsage.recordKeyUse(caller.keyId, x.clientAddress, nowMs, options.usageMaxPending);
    if (forwarded && tenant !== null) {
      x.runtime.meter.add(tenant.slug, "requests", 1, nowMs, options.usageMaxPending);
      const bytesIn = x.declaredBytes ?? 0;
      if (bytesIn > 0) x.runtime.meter.add(tenant.slug, "bytes_in", bytesIn, nowMs, options.usageMaxPending);
    }
    if (requestLogWanted(x, nowMs)) log.raw(requestLogLine(x, status, bytesOut, nowMs));
    flushUsage(x, nowMs, options.usageFlushIntervalMs, status, bytesOut);
  }
}

/**
 * Counts the request (traffic, Analytics Engine) and starts the background
 * flushes of metering (which writes key usage with it) and traffic when they
 * are due (on most requests of a busy isolate none is: nothing is allocated).
 * Metering is also written at once when this request is the isolate's only
 * one in flight: on a quiet gateway no later request may come to carry it.
 */
export function flushUsage(x: Exchange, nowMs: number, intervalMs: number, status: number, bytesOut: number | null): void {
  const { meter, traffic } = x.runtime;
  // Every request ends here exactly once (a gateway answer, a settled forward, a stream's end): its traffic count and data point too.
  if (x.config.traffic.enabled) countTraffic(x, nowMs);
  writeAnalytics(x, status, bytesOut, nowMs);
  raiseRequestAlerts(x, nowMs);
  const trafficDue = traffic.flushDue(nowMs, intervalMs);
  // A quiet isolate writes its metering as its request ends; a busy one leaves it to the interval.
  const idle = x.config.usageFlushWhenIdle && meter.endedQuietly(nowMs) && meter.hasPending && x.runtime.inFlight.total <= 1;
  if (!idle && !meter.flushDue(nowMs, intervalMs) && !trafficDue) return;
  const db = () => database(x.env.DB);
  const later = (work: Promise<unknown>) => keepAlive(x.ctx, work);
  if (idle) meter.flushIdle(db, nowMs, later);
  else meter.maybeFlush(db, nowMs, intervalMs, later);
  if (trafficDue) traffic.maybeFlush(db, nowMs, intervalMs, trafficFlushOptions(x), later);
}

const NO_HEADERS: readonly Header[] = Object.freeze([]);

/** The gateway's own headers on an answer: rate limits, quota warning, shadow refusals, the delay it was held. Copy it to add more. */
export function extraHeaders(x: Exchange, quota: QuotaSettled | null): readonly Header[] {
  const rate = x.rateHeaders ?? NO_HEADERS;
  const warning = quota === null ? null : warningHeaderValue(quota.warnings);
  if (warning === null && x.shadow === null && x.shadowPolicies === null && x.delayedMs === 0) return rate;
  const extra: Header[] = [...rate];
  if (warning !== null) extra.push(["tollgate-quota-warning", warning]);
  const shadow = shadowHeaderValue(x);
  if (shadow !== null) extra.push(["tollgate-shadow", shadow]);
  // Held by a limit's delay_max_ms before it was forwarded.
  if (x.delayedMs > 0) extra.push(["tollgate-delayed-ms", String(x.delayedMs)]);
  return extra;
}

/**
 * Tollgate-Shadow: what `mode: "shadow"` would have refused (`<code>`), then
 * what each shadow policy would have (`<code>;policy="<name>"`), as one
 * Structured Field List. Policy names hold no quote or backslash.
 */
export function shadowHeaderValue(x: Exchange): string | null {
  const gateway = x.shadow;
  const policies = x.shadowPolicies;
  if (gateway === null && policies === null) return null;
  const items: string[] = gateway === null ? [] : [...gateway];
  if (policies !== null) for (const mark of policies) items.push(`${mark.code};policy="${mark.policy}"`);
  return items.join(", ");
}

/** A response of our own (a problem) with extra headers set. */
export function withHeaders(response: Response, extra: readonly Header[]): Response {
  for (const [name, value] of extra) response.headers.set(name, value);
  return response;
}

/** Who is calling, as the origin is told, and the header rules (HTTP and WebSocket alike). */
function forwardIdentity(x: Exchange, rules: OriginHeaderRules): ForwardIdentity {
  const caller = x.caller;
  return {
    clientAddress: x.clientAddress,
    tenant: x.tenant?.slug ?? null,
    keyId: caller.kind === "key" ? caller.keyId : null,
    caller: caller.kind === "jwt" ? caller.callerKey : null,
    stripCredential: rules.stripCredential,
    forwardMethodOverride: rules.forwardMethodOverride,
  };
}

/** The headers the origin gets for an admitted WebSocket upgrade: the client's, filtered, and who is calling. */
export function originHeadersFor(x: Exchange, rules: OriginHeaderRules): Headers {
  return originRequestHeaders(x.request.headers, forwardIdentity(x, rules));
}

/** The origin an admitted request goes to: its route's (`origin` on the route), else the default. */
export function upstreamOf(x: Exchange, upstreams: Upstreams): Upstream {
  const route = x.route;
  return upstreamFor(upstreams, route === null ? null : route.index);
}

/** 502 origin_unreachable naming the origin (never the error: a service binding's text is its own business). */
export function originUnreachable(name: string): Response {
  const which = name === DEFAULT_ORIGIN_NAME ? "The origin" : `The origin "${name}"`;
  return problem("origin_unreachable", { detail: `${which} could not be reached.`, extras: { origin: name } });
}

/**
 * The last step: forwards to the request's origin (a base URL joined with
 * the request's collapsed path, then the query; a service binding with the
 * same path and query; with no ORIGIN_URL, the zone's own origin) and
 * settles everything after.
 * Needs the upstreams and the forward and usage options; returns the HTTP pipeline's forward (x to the client's Response).
 * @example const forward = forwardToOrigin({ upstreams, stripCredential: false, forwardMethodOverride: false, maxRequestBytes: 0, usageMaxPending: 10_000, usageFlushIntervalMs: 60_000 });
 */
export function forwardToOrigin(options: ForwardOptions): (x: Exchange) => Promise<Response> {
  const upstreams = options.upstreams;
  return function forwardStep(x) {
    const upstream = upstreamOf(x, upstreams);
    const call = callOrigin(x.request, upstream.url(x.path, x.search, x.request.url), forwardIdentity(x, options), x.declaredBytes, options.maxRequestBytes, upstream, x.env);
    return settleAsHttp(x, call, options);
  };
}

/**
 * Settles an origin call as an HTTP request (quota, in-flight slot, response
 * charge, usage, request log), under waitUntil; resolves with the answer.
 * Also used for a WebSocket upgrade the origin answered without 101.
 */
export function settleAsHttp(x: Exchange, call: OriginCall, options: ForwardOptions): Promise<Response> {
  const settlement = new Settlement(x, call, options);
  keepAlive(x.ctx, settlement.run());
  return settlement.answer;
}
