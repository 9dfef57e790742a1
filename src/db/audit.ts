// Query helpers for audit_events. An event says who (an actor name, never a
// token), what (kind, tenant, subject) and the figures (detail JSON). Nothing
// written here may contain a secret or a key digest: callers pass key ids.
import { and, desc, eq, gte, inArray, lt, type SQL, sql } from "drizzle-orm";
import type { Db } from "./client";
import { auditEvents } from "./schema";

export interface AuditEventInput {
  readonly atMs: number;
  readonly kind: string;
  readonly actor: string;
  readonly tenant: string | null;
  readonly subject: string | null;
  readonly detail: Readonly<Record<string, unknown>>;
}

/** The insert, for the same batch as the write it records. */
export function insertAuditEvent(db: Db, event: AuditEventInput) {
  return db.insert(auditEvents).values({
    at: event.atMs,
    kind: event.kind,
    actor: event.actor,
    tenant: event.tenant,
    subject: event.subject,
    detail: JSON.stringify(event.detail),
  });
}

/**
 * The insert, only if `condition` holds when the statement runs, for a batch
 * whose write may turn out to change nothing (a conditional delete or append):
 * put it where the condition tells whether the write happened.
 */
export function insertAuditEventWhere(db: Db, event: AuditEventInput, condition: SQL) {
  // INSERT … SELECT with a raw select: drizzle lists every column in table order (id first, NULL: the next id).
  return db
    .insert(auditEvents)
    .select(sql`select null, ${event.atMs}, ${event.kind}, ${event.actor}, ${event.tenant}, ${event.subject}, ${JSON.stringify(event.detail)} where ${condition}`);
}

export interface AuditRow {
  readonly id: number;
  readonly at: number;
  readonly kind: string;
  readonly actor: string;
  readonly tenant: string | null;
  readonly subject: string | null;
  readonly detail: string;
}

export interface AuditQuery {
  readonly kind?: string | undefined;
  readonly tenant?: string | undefined;
  /** Only events about one of these subjects (a key id, `key:<id>`, `tenant:<slug>`, `hmac:<hex>`). */
  readonly subjects?: readonly string[] | undefined;
  /** Only events at or after this Unix time in ms. */
  readonly sinceMs?: number | undefined;
  /** Only events with an id below this (the previous page's last id). */
  readonly beforeId?: number | undefined;
  readonly limit: number;
}

/** Events newest first (by id, which grows with every insert), one page of `limit`. */
export function listAuditEvents(db: Db, query: AuditQuery): Promise<AuditRow[]> {
  const conditions: SQL[] = [];
  if (query.kind !== undefined) conditions.push(eq(auditEvents.kind, query.kind));
  if (query.tenant !== undefined) conditions.push(eq(auditEvents.tenant, query.tenant));
  if (query.subjects !== undefined) conditions.push(inArray(auditEvents.subject, [...query.subjects]));
  if (query.sinceMs !== undefined) conditions.push(gte(auditEvents.at, query.sinceMs));
  if (query.beforeId !== undefined) conditions.push(lt(auditEvents.id, query.beforeId));
  return db
    .select()
    .from(auditEvents)
    .where(conditions.length > 0 ? and(...conditions) : undefined)
    .orderBy(desc(auditEvents.id))
    .limit(query.limit);
}
