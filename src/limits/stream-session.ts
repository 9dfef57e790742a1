// One open WebSocket stream: the gateway holds the client's end
// and the origin's, passes every message on unchanged, and charges what the
// stream holds while it stays open — one `stream_rent` unit at the start of
// every period (the first was prepaid with the open), and one `message` per
// client message when the caller has `message` limits.
//
// Whatever ends the stream first — either side's close, a refused rent or
// message, a client that vanishes, an origin that drops — ends it once
// (#finish): the rent timer stops, the stream slot goes back, the stream's
// seconds are metered and its one log line is written. The other side is
// told: a close passes on with its code and reason; a side that vanished
// (1006) becomes 1001 to the other; a refusal closes the client with 4429 and
// the origin with 1001.
//
// Why a timer and not a check on each message: rent pays for what the origin
// holds while the stream is idle too. The timer belongs to the stream's own
// request, which the runtime keeps alive while its sockets are open.
import { rateLimitRejections } from "../cache/rejection-counter";
import type { Exchange } from "../context";
import { admit, type Charge, wouldAdmit } from "../engine/gcra";
import type { LimiterTable } from "../engine/limiter-table";
import type { CategoryDefaults } from "../engine/resolve-limits";
import { errorName, log } from "../log/logger";
import { type StreamEnd, streamLogLine } from "../log/stream-log";
import { CLOSE_ABNORMAL, CLOSE_GOING_AWAY, closeQuietly, passClose, sendQuietly } from "../proxy/websocket";
import { chargedSubjects } from "./rate-limit";
import { flushUsage } from "./settle";
import { categoryCharges, limitedCharges, MESSAGE_CATEGORY, MESSAGE_COST, STREAM_RENT_CATEGORY, STREAM_RENT_PER_PERIOD } from "./stream-charges";
import { noteRefusal } from "./sustained";

/** The close code a refused rent or message sends the client: 4000 + the HTTP status it stands for. */
export const CLOSE_RATE_LIMITED = 4429;

export interface StreamSessionOptions {
  readonly table: LimiterTable;
  readonly defaults: CategoryDefaults;
  readonly rentPeriodMs: number;
  readonly usageMaxPending: number;
  readonly usageFlushIntervalMs: number;
}

/** The close reason of a refusal: what the client needs to reopen in time, as JSON (well under the 123 bytes a close frame holds). */
export function rateLimitedReason(retryAfterMs: number): string {
  return JSON.stringify({ code: "rate_limited", retry_after_ms: retryAfterMs });
}

export class StreamSession {
  readonly #x: Exchange;
  readonly #client: WebSocket;
  readonly #origin: WebSocket;
  readonly #options: StreamSessionOptions;
  /** Charged: not an exempt path, not `mode: "off"`. */
  readonly #charged: boolean;
  /** The rent's charges that carry a limit (the others cost nothing). */
  readonly #rent: readonly Charge[];
  /** Null when the caller has no `message` limits: nothing to do per message. */
  readonly #messages: readonly Charge[] | null;
  #timer: ReturnType<typeof setInterval> | null = null;
  #ended = false;
  #messagesIn = 0;
  #messagesOut = 0;
  #rentPeriods = 1;
  #meteredS = 0;

  constructor(x: Exchange, client: WebSocket, origin: WebSocket, options: StreamSessionOptions) {
    this.#x = x;
    this.#client = client;
    this.#origin = origin;
    this.#options = options;
    this.#charged = !x.bypass;
    const subjects = this.#charged ? chargedSubjects(x.caller, options.defaults) : [];
    this.#rent = limitedCharges(categoryCharges(subjects, STREAM_RENT_CATEGORY, STREAM_RENT_PER_PERIOD));
    const messages = limitedCharges(categoryCharges(subjects, MESSAGE_CATEGORY, MESSAGE_COST));
    this.#messages = messages.length > 0 ? messages : null;
  }

  /** Accepts both ends and starts relaying and charging. */
  start(): void {
    const client = this.#client;
    const origin = this.#origin;
    // Binary messages as ArrayBuffer: passed on as they came, never wrapped in a Blob (the standard default).
    client.binaryType = "arraybuffer";
    origin.binaryType = "arraybuffer";
    client.accept();
    origin.accept();
    client.addEventListener("message", (event) => this.#fromClient(event.data));
    origin.addEventListener("message", (event) => {
      if (this.#ended) return;
      if (sendQuietly(client, event.data)) this.#messagesOut++;
    });
    client.addEventListener("close", (event) => this.#closed("client", event.code, event.reason));
    origin.addEventListener("close", (event) => this.#closed("origin", event.code, event.reason));
    // An error event precedes the end of a socket that failed; its close (1006) may never follow.
    client.addEventListener("error", () => this.#closed("client", CLOSE_ABNORMAL, ""));
    origin.addEventListener("error", () => this.#closed("origin", CLOSE_ABNORMAL, ""));
    if (this.#charged) this.#timer = setInterval(() => this.#payRent(), this.#options.rentPeriodMs);
  }

  #fromClient(data: string | ArrayBuffer): void {
    if (this.#ended) return;
    const messages = this.#messages;
    if (messages !== null) {
      const table = this.#options.table;
      const nowMs = this.#x.runtime.now();
      const decision = admit(table, messages, nowMs);
      if (!decision.allowed && this.#refused(messages, decision.deniedChargeIndex, nowMs)) {
        // The replacement stream must be able to open (its rent) and send this message again.
        const reopen = wouldAdmit(table, this.#rent, nowMs).retryAfterMs;
        this.#refuse("message_refused", Math.max(decision.retryAfterMs, reopen));
        return;
      }
    }
    if (sendQuietly(this.#origin, data)) this.#messagesIn++;
  }

  #payRent(): void {
    if (this.#ended) return;
    try {
      const nowMs = this.#x.runtime.now();
      this.#meter(nowMs, false);
      // The rent of one period is exactly the open's rent, so this denial's
      // delay is the one a replacement stream's open needs.
      const decision = admit(this.#options.table, this.#rent, nowMs);
      if (!decision.allowed && this.#refused(this.#rent, decision.deniedChargeIndex, nowMs)) {
        this.#refuse("rent_refused", decision.retryAfterMs);
        return;
      }
      this.#rentPeriods++;
    } catch (err) {
      log.error("stream_rent_failed", { error: errorName(err) });
    }
  }

  /** A denied spend: counted for the sustained-limiting audit; true when it ends the stream (false in shadow mode, which records it). */
  #refused(charges: readonly Charge[], deniedIndex: number, nowMs: number): boolean {
    const x = this.#x;
    const denied = charges[deniedIndex];
    if (denied !== undefined) {
      const subject = denied.subject.startsWith("key:") ? x.caller.callerKey : denied.subject;
      noteRefusal(x, rateLimitRejections, "rate_limit_sustained", subject, denied.category, nowMs);
    }
    if (x.config.mode !== "shadow") return true;
    // Shadow mode logs each refusal it would make, and the stream goes on.
    log.info("stream_shadow_refusal", { code: "rate_limited", category: denied?.category ?? null, path: x.path }, nowMs);
    if (x.shadow === null || !x.shadow.includes("rate_limited")) (x.shadow ??= []).push("rate_limited");
    return false;
  }

  #refuse(endedBy: "rent_refused" | "message_refused", retryAfterMs: number): void {
    this.#x.decision = "rate_limited";
    closeQuietly(this.#client, CLOSE_RATE_LIMITED, rateLimitedReason(retryAfterMs));
    closeQuietly(this.#origin, CLOSE_GOING_AWAY, "rate_limited");
    this.#finish(endedBy, CLOSE_RATE_LIMITED);
  }

  #closed(side: "client" | "origin", code: number, reason: string): void {
    if (this.#ended) return;
    const gone = code === CLOSE_ABNORMAL;
    if (side === "client") {
      passClose(this.#origin, code, reason, "client went away");
      // Completes the client's closing handshake (a no-op when it is gone).
      if (!gone) passClose(this.#client, code, reason, "");
      this.#finish(gone ? "client_gone" : "client_closed", code);
    } else {
      passClose(this.#client, code, reason, "origin went away");
      if (!gone) passClose(this.#origin, code, reason, "");
      this.#finish(gone ? "origin_gone" : "origin_closed", code);
    }
  }

  #finish(endedBy: StreamEnd, closeCode: number): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    const x = this.#x;
    x.releaseStream?.();
    const options = this.#options;
    const nowMs = x.runtime.now();
    this.#meter(nowMs, true);
    if (x.runtime.requestLog.admitted()) {
      log.raw(streamLogLine(x, { endedBy, closeCode, messagesIn: this.#messagesIn, messagesOut: this.#messagesOut, rentPeriods: this.#rentPeriods }, nowMs));
    }
    // A stream's data point: status 101, and no body bytes (its messages are counted in the log line).
    flushUsage(x, nowMs, options.usageFlushIntervalMs, 101, null);
  }

  // stream_seconds so far: whole seconds at each rent period (so a long
  // stream's seconds land in the months it was open), the total rounded up at the end.
  #meter(nowMs: number, final: boolean): void {
    const tenant = this.#x.tenant;
    if (tenant === null) return;
    const elapsedMs = Math.max(0, nowMs - this.#x.startedAtMs);
    const totalS = final ? Math.ceil(elapsedMs / 1000) : Math.floor(elapsedMs / 1000);
    const delta = totalS - this.#meteredS;
    if (delta <= 0) return;
    this.#meteredS = totalS;
    this.#x.runtime.meter.add(tenant.slug, "stream_seconds", delta, nowMs, this.#options.usageMaxPending);
  }
}
