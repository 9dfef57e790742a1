// Work that must never block or fail a response: audit events, metering.
// Queued with waitUntil; a failure is logged without detail (a D1 error can
// carry SQL) and dropped.
import type { Context } from "hono";
import type { GatewayEnv } from "../context";
import { type AuditEventInput, insertAuditEvent } from "../db/audit";
import { database } from "../db/client";

export function inBackground(c: Context<GatewayEnv>, label: string, work: () => Promise<unknown>): void {
  const guarded = (async () => {
    try {
      await work();
    } catch (err) {
      console.error(JSON.stringify({ level: "error", at_unix_ms: Date.now(), event: `${label}_failed`, error: err instanceof Error ? err.name : "unknown" }));
    }
  })();
  try {
    c.executionCtx.waitUntil(guarded);
  } catch {
    // No execution context (the app called without one): the promise still runs.
  }
}

export function auditInBackground(c: Context<GatewayEnv>, event: AuditEventInput): void {
  inBackground(c, "audit_write", () => insertAuditEvent(database(c.env.DB), event).run());
}
