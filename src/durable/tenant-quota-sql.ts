// TenantQuota's SQLite schema (a numbered migration list) and every statement
// it runs. Times are Unix milliseconds; byte and object counts are integers.
//
// Tables:
// - owners: the objects the tenant stores and their size.
// - reservations: uploads in flight; each counts against the quota until it
//   is committed, released or swept by the alarm at `expires_at`.
// - counters: one row with the committed `bytes` and `objects`, changed only
//   in the transaction that changes the owner rows they count.
// - ledger: one row per settled ref (reservation id, remove ref, reindex) with
//   its outcome, so a replayed commit, release or remove changes nothing.
//   Pruned after LEDGER_RETENTION_MS by the alarm.
// - audit_windows: when each audit event was last handed out, per kind.
// - meta: the tenant slug, so the alarm can name it in audit events.

export interface Migration {
  /** Applied in ascending order, once; never edit one that has shipped. */
  id: number;
  description: string;
  statements: readonly string[];
}

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
];

/**
 * Applies the migrations not yet applied, each in its own transaction with
 * the row that records it. Synchronous, so it runs to completion in the
 * constructor before the object serves any call. (`PRAGMA user_version` is
 * not available in Durable Object SQLite, hence the table.)
 */
export function migrate(storage: DurableObjectStorage, migrations: readonly Migration[] = MIGRATIONS): void {
  storage.sql.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (id INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`);
  const applied = storage.sql.exec<{ id: number }>(`SELECT COALESCE(MAX(id), 0) AS id FROM schema_migrations`).one().id;
  for (const migration of migrations) {
    if (migration.id <= applied) continue;
    storage.transactionSync(() => {
      for (const statement of migration.statements) storage.sql.exec(statement);
      storage.sql.exec(`INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)`, migration.id, Date.now());
    });
  }
}

export const SQL = {
  counters: `SELECT bytes, objects FROM counters WHERE id = 1`,
  addToCounters: `UPDATE counters SET bytes = bytes + ?, objects = objects + ? WHERE id = 1`,
  setCounters: `UPDATE counters SET bytes = ?, objects = ? WHERE id = 1`,

  ownerBytes: `SELECT bytes FROM owners WHERE object = ?`,
  insertOwner: `INSERT INTO owners (object, bytes, created_at) VALUES (?, ?, ?)`,
  deleteOwner: `DELETE FROM owners WHERE object = ?`,
  sumOwners: `SELECT COALESCE(SUM(bytes), 0) AS bytes, COUNT(*) AS objects FROM owners`,

  reservation: `SELECT object, bytes, expires_at FROM reservations WHERE id = ?`,
  insertReservation: `INSERT INTO reservations (id, object, bytes, expires_at) VALUES (?, ?, ?, ?)`,
  deleteReservation: `DELETE FROM reservations WHERE id = ?`,
  sumReservations: `SELECT COALESCE(SUM(bytes), 0) AS bytes, COUNT(*) AS count FROM reservations`,
  dueReservations: `SELECT id, object, bytes, expires_at FROM reservations WHERE expires_at <= ? ORDER BY expires_at, id`,
  nextExpiry: `SELECT MIN(expires_at) AS at FROM reservations`,

  ledgerOutcome: `SELECT outcome FROM ledger WHERE ref = ?`,
  insertLedger: `INSERT INTO ledger (ref, outcome, object, delta_bytes, delta_objects, at) VALUES (?, ?, ?, ?, ?, ?)`,
  pruneLedger: `DELETE FROM ledger WHERE at < ?`,

  auditWindow: `SELECT last_at FROM audit_windows WHERE event = ? AND quota_kind = ?`,
  setAuditWindow: `INSERT INTO audit_windows (event, quota_kind, last_at) VALUES (?, ?, ?)
                   ON CONFLICT (event, quota_kind) DO UPDATE SET last_at = excluded.last_at`,

  meta: `SELECT value FROM meta WHERE key = ?`,
  setMeta: `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
} as const;

/** The D1 statement the alarm writes for each reservation it expires. */
export const INSERT_EXPIRED_AUDIT = `INSERT INTO audit_events (at, kind, actor, tenant, subject, detail) VALUES (?, 'reservation_expired', 'quota', ?, ?, ?)`;
