// Numbered schema migrations for the SQLite Durable Objects (TenantQuota,
// OrgQuota), applied in the constructor before the first call is served.

export interface Migration {
  /** Applied in ascending order, once; never edit one that has shipped. */
  id: number;
  description: string;
  statements: readonly string[];
  /** Data changes SQL alone cannot make, run after the statements in the same transaction. */
  run?: (sql: SqlStorage) => void;
}

/**
 * Applies the migrations not yet applied, each in its own transaction with
 * the row that records it. Synchronous, so it runs to completion in the
 * constructor before the object serves any call. (`PRAGMA user_version` is
 * not available in Durable Object SQLite, hence the table.)
 */
export function migrate(storage: DurableObjectStorage, migrations: readonly Migration[]): void {
  storage.sql.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (id INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`);
  const applied = storage.sql.exec<{ id: number }>(`SELECT COALESCE(MAX(id), 0) AS id FROM schema_migrations`).one().id;
  for (const migration of migrations) {
    if (migration.id <= applied) continue;
    storage.transactionSync(() => {
      for (const statement of migration.statements) storage.sql.exec(statement);
      migration.run?.(storage.sql);
      storage.sql.exec(`INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)`, migration.id, Date.now());
    });
  }
}
