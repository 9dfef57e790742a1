// Audit of sustained limiting: once one caller passes
// audit.threshold_rejections refusals in one audit.window_s window, one event
// for that caller and window — `rate_limit_sustained` for rate limits,
// `auth_failures_sustained` for refused credentials. Counting is a Map update
// on the refusal path; the event is written only when one is due, in the
// background. The caller appears only as a keyed digest (issue 10 item 13: a
// plain SHA-256 of `ip:a.b.c.d` is reversed by trying all 2^32 addresses).
import type { RejectionCounter } from "../cache/rejection-counter";
import type { Exchange } from "../exchange";
import { insertAuditEvent } from "../db/audit";
import { database } from "../db/client";
import { errorName, log } from "../log/logger";
import { keepAlive } from "../utils/wait-until";
import { alertAbout } from "../alerts/raise";
import { callerSubject } from "./traffic";

export function noteRefusal(
  x: Exchange,
  counter: RejectionCounter,
  kind: "rate_limit_sustained" | "auth_failures_sustained",
  subject: string,
  category: string,
  nowMs: number,
): void {
  const config = x.config;
  const event = counter.record(subject, category, nowMs, config.auditThresholdRejections, config.auditWindowMs);
  if (event === null) return;
  const tenant = x.tenant?.slug ?? null;
  if (kind === "rate_limit_sustained") {
    alertAbout(x, { type: "rate_limit.sustained", ...(tenant === null ? {} : { tenant }), data: { category: event.category, count: event.count, window_s: config.auditWindowMs / 1000 } }, nowMs, true);
  }
  const runtime = x.runtime;
  const env = x.env;
  keepAlive(
    x.ctx,
    (async () => {
      try {
        const db = database(env.DB);
        const auditedSubject = await callerSubject(runtime, env, nowMs, subject);
        await insertAuditEvent(db, {
          atMs: nowMs,
          kind,
          actor: "gateway",
          tenant,
          subject: auditedSubject,
          detail: {
            category: event.category,
            count: event.count,
            threshold: config.auditThresholdRejections,
            window_start: new Date(event.windowStartMs).toISOString(),
            window_s: config.auditWindowMs / 1000,
          },
        }).run();
      } catch (err) {
        log.error("audit_write_failed", { error: errorName(err) });
      }
    })(),
  );
}
