// LimitLedger's SQLite schema (a numbered migration list) and its statements.
//
// - gcra_states: one row per (category, limit) of the subject's global
//   limits, the state as the engine holds it (ledger-gcra.ts): TAT rounded up
//   to a whole ms, and the deficit in the limit's units. A limit is keyed by
//   its figures (`<count>/<window_ms>/<burst>`), so a changed limit starts
//   from fresh state. `seen_ms` is the latest time the state was charged at
//   (a give-back's credit runs to it). Rows earned back are deleted by the
//   object's alarm.
// Times are the calling isolates' Unix ms.
import type { Migration } from "./sql-migrations";

export const LEDGER_MIGRATIONS: readonly Migration[] = [
  {
    id: 1,
    description: "gcra_states",
    statements: [
      `CREATE TABLE gcra_states (
         category TEXT NOT NULL,
         limit_key TEXT NOT NULL,
         tat_ceil_ms INTEGER NOT NULL,
         deficit_units INTEGER NOT NULL CHECK (deficit_units >= 0),
         seen_ms INTEGER NOT NULL,
         PRIMARY KEY (category, limit_key)
       ) WITHOUT ROWID`,
    ],
  },
];

export const LEDGER_SQL = {
  state: `SELECT tat_ceil_ms AS tatCeilMs, deficit_units AS deficitUnits, seen_ms AS seenMs FROM gcra_states WHERE category = ? AND limit_key = ?`,
  upsert: `INSERT INTO gcra_states (category, limit_key, tat_ceil_ms, deficit_units, seen_ms) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (category, limit_key) DO UPDATE SET tat_ceil_ms = excluded.tat_ceil_ms, deficit_units = excluded.deficit_units,
             seen_ms = MAX(gcra_states.seen_ms, excluded.seen_ms)`,
  removeEarnedBack: `DELETE FROM gcra_states WHERE MAX(tat_ceil_ms, seen_ms) <= ?`,
  latest: `SELECT MAX(MAX(tat_ceil_ms, seen_ms)) AS latest FROM gcra_states`,
  count: `SELECT COUNT(*) AS n FROM gcra_states`,
  removeAll: `DELETE FROM gcra_states`,
} as const;
