// The budget tables, created by one migration in each of TenantQuota's and
// OrgQuota's lists (the same statements), and every statement budget-store.ts
// runs. Times are Unix ms; units are integers.
//
// - budgets: one row per owner and category: the definition (amount, period,
//   thresholds as a JSON array, ascending) and the current period's state:
//   `period_start` (0 for credits), `used` (reserved and settled spends
//   together), `fired` (a bit per threshold already audited this period).
// - budget_reservations: what each request reserved, per budget, so its
//   settlement moves exactly that. A settlement deletes its rows (a replay
//   finds none and moves nothing); a reservation never settled is kept
//   BUDGET_RESERVATION_RETENTION_MS and pruned on reserve. (`settled` is
//   always 0 now; the first version kept settled rows for a day.)
//
// - budget_topups (a later migration): each top-up given an Idempotency-Key,
//   with the budget it answered (JSON), so a repeat adds nothing and answers
//   the same. Kept BUDGET_TOPUP_KEY_RETENTION_MS, pruned on top-up.
//
// IF NOT EXISTS: a test that rebuilds an object from its first migration
// keeps these tables.

export const BUDGET_MIGRATION_STATEMENTS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS budgets (
     owner TEXT NOT NULL,
     category TEXT NOT NULL,
     amount INTEGER NOT NULL CHECK (amount >= 0),
     period TEXT NOT NULL,
     thresholds TEXT NOT NULL,
     period_start INTEGER NOT NULL,
     used INTEGER NOT NULL CHECK (used >= 0),
     fired INTEGER NOT NULL DEFAULT 0,
     created_at INTEGER NOT NULL,
     updated_at INTEGER NOT NULL,
     PRIMARY KEY (owner, category)
   )`,
  `CREATE TABLE IF NOT EXISTS budget_reservations (
     id TEXT NOT NULL,
     owner TEXT NOT NULL,
     category TEXT NOT NULL,
     units INTEGER NOT NULL CHECK (units >= 0),
     period_start INTEGER NOT NULL,
     settled INTEGER NOT NULL DEFAULT 0,
     at INTEGER NOT NULL,
     PRIMARY KEY (id, owner, category)
   )`,
  `CREATE INDEX IF NOT EXISTS budget_reservations_at_idx ON budget_reservations (at)`,
];

export const BUDGET_TOPUP_MIGRATION_STATEMENTS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS budget_topups (
     owner TEXT NOT NULL,
     idempotency_key TEXT NOT NULL,
     category TEXT NOT NULL,
     amount INTEGER NOT NULL,
     answer TEXT NOT NULL,
     at INTEGER NOT NULL,
     PRIMARY KEY (owner, idempotency_key)
   )`,
  `CREATE INDEX IF NOT EXISTS budget_topups_at_idx ON budget_topups (at)`,
];

// Leases of budgets to isolates (budget-lease-store.ts): one row per live
// lease, `granted` counted in the budget's `used` at grant, `spent` as the
// isolate last reported it. Kept LEASE_ROW_RETENTION_MS past `expires_at`.
export const BUDGET_LEASE_MIGRATION_STATEMENTS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS budget_leases (
     id TEXT PRIMARY KEY,
     owner TEXT NOT NULL,
     category TEXT NOT NULL,
     period_start INTEGER NOT NULL,
     granted INTEGER NOT NULL CHECK (granted >= 0),
     spent INTEGER NOT NULL DEFAULT 0 CHECK (spent >= 0),
     expires_at INTEGER NOT NULL,
     at INTEGER NOT NULL
   )`,
  `CREATE INDEX IF NOT EXISTS budget_leases_budget_idx ON budget_leases (owner, category, expires_at)`,
  `CREATE INDEX IF NOT EXISTS budget_leases_expires_idx ON budget_leases (expires_at)`,
];

/**
 * A budget may be a shadow one (tried beside the enforced ones, refusing
 * nothing). Added only when missing: a test that rebuilds an object from its
 * first migration keeps the column.
 */
export function addBudgetShadowColumn(sql: SqlStorage): void {
  const columns = sql.exec<{ name: string }>(`SELECT name FROM pragma_table_info('budgets')`).toArray();
  if (!columns.some((c) => c.name === "shadow")) sql.exec(`ALTER TABLE budgets ADD COLUMN shadow INTEGER NOT NULL DEFAULT 0`);
}

export const BUDGET_LEASE_SQL = {
  lease: `SELECT id, period_start, granted, spent FROM budget_leases WHERE id = ? AND owner = ? AND category = ?`,
  insert: `INSERT INTO budget_leases (id, owner, category, period_start, granted, spent, expires_at, at) VALUES (?, ?, ?, ?, ?, 0, ?, ?)`,
  report: `UPDATE budget_leases SET spent = ? WHERE id = ?`,
  remove: `DELETE FROM budget_leases WHERE id = ?`,
  prune: `DELETE FROM budget_leases WHERE expires_at < ?`,
  liveCount: `SELECT COUNT(*) AS n FROM budget_leases WHERE owner = ? AND category = ? AND expires_at > ?`,
  leasedOf: `SELECT COALESCE(SUM(granted - spent), 0) AS units FROM budget_leases WHERE owner = ? AND category = ? AND expires_at > ?`,
  deleteOfBudget: `DELETE FROM budget_leases WHERE owner = ? AND category = ?`,
  deleteOfOwner: `DELETE FROM budget_leases WHERE owner = ?`,
  deleteAll: `DELETE FROM budget_leases`,
} as const;

export const BUDGET_SQL = {
  budget: `SELECT owner, category, amount, period, thresholds, period_start, used, fired, shadow FROM budgets WHERE owner = ? AND category = ?`,
  budgetsOf: `SELECT owner, category, amount, period, thresholds, period_start, used, fired, shadow FROM budgets WHERE owner = ? ORDER BY category`,
  allBudgets: `SELECT owner, category, amount, period, thresholds, period_start, used, fired, shadow FROM budgets ORDER BY owner, category`,
  upsert: `INSERT INTO budgets (owner, category, amount, period, thresholds, period_start, used, fired, created_at, updated_at, shadow)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (owner, category) DO UPDATE SET amount = excluded.amount, period = excluded.period,
             thresholds = excluded.thresholds, period_start = excluded.period_start, used = excluded.used,
             fired = excluded.fired, updated_at = excluded.updated_at, shadow = excluded.shadow`,
  setState: `UPDATE budgets SET period_start = ?, used = ?, fired = ? WHERE owner = ? AND category = ?`,
  addAmount: `UPDATE budgets SET amount = amount + ?, updated_at = ? WHERE owner = ? AND category = ?`,
  deleteBudget: `DELETE FROM budgets WHERE owner = ? AND category = ?`,
  deleteOwner: `DELETE FROM budgets WHERE owner = ?`,
  deleteAll: `DELETE FROM budgets`,

  reservationsOf: `SELECT owner, category, units, period_start, settled FROM budget_reservations WHERE id = ?`,
  insertReservation: `INSERT INTO budget_reservations (id, owner, category, units, period_start, settled, at) VALUES (?, ?, ?, ?, ?, 0, ?)`,
  unsettledOf: `SELECT owner, category, units, period_start FROM budget_reservations WHERE id = ? AND settled = 0`,
  deleteReservation: `DELETE FROM budget_reservations WHERE id = ?`,
  pruneReservations: `DELETE FROM budget_reservations WHERE at < ?`,
  deleteReservationsOfOwner: `DELETE FROM budget_reservations WHERE owner = ?`,
  deleteReservationsOfBudget: `DELETE FROM budget_reservations WHERE owner = ? AND category = ?`,
  deleteAllReservations: `DELETE FROM budget_reservations`,

  topUpOf: `SELECT category, amount, answer FROM budget_topups WHERE owner = ? AND idempotency_key = ?`,
  insertTopUp: `INSERT INTO budget_topups (owner, idempotency_key, category, amount, answer, at) VALUES (?, ?, ?, ?, ?, ?)`,
  pruneTopUps: `DELETE FROM budget_topups WHERE at < ?`,
  deleteTopUpsOfOwner: `DELETE FROM budget_topups WHERE owner = ?`,
  deleteAllTopUps: `DELETE FROM budget_topups`,
} as const;
