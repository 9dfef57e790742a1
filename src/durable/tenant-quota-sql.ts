// TenantQuota's SQLite schema (a numbered migration list) and every statement
// it runs. Times are Unix milliseconds; byte and object counts are integers.
//
// Tables:
// - owners: the objects the tenant stores and their size.
// - reservations: uploads in flight; each counts against the quota until it
//   is committed, released or swept by the alarm at `expires_at`.
// - counters: one row with the committed `bytes` and `objects`, changed only
//   in the transaction that changes the owner rows they count, and `seq`,
//   which grows with every change (the org keeps a tenant's newest report by
//   it; a purge keeps it growing, so a report from before a purge is stale).
// - ledger: one row per settled ref (reservation id, remove ref, reindex) with
//   its outcome, so a replayed commit, release or remove changes nothing.
//   Pruned after LEDGER_RETENTION_MS by the alarm.
// - audit_windows: when each audit event was last handed out, per kind.
// - meta: the tenant slug, so the alarm can name it in audit events.
//
// Object names are stored percent-decoded (object-name.ts): migration 2
// rewrites names stored raw by the first version.
import { addBudgetShadowColumn, BUDGET_LEASE_MIGRATION_STATEMENTS, BUDGET_MIGRATION_STATEMENTS, BUDGET_TOPUP_MIGRATION_STATEMENTS } from "./budget-sql";
import type { Migration } from "./sql-migrations";

export const MIGRATIONS: readonly Migration[] = [
  {
    id: 1,
    description: "owners, reservations, counters, ledger, audit windows, meta",
    statements: [
      `CREATE TABLE owners (
         object TEXT PRIMARY KEY,
         bytes INTEGER NOT NULL CHECK (bytes >= 0),
         created_at INTEGER NOT NULL
       )`,
      `CREATE TABLE reservations (
         id TEXT PRIMARY KEY,
         object TEXT NOT NULL,
         bytes INTEGER NOT NULL CHECK (bytes >= 0),
         expires_at INTEGER NOT NULL
       )`,
      `CREATE INDEX reservations_expires_at_idx ON reservations (expires_at)`,
      `CREATE TABLE counters (
         id INTEGER PRIMARY KEY CHECK (id = 1),
         bytes INTEGER NOT NULL CHECK (bytes >= 0),
         objects INTEGER NOT NULL CHECK (objects >= 0)
       )`,
      `INSERT INTO counters (id, bytes, objects) VALUES (1, 0, 0)`,
      `CREATE TABLE ledger (
         ref TEXT PRIMARY KEY,
         outcome TEXT NOT NULL,
         object TEXT,
         delta_bytes INTEGER NOT NULL,
         delta_objects INTEGER NOT NULL,
         at INTEGER NOT NULL
       )`,
      `CREATE INDEX ledger_at_idx ON ledger (at)`,
      `CREATE TABLE audit_windows (
         event TEXT NOT NULL,
         quota_kind TEXT NOT NULL,
         last_at INTEGER NOT NULL,
         PRIMARY KEY (event, quota_kind)
       )`,
      `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
    ],
  },
  {
    id: 2,
    description: "report seq, each reservation's growth, reservations by object, decoded object names",
    statements: [
      `ALTER TABLE counters ADD COLUMN seq INTEGER NOT NULL DEFAULT 0`,
      `ALTER TABLE reservations ADD COLUMN growth_bytes INTEGER NOT NULL DEFAULT 0`,
      `ALTER TABLE reservations ADD COLUMN growth_objects INTEGER NOT NULL DEFAULT 0`,
      `CREATE INDEX reservations_object_idx ON reservations (object, bytes)`,
    ],
    run: decodeStoredNames,
  },
  {
    id: 3,
    description: "budgets and their reservations",
    statements: BUDGET_MIGRATION_STATEMENTS,
  },
  {
    id: 4,
    description: "budget top-ups by Idempotency-Key",
    statements: BUDGET_TOPUP_MIGRATION_STATEMENTS,
  },
  {
    id: 5,
    description: "budget leases to isolates",
    statements: BUDGET_LEASE_MIGRATION_STATEMENTS,
  },
  {
    id: 6,
    description: "shadow budgets",
    statements: [],
    run: addBudgetShadowColumn,
  },
];

/**
 * The first version stored the raw `:object` parameter. Rewrites each name
 * holding an escape to its decoded spelling; when both spellings were stored
 * they are one object at the origin, so the decoded record stays and the raw
 * one goes, with its bytes and object taken off the counters. Names that do
 * not decode are left as they are.
 */
function decodeStoredNames(sql: SqlStorage): void {
  const raw = sql.exec<{ object: string; bytes: number }>(`SELECT object, bytes FROM owners WHERE instr(object, '%') > 0`).toArray();
  for (const row of raw) {
    const decoded = decodedOrNull(row.object);
    if (decoded === null) continue;
    if (sql.exec(`SELECT 1 FROM owners WHERE object = ?`, decoded).toArray().length > 0) {
      sql.exec(`DELETE FROM owners WHERE object = ?`, row.object);
      sql.exec(`UPDATE counters SET bytes = MAX(bytes - ?, 0), objects = MAX(objects - 1, 0) WHERE id = 1`, row.bytes);
    } else {
      sql.exec(`UPDATE owners SET object = ? WHERE object = ?`, decoded, row.object);
    }
  }
  const pending = sql.exec<{ object: string }>(`SELECT DISTINCT object FROM reservations WHERE instr(object, '%') > 0`).toArray();
  for (const row of pending) {
    const decoded = decodedOrNull(row.object);
    if (decoded !== null) sql.exec(`UPDATE reservations SET object = ? WHERE object = ?`, decoded, row.object);
  }
}

function decodedOrNull(raw: string): string | null {
  try {
    const decoded = decodeURIComponent(raw);
    return decoded === raw ? null : decoded;
  } catch {
    return null;
  }
}

export const SQL = {
  counters: `SELECT bytes, objects, seq FROM counters WHERE id = 1`,
  addToCounters: `UPDATE counters SET bytes = bytes + ?, objects = objects + ? WHERE id = 1`,
  setCounters: `UPDATE counters SET bytes = ?, objects = ? WHERE id = 1`,
  bumpSeq: `UPDATE counters SET seq = seq + 1 WHERE id = 1`,

  ownerBytes: `SELECT bytes FROM owners WHERE object = ?`,
  insertOwner: `INSERT INTO owners (object, bytes, created_at) VALUES (?, ?, ?)`,
  setOwnerBytes: `UPDATE owners SET bytes = ? WHERE object = ?`,
  deleteOwner: `DELETE FROM owners WHERE object = ?`,
  sumOwners: `SELECT COALESCE(SUM(bytes), 0) AS bytes, COUNT(*) AS objects FROM owners`,

  reservation: `SELECT object, bytes, expires_at, growth_bytes, growth_objects FROM reservations WHERE id = ?`,
  insertReservation: `INSERT INTO reservations (id, object, bytes, expires_at, growth_bytes, growth_objects) VALUES (?, ?, ?, ?, ?, ?)`,
  deleteReservation: `DELETE FROM reservations WHERE id = ?`,
  maxLiveBytes: `SELECT MAX(bytes) AS bytes FROM reservations WHERE object = ?`,
  // Per object: the largest upload in flight minus the stored size (when
  // positive), and one object while it is not stored (see UsageResult).
  held: `SELECT COALESCE(SUM(MAX(r.top - COALESCE(o.bytes, 0), 0)), 0) AS bytes,
                COALESCE(SUM(o.object IS NULL), 0) AS objects
         FROM (SELECT object, MAX(bytes) AS top FROM reservations GROUP BY object) AS r
         LEFT JOIN owners AS o ON o.object = r.object`,
  liveCount: `SELECT COUNT(*) AS n FROM reservations`,
  lastByteChange: `SELECT MAX(at) AS at FROM ledger WHERE delta_bytes <> 0`,
  liveReservations: `SELECT id, object FROM reservations`,
  dueReservations: `SELECT id, object, bytes, expires_at FROM reservations WHERE expires_at <= ? ORDER BY expires_at, id`,
  nextExpiry: `SELECT MIN(expires_at) AS at FROM reservations`,

  ledgerOutcome: `SELECT outcome, object FROM ledger WHERE ref = ?`,
  insertLedger: `INSERT INTO ledger (ref, outcome, object, delta_bytes, delta_objects, at) VALUES (?, ?, ?, ?, ?, ?)`,
  // A late commit turns its `expired` row into `late_committed`.
  updateLedger: `UPDATE ledger SET outcome = ?, delta_bytes = ?, delta_objects = ?, at = ? WHERE ref = ?`,
  pruneLedger: `DELETE FROM ledger WHERE at < ?`,

  // audit_windows and meta: quota-shared.ts.

  // purge: everything but the schema, `seq`, and the ledger's `purged` rows
  // (uploads in flight at an earlier purge, whose commits must still count nothing).
  purge: [
    `DELETE FROM owners`,
    `DELETE FROM reservations`,
    `DELETE FROM ledger WHERE outcome <> 'purged'`,
    `DELETE FROM audit_windows`,
    `DELETE FROM meta`,
    `UPDATE counters SET bytes = 0, objects = 0 WHERE id = 1`,
  ],
} as const;

/**
 * The D1 statement for the audit events the object writes itself, one per
 * expired reservation (`reservation_expired`) or late commit
 * (`reservation_late_commit`): at, kind, tenant, subject (the object), detail.
 */
export const INSERT_AUDIT = `INSERT INTO audit_events (at, kind, actor, tenant, subject, detail) VALUES (?, ?, 'quota', ?, ?, ?)`;
