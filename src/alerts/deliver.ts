// The ALERTS queue's consumer (this same Worker's `queue` handler): each
// message is one alert, POSTed to `alerts.webhook_url` signed with
// ALERT_SECRET. At least once: a webhook that answers 5xx, 408 or 429, times
// out or cannot be reached is retried with exponential backoff
// (alerts.retry_base_s, doubling, at most an hour apart) until 24 h after the
// alert was raised, then marked `expired`; one that answers another 4xx has
// refused it and is not asked again (`failed`). Every attempt is recorded in
// D1 for GET /alerts, and a redelivered message whose alert is already
// settled is not sent again. A message that is not an alert is dropped and
// logged.
import { database } from "../db/client";
import { alertRow, recordAttempt } from "../db/alerts";
import type { Bindings } from "../exchange";
import { errorName, log } from "../log/logger";
import { configFor } from "../runtime";
import type { AlertMessage } from "./alert";
import { signatureHeader } from "./signature";

/** How long an alert is retried. */
export const ALERT_RETRY_WINDOW_MS = 24 * 3_600_000;
/** The longest wait between two attempts. */
export const ALERT_MAX_BACKOFF_S = 3600;
/** A webhook that has not answered by then counts as failed (and is retried). */
export const ALERT_TIMEOUT_MS = 10_000;

export type AttemptOutcome = { readonly kind: "delivered"; readonly status: number } | { readonly kind: "refused"; readonly status: number } | { readonly kind: "retry"; readonly status: number | null; readonly reason: string };

/** What a webhook's answer means: 2xx delivered; 408, 429 and 5xx retried; other statuses refused. */
export function outcomeOf(status: number): AttemptOutcome {
  if (status >= 200 && status < 300) return { kind: "delivered", status };
  if (status === 408 || status === 429 || status >= 500) return { kind: "retry", status, reason: `http_${status}` };
  return { kind: "refused", status };
}

/** The wait before attempt `attempt + 1` (attempt counts from 1): base × 2^(attempt−1), at most an hour. */
export function backoffS(attempt: number, baseS: number): number {
  return Math.min(ALERT_MAX_BACKOFF_S, baseS * 2 ** Math.max(0, attempt - 1));
}

function isAlert(body: unknown): body is AlertMessage {
  const b = body as Partial<AlertMessage> | null;
  return typeof b === "object" && b !== null && typeof b.id === "string" && /^alt_[0-9a-f]{32}$/.test(b.id) && typeof b.type === "string" && typeof b.at === "string";
}

async function attempt(url: string, secret: string, body: string, id: string, nowMs: number): Promise<AttemptOutcome> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "tollgate-signature": await signatureHeader(secret, body, Math.floor(nowMs / 1000)), "tollgate-alert-id": id, "user-agent": "tollgate-alerts" },
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(ALERT_TIMEOUT_MS),
    });
    // The answer's body is not read (nothing in it matters), only released.
    await response.body?.cancel();
    return outcomeOf(response.status);
  } catch (err) {
    return { kind: "retry", status: null, reason: errorName(err) === "TimeoutError" ? "timeout" : "unreachable" };
  }
}

/** Delivers one batch of the ALERTS queue. Never throws: each message is acked or retried on its own. */
export async function deliverAlerts(batch: MessageBatch<unknown>, env: Bindings, now: () => number = Date.now): Promise<void> {
  const config = configFor(env);
  const db = database(env.DB);
  const secret = typeof (env as { ALERT_SECRET?: unknown }).ALERT_SECRET === "string" ? ((env as { ALERT_SECRET?: string }).ALERT_SECRET ?? "").trim() : "";
  for (const message of batch.messages) {
    const alert = message.body;
    if (!isAlert(alert)) {
      log.warn("alert_dropped", { reason: "not an alert message" });
      message.ack();
      continue;
    }
    const nowMs = now();
    const body = JSON.stringify(alert);
    try {
      const row = await alertRow(db, { id: alert.id, type: alert.type, atMs: Date.parse(alert.at) || nowMs, tenant: alert.tenant ?? null, body }, nowMs);
      if (row.state !== "pending") {
        message.ack();
        continue;
      }
      const url = config?.alertWebhookUrl ?? null;
      const expired = nowMs - row.atMs >= ALERT_RETRY_WINDOW_MS;
      if (url === null || secret === "") {
        // Nothing to send to, or nothing to sign with (health says so): keep it for when the operator fixes it, within the window.
        const reason = url === null ? "no_webhook" : "no_secret";
        await recordAttempt(db, alert.id, row.attempts + 1, nowMs, reason, null, expired ? "expired" : "pending");
        if (expired) message.ack();
        else message.retry({ delaySeconds: backoffS(row.attempts + 1, config?.alertRetryBaseS ?? 30) });
        continue;
      }
      const n = row.attempts + 1;
      const outcome = await attempt(url, secret, row.body, alert.id, nowMs);
      if (outcome.kind === "delivered") {
        await recordAttempt(db, alert.id, n, nowMs, "delivered", outcome.status, "delivered");
        message.ack();
      } else if (outcome.kind === "refused") {
        await recordAttempt(db, alert.id, n, nowMs, `http_${outcome.status}`, outcome.status, "failed");
        log.warn("alert_refused", { alert_id: alert.id, status: outcome.status });
        message.ack();
      } else if (expired) {
        await recordAttempt(db, alert.id, n, nowMs, outcome.reason, outcome.status, "expired");
        log.warn("alert_expired", { alert_id: alert.id, attempts: n });
        message.ack();
      } else {
        await recordAttempt(db, alert.id, n, nowMs, outcome.reason, outcome.status, "pending");
        message.retry({ delaySeconds: backoffS(n, config?.alertRetryBaseS ?? 30) });
      }
    } catch (err) {
      // D1 could not record it: let the queue bring it back rather than send without a record.
      log.warn("alert_delivery_failed", { error: errorName(err) });
      message.retry({ delaySeconds: config?.alertRetryBaseS ?? 30 });
    }
  }
}
