// OrgQuota's SQLite schema (a numbered migration list, applied by the same
// `migrate` as TenantQuota's) and every statement it runs.
//
// Tables:
// - members: per tenant, the newest TenantReport the org has kept (`seq`,
//   committed `bytes` / `objects`, `held_bytes` / `held_objects` of its
//   uploads in flight), and `pull_at`: when to ask the tenant for a fresh
//   report because the kept one holds room that may have expired since. A
//   row with `member = 0` is a tenant the org dropped: its figures are zero
//   and reports for it are refused until setMember takes it back (so an
//   isolate that has not seen the change yet cannot add it again).
// - audit_windows: when each audit event was last handed out, per kind.
// - meta: the org slug.
import { addBudgetShadowColumn, BUDGET_LEASE_MIGRATION_STATEMENTS, BUDGET_MIGRATION_STATEMENTS, BUDGET_TOPUP_MIGRATION_STATEMENTS } from "./budget-sql";
import type { Migration } from "./sql-migrations";

export const ORG_MIGRATIONS: readonly Migration[] = [
  {
    id: 1,
    description: "members, audit windows, meta",
    statements: [
      `CREATE TABLE members (
         tenant TEXT PRIMARY KEY,
         member INTEGER NOT NULL CHECK (member IN (0, 1)),
         seq INTEGER NOT NULL CHECK (seq >= 0),
         bytes INTEGER NOT NULL CHECK (bytes >= 0),
         objects INTEGER NOT NULL CHECK (objects >= 0),
         held_bytes INTEGER NOT NULL CHECK (held_bytes >= 0),
         held_objects INTEGER NOT NULL CHECK (held_objects >= 0),
         pull_at INTEGER,
         updated_at INTEGER NOT NULL
       )`,
      `CREATE INDEX members_pull_at_idx ON members (pull_at)`,
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
    description: "budgets and their reservations",
    statements: BUDGET_MIGRATION_STATEMENTS,
  },
  {
    id: 3,
    description: "budget top-ups by Idempotency-Key",
    statements: BUDGET_TOPUP_MIGRATION_STATEMENTS,
  },
  {
    id: 4,
    description: "budget leases to isolates",
    statements: BUDGET_LEASE_MIGRATION_STATEMENTS,
  },
  {
    id: 5,
    description: "shadow budgets",
    statements: [],
    run: addBudgetShadowColumn,
  },
];

const SUMS = `COALESCE(SUM(bytes), 0) AS bytes, COALESCE(SUM(objects), 0) AS objects,
              COALESCE(SUM(held_bytes), 0) AS heldBytes, COALESCE(SUM(held_objects), 0) AS heldObjects`;

export const ORG_SQL = {
  member: `SELECT member, seq, bytes, objects, held_bytes AS heldBytes, held_objects AS heldObjects FROM members WHERE tenant = ?`,
  sums: `SELECT ${SUMS}, COUNT(*) AS members FROM members WHERE member = 1`,
  sumsExcept: `SELECT ${SUMS} FROM members WHERE member = 1 AND tenant <> ?`,
  upsertMember: `INSERT INTO members (tenant, member, seq, bytes, objects, held_bytes, held_objects, pull_at, updated_at)
                 VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?)
                 ON CONFLICT (tenant) DO UPDATE SET member = 1, seq = excluded.seq, bytes = excluded.bytes,
                   objects = excluded.objects, held_bytes = excluded.held_bytes, held_objects = excluded.held_objects,
                   pull_at = excluded.pull_at, updated_at = excluded.updated_at`,
  dropMember: `INSERT INTO members (tenant, member, seq, bytes, objects, held_bytes, held_objects, pull_at, updated_at)
               VALUES (?, 0, 0, 0, 0, 0, 0, NULL, ?)
               ON CONFLICT (tenant) DO UPDATE SET member = 0, bytes = 0, objects = 0, held_bytes = 0, held_objects = 0,
                 pull_at = NULL, updated_at = excluded.updated_at`,
  setPullAt: `UPDATE members SET pull_at = ? WHERE tenant = ?`,
  duePulls: `SELECT tenant FROM members WHERE member = 1 AND pull_at IS NOT NULL AND pull_at <= ? ORDER BY pull_at`,
  nextPull: `SELECT MIN(pull_at) AS at FROM members WHERE member = 1`,

  // audit_windows and meta: quota-shared.ts.

  purge: [`DELETE FROM members`, `DELETE FROM audit_windows`, `DELETE FROM meta`],
} as const;
