// One JSON line per gateway request (DESIGN §10), written with console.log so
// Workers Logs picks it up. Never headers, bodies, query strings, credentials
// or addresses: the path is cut at `?`, the caller is named only by tenant and
// key id.
import type { Context } from "hono";
import type { GatewayEnv } from "../context";

export const REQUEST_LOG_FORMAT_VERSION = 1;

export interface RequestLogLine {
  format_version: number;
  at_unix_ms: number;
  tenant: string | null;
  key_id: string | null;
  method: string;
  /** The path only, cut at `?`. */
  path: string;
  status: number;
  /** `admitted`, `exempt`, `off`, `shadow:<code>`, or the refusal's code (`rate_limited`, `quota_exceeded`, …). */
  decision: string;
  /** From the request's arrival to the response's headers. */
  duration_ms: number;
  /** The declared request body size (Content-Length), 0 without one. */
  bytes_in: number;
  /** The response's Content-Length, or null when it is streamed without one. */
  bytes_out: number | null;
}

export function requestLogLine(c: Context<GatewayEnv>, nowMs: number, bytesIn: number): string {
  const caller = c.get("caller");
  const res = c.res;
  const declaredOut = res.headers.get("content-length");
  const line: RequestLogLine = {
    format_version: REQUEST_LOG_FORMAT_VERSION,
    at_unix_ms: c.get("startedAtMs"),
    tenant: caller.kind === "key" ? caller.tenant : null,
    key_id: caller.kind === "key" ? caller.keyId : null,
    method: c.req.method,
    path: c.req.path,
    status: res.status,
    decision: c.get("decision"),
    duration_ms: nowMs - c.get("startedAtMs"),
    bytes_in: bytesIn,
    bytes_out: declaredOut !== null && /^\d+$/.test(declaredOut) ? Number(declaredOut) : null,
  };
  return JSON.stringify(line);
}
