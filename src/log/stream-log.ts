// One JSON line per WebSocket stream, written when it ends, through the one logger, beside the request log's lines (same
// format_version, tenant, key id, path, decision). Never message contents,
// headers or close reasons (a reason is the peer's text).
import type { Exchange } from "../context";
import { loggedDecision, REQUEST_LOG_FORMAT_VERSION } from "./request-log";

/** What ended a stream. */
export type StreamEnd = "client_closed" | "origin_closed" | "client_gone" | "origin_gone" | "rent_refused" | "message_refused";

export interface StreamFigures {
  readonly endedBy: StreamEnd;
  /** The close code that ended it: the closing side's, 1006 for a side that vanished, 4429 for a refusal. */
  readonly closeCode: number;
  readonly messagesIn: number;
  readonly messagesOut: number;
  /** Periods of rent paid, the open's included. */
  readonly rentPeriods: number;
}

export interface StreamLogLine {
  level: "info";
  event: "stream";
  format_version: number;
  /** When the upgrade request arrived. */
  at_unix_ms: number;
  tenant: string | null;
  key_id: string | null;
  method: string;
  path: string;
  status: 101;
  decision: string;
  /** From the upgrade request's arrival to the end of the stream. */
  duration_ms: number;
  /** Client → origin messages passed. */
  messages_in: number;
  /** Origin → client messages passed. */
  messages_out: number;
  close_code: number;
  ended_by: StreamEnd;
  rent_periods: number;
}

export function streamLogLine(x: Exchange, figures: StreamFigures, nowMs: number): string {
  const caller = x.caller;
  const line: StreamLogLine = {
    level: "info",
    event: "stream",
    format_version: REQUEST_LOG_FORMAT_VERSION,
    at_unix_ms: x.startedAtMs,
    tenant: x.tenant?.slug ?? null,
    key_id: caller.kind === "key" ? caller.keyId : null,
    method: x.method,
    path: x.path,
    status: 101,
    decision: loggedDecision(x),
    duration_ms: nowMs - x.startedAtMs,
    messages_in: figures.messagesIn,
    messages_out: figures.messagesOut,
    close_code: figures.closeCode,
    ended_by: figures.endedBy,
    rent_periods: figures.rentPeriods,
  };
  return JSON.stringify(line);
}
