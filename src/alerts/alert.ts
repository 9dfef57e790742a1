// Alerts (what an operator is told before a customer calls): the message
// every alert is, and how the gateway raises one. Raising is a queue send
// under waitUntil (never in a request's way); delivery is the queue
// handler's (deliver.ts). Without `alerts.webhook_url` nothing is queued.

/** The alerts the gateway raises. */
export type AlertType = "quota.soft_exceeded" | "quota.hard_exceeded" | "budget.threshold" | "rate_limit.sustained" | "block.hit" | "ledger.unavailable";

/** What the webhook receives, as JSON. `id` is unique per alert: deduplicate on it (delivery is at least once). */
export interface AlertMessage {
  readonly id: string;
  readonly type: AlertType;
  /** ISO 8601, when the gateway raised it. */
  readonly at: string;
  readonly tenant?: string;
  readonly org?: string;
  /** An explain-able caller id (`key:<id>`, `jwt:<hex>`, `tenant:<slug>`, or an address's `hmac:<hex>` digest); never an address. */
  readonly caller?: string;
  readonly data: Readonly<Record<string, string | number | boolean | null>>;
}

/** What raising needs: the webhook (null: alerts are off) and the queue binding, if the Worker has one. */
export interface AlertSink {
  readonly webhookUrl: string | null;
  readonly queue: Queue | undefined;
}

/** A new alert id: `alt_` and 32 hex characters (128 random bits). */
export function newAlertId(): string {
  return `alt_${crypto.randomUUID().replaceAll("-", "")}`;
}

/**
 * Queues an alert when a webhook is configured; returns the send (for
 * waitUntil), or null when nothing was queued. A failed send is logged by
 * the caller's keepAlive, never thrown into a request.
 */
export function raiseAlert(sink: AlertSink, alert: Omit<AlertMessage, "id" | "at">, nowMs: number): Promise<unknown> | null {
  if (sink.webhookUrl === null || sink.queue === undefined) return null;
  const message: AlertMessage = { id: newAlertId(), at: new Date(nowMs).toISOString(), ...alert };
  return sink.queue.send(message, { contentType: "json" });
}
