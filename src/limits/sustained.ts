// Audit of sustained limiting (DESIGN §10): once one caller passes
// audit.threshold_rejections refusals in one audit.window_s window, one event
// for that caller and window — `rate_limit_sustained` for rate limits,
// `auth_failures_sustained` for refused credentials. Counting is a Map update
// on the refusal path; the caller is hashed and the event written only when
// one is due, in the background. The caller appears only as a SHA-256 digest.
import type { Context } from "hono";
import type { RejectionCounter } from "../cache/rejection-counter";
import type { GatewayEnv } from "../context";
import { insertAuditEvent } from "../db/audit";
import { database } from "../db/client";
import { sha256Hex } from "../identity/api-key";
import { inBackground } from "./background";

export function noteRefusal(
  c: Context<GatewayEnv>,
  counter: RejectionCounter,
  kind: "rate_limit_sustained" | "auth_failures_sustained",
  subject: string,
  category: string,
  tenant: string | null,
): void {
  const config = c.get("config");
  const nowMs = Date.now();
  const event = counter.record(subject, category, nowMs, config.auditThresholdRejections, config.auditWindowMs);
  if (event === null) return;
  inBackground(c, "audit_write", async () => {
    // A key subject is already `key:<digest>`; anything else (an address) is hashed.
    const digest = subject.startsWith("key:") ? subject : `sha256:${await sha256Hex(subject)}`;
    await insertAuditEvent(database(c.env.DB), {
      atMs: nowMs,
      kind,
      actor: "gateway",
      tenant,
      subject: digest,
      detail: {
        category: event.category,
        count: event.count,
        threshold: config.auditThresholdRejections,
        window_start: new Date(event.windowStartMs).toISOString(),
        window_s: config.auditWindowMs / 1000,
      },
    }).run();
  });
}
