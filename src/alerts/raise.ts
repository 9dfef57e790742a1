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

/** Which alerts this isolate raised lately, so a flood raises one, not thousands. Bounded. */
export class AlertOnce {
  readonly #until = new Map<string, number>();

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

/** Queues an alert about this request (its caller named when `withCaller`), in the background. */
export function alertAbout(x: Exchange, alert: Omit<AlertMessage, "id" | "at" | "caller">, nowMs: number, withCaller: boolean): void {
  const webhookUrl = x.config.alertWebhookUrl;
  if (webhookUrl === null) return;
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
  if (x.decision === "blocked" && x.blockId !== null && once.first(`block:${x.blockId}`, nowMs, BLOCK_HIT_PERIOD_MS)) {
    alertAbout(x, { type: "block.hit", ...(tenant === undefined ? {} : { tenant }), data: { block_id: x.blockId } }, nowMs, true);
  }
  if (x.ledgerError && once.first("ledger", nowMs, LEDGER_UNAVAILABLE_PERIOD_MS)) {
    alertAbout(x, { type: "ledger.unavailable", data: { on_error: x.config.global.onError } }, nowMs, false);
  }
}
