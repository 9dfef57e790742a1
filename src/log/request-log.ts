// One JSON line per gateway request, through the one logger.
// Never headers, bodies, query strings, credentials or addresses: the path is
// cut at `?` (the Exchange's path has no query), the caller is named only by
// tenant and key id.
import type { Decision, Exchange } from "../exchange";
import { callerIdOf } from "../identity/caller-id";

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
  /** Present (true) only when a global limit's ledger could not answer and `global.on_error` decided. */
  ledger_error?: true;
  /** Present only when shadow policies would have refused the request: each policy's name and the refusal's code. */
  shadow_policies?: { policy: string; code: string }[];
}

/** The decision the log (and traffic) records: a shadow refusal, by `mode: "shadow"` or by a shadow policy, shows as `shadow:<code>` on an admitted request. */
export function loggedDecision(x: Exchange): Decision {
  if (x.decision !== "admitted") return x.decision;
  const shadow = x.shadow;
  if (shadow !== null) return `shadow:${shadow[0]!}`;
  const policies = x.shadowPolicies;
  return policies === null ? "admitted" : `shadow:${policies[0]!.code}`;
}

/** The shadow policies' member of the line, written as JSON.stringify writes it. */
function shadowPoliciesMember(x: Exchange): string {
  const marks = x.shadowPolicies;
  if (marks === null) return "";
  let out = "";
  for (const mark of marks) out += `${out === "" ? "" : ","}{"policy":${JSON.stringify(mark.policy)},"code":${JSON.stringify(mark.code)}}`;
  return `,"shadow_policies":[${out}]`;
}

/** A number as JSON.stringify writes it (a non-finite one is null). */
function jsonNumber(n: number | null): string {
  return n !== null && Number.isFinite(n) ? String(n) : "null";
}

/** A string or null as JSON.stringify writes it. */
function jsonString(value: string | null): string {
  return value === null ? "null" : JSON.stringify(value);
}

/**
 * The line, written field by field in RequestLogLine's order: the same text
 * JSON.stringify gives for that object (a test compares them), for a third
 * of its cost, on every request.
 */
export function requestLogLine(x: Exchange, status: number, bytesOut: number | null, nowMs: number): string {
  const caller = x.caller;
  const tenant = x.tenant?.slug ?? null;
  const keyId = caller.kind === "key" ? caller.keyId : null;
  return (
    `{"level":"info","event":"request","format_version":${REQUEST_LOG_FORMAT_VERSION},"at_unix_ms":${jsonNumber(x.startedAtMs)}` +
    `,"tenant":${jsonString(tenant)},"key_id":${jsonString(keyId)},"method":${jsonString(x.method)},"path":${jsonString(x.path)}` +
    `,"status":${jsonNumber(status)},"decision":${jsonString(loggedDecision(x))},"duration_ms":${jsonNumber(nowMs - x.startedAtMs)}` +
    `,"bytes_in":${jsonNumber(x.declaredBytes ?? 0)},"bytes_out":${jsonNumber(bytesOut)}` +
    (x.ledgerError ? `,"ledger_error":true` : "") +
    shadowPoliciesMember(x) +
    "}"
  );
}

/** The caller a refusal is counted against in a summary, named as traffic and alerts name it (a key refused by its block as `key:<id>`). */
function summaryCallerOf(x: Exchange): string {
  return callerIdOf(x) ?? "ip:unknown";
}

/**
 * Whether the request's line is to be written, by the runtime's request-log
 * policy (src/log/request-log-policy.ts): an admitted, exempt or `off`
 * request by the mode; a refusal within the per-second cap (past it, it is
 * counted into that second's summary here, and no line is built).
 */
export function requestLogWanted(x: Exchange, nowMs: number): boolean {
  const policy = x.runtime.requestLog;
  const decision = x.decision;
  if (decision === "admitted" || decision === "exempt" || decision === "off") return policy.admitted();
  return policy.refusal(decision, summaryCallerOf(x), nowMs, x.ctx);
}
