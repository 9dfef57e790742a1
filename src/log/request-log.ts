// One JSON line per gateway request (DESIGN §10), through the one logger.
// Never headers, bodies, query strings, credentials or addresses: the path is
// cut at `?` (the Exchange's path has no query), the caller is named only by
// tenant and key id.
import type { Decision, Exchange } from "../context";

export const REQUEST_LOG_FORMAT_VERSION = 1;

export interface RequestLogLine {
  level: "info";
  event: "request";
  format_version: number;
  at_unix_ms: number;
  tenant: string | null;
  key_id: string | null;
  method: string;
  /** The path only, without the query. */
  path: string;
  status: number;
  /** `admitted`, `exempt`, `off`, `shadow:<code>`, or the refusal's code (`rate_limited`, `quota_exceeded`, …). */
  decision: Decision;
  /** From the request's arrival to the response's headers. */
  duration_ms: number;
  /** The declared request body size (Content-Length), 0 without one. */
  bytes_in: number;
  /** The response's Content-Length, or null when it is streamed without one. */
  bytes_out: number | null;
  /** Present (true) only when a global limit's ledger could not answer and `global.on_error` decided (DESIGN §11). */
  ledger_error?: true;
}

/** The decision the log records: a shadow refusal shows as `shadow:<code>` on an admitted request. */
export function loggedDecision(x: Exchange): Decision {
  const shadow = x.shadow;
  return shadow !== null && x.decision === "admitted" ? `shadow:${shadow[0]!}` : x.decision;
}

export function requestLogLine(x: Exchange, status: number, bytesOut: number | null, nowMs: number): string {
  const caller = x.caller;
  const line: RequestLogLine = {
    level: "info",
    event: "request",
    format_version: REQUEST_LOG_FORMAT_VERSION,
    at_unix_ms: x.startedAtMs,
    tenant: x.tenant?.slug ?? null,
    key_id: caller.kind === "key" ? caller.keyId : null,
    method: x.method,
    path: x.path,
    status,
    decision: loggedDecision(x),
    duration_ms: nowMs - x.startedAtMs,
    bytes_in: x.declaredBytes ?? 0,
    bytes_out: bytesOut,
  };
  if (x.ledgerError) line.ledger_error = true;
  return JSON.stringify(line);
}
