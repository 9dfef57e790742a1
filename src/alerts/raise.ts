// Raising alerts from the data plane, off the request path: each is a queue
// send under waitUntil, only when `alerts.webhook_url` is set. An address is
// never put in an alert: a caller is named by an explain-able id, an
// address by its keyed digest (computed here, in the background).
import type { Exchange } from "../exchange";
import { errorName, log } from "../log/logger";
import { keepAlive } from "../utils/wait-until";
import { callerIdOf } from "../identity/caller-id";
import { callerSubject } from "../limits/traffic";
import { type AlertMessage, raiseAlert } from "./alert";

/** One `block.hit` per block per hour, one `ledger.unavailable` per minute, per isolate. */
const BLOCK_HIT_PERIOD_MS = 3_600_000;
const LEDGER_UNAVAILABLE_PERIOD_MS = 60_000;
const MAX_REMEMBERED = 10_000;

/** What one alert type has queued this minute, and dropped since its last one queued. */
interface TypeCount {
  minute: number;
  queued: number;
  dropped: number;
}

/** Which alerts this isolate raised lately, so a flood raises one, not thousands. Bounded. */
export class AlertOnce {
  readonly #until = new Map<string, number>();
  /** One entry per alert type (a fixed, short list). */
  readonly #perType = new Map<string, TypeCount>();

  /**
   * Takes one of the `perMinute` alerts of `type` this isolate may queue in
   * the clock minute holding `nowMs`. Null when they are used up (the alert
   * is dropped and counted); else how many of its type were dropped since
   * the last one queued, for this one to report (0: none).
   */
  take(type: string, nowMs: number, perMinute: number): number | null {
    const minute = Math.floor(nowMs / 60_000);
    let count = this.#perType.get(type);
    if (count === undefined) {
      count = { minute, queued: 0, dropped: 0 };
      this.#perType.set(type, count);
    }
    if (count.minute !== minute) {
      count.minute = minute;
      count.queued = 0;
    }
    if (count.queued >= perMinute) {
      count.dropped += 1;
      return null;
    }
    count.queued += 1;
    const dropped = count.dropped;
    count.dropped = 0;
    return dropped;
  }

  /** True the first time `key` is seen in a period (and then not again until it ends). */
  first(key: string, nowMs: number, periodMs: number): boolean {
    const until = this.#until.get(key);
    if (until !== undefined && nowMs < until) return false;
    this.#until.delete(key);
    this.#until.set(key, nowMs + periodMs);
    if (this.#until.size > MAX_REMEMBERED) this.#until.delete(this.#until.keys().next().value!);
    return true;
  }
}

/** The caller of a request as an alert names it: `key:<id>`, `jwt:<hex>`, or an address's digest; null when unknown. */
async function alertCallerOf(x: Exchange, nowMs: number): Promise<string | null> {
  const id = callerIdOf(x);
  if (id === null || !id.startsWith("ip:")) return id;
  return callerSubject(x.runtime, x.env, nowMs, id);
}

/**
 * Queues an alert about this request (its caller named when `withCaller`),
 * in the background. At most `alerts.max_per_type_per_minute` of a type per
 * isolate and minute: past that they are dropped, and the next one of the
 * type that is queued says how many in `data.dropped`, so a flood (a
 * sustained limit hit from thousands of /64s) costs a bounded number of
 * queue messages, D1 rows and webhook posts.
 */
export function alertAbout(x: Exchange, raised: Omit<AlertMessage, "id" | "at" | "caller">, nowMs: number, withCaller: boolean): void {
  const webhookUrl = x.config.alertWebhookUrl;
  if (webhookUrl === null) return;
  const dropped = x.runtime.alertOnce.take(raised.type, nowMs, x.config.alertMaxPerTypePerMinute);
  if (dropped === null) return;
  const alert = dropped === 0 ? raised : { ...raised, data: { ...raised.data, dropped } };
  const queue = x.env.ALERTS as Queue | undefined;
  keepAlive(
    x.ctx,
    (async () => {
      try {
        const caller = withCaller ? await alertCallerOf(x, nowMs) : null;
        await raiseAlert({ webhookUrl, queue }, caller === null ? alert : { ...alert, caller }, nowMs);
      } catch (err) {
        log.warn("alert_not_queued", { type: alert.type, error: errorName(err) });
      }
    })(),
  );
}

/** The alerts a finished request raises: the first hit of a block in an hour, a ledger that could not answer. */
export function raiseRequestAlerts(x: Exchange, nowMs: number): void {
  if (x.config.alertWebhookUrl === null) return;
  const once = x.runtime.alertOnce;
  const tenant = x.tenant?.slug;
  // A penalty whose row has not landed yet has no id: it goes by its cause and caller.
  const block = x.blockId === null ? null : x.blockId !== 0 ? `block:${x.blockId}` : `${x.blockPenalty ?? "block"}:${callerIdOf(x) ?? "unknown"}`;
  if (x.decision === "blocked" && block !== null && once.first(block, nowMs, BLOCK_HIT_PERIOD_MS)) {
    const data: Record<string, string | number | null> = x.blockPenalty === null ? { block_id: x.blockId } : { block_id: x.blockId === 0 ? null : x.blockId, penalty: x.blockPenalty };
    alertAbout(x, { type: "block.hit", ...(tenant === undefined ? {} : { tenant }), data }, nowMs, true);
  }
  if (x.ledgerError && once.first("ledger", nowMs, LEDGER_UNAVAILABLE_PERIOD_MS)) {
    alertAbout(x, { type: "ledger.unavailable", data: { on_error: x.config.global.onError } }, nowMs, false);
  }
}
