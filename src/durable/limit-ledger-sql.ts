// LimitLedger's SQLite schema (a numbered migration list) and its statements.
//
// - gcra_states: one row per (category, limit) of the subject's global
//   limits, the state as the engine holds it (ledger-gcra.ts): TAT rounded up
//   to a whole ms, and the deficit in the limit's units. A limit is keyed by
//   its figures (`<count>/<window_ms>/<burst>`), so a changed limit starts
//   from fresh state. `seen_ms` is the latest time the state was charged at
//   (a give-back's credit runs to it). Rows earned back are deleted by the
//   object's alarm.
// - accuracy_minutes, call_minutes (migration 2): what the ledger did per
//   minute of its callers' clocks, for GET /global/accuracy — units granted
//   and given back, asks and refused asks per (category, limit); calls and
//   the most in one second. Kept ACCURACY_RETAIN_MS (two hours), so at most
//   120 rows per limit.
// - directory (migration 2): used only by the one ledger named
//   DIRECTORY_NAME: every ledger with calls tells it its id and label every
//   REGISTER_EVERY_MS, and GET /global/accuracy asks it which ledgers to
//   read. Rows not seen for ACCURACY_RETAIN_MS are deleted.
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
  {
    id: 2,
    description: "accuracy_minutes, call_minutes, directory",
    statements: [
      `CREATE TABLE accuracy_minutes (
         minute_ms INTEGER NOT NULL,
         category TEXT NOT NULL,
         limit_key TEXT NOT NULL,
         granted_units INTEGER NOT NULL DEFAULT 0,
         returned_units INTEGER NOT NULL DEFAULT 0,
         asks INTEGER NOT NULL DEFAULT 0,
         refused_asks INTEGER NOT NULL DEFAULT 0,
         PRIMARY KEY (minute_ms, category, limit_key)
       ) WITHOUT ROWID`,
      `CREATE TABLE call_minutes (
         minute_ms INTEGER PRIMARY KEY,
         calls INTEGER NOT NULL,
         peak_per_s INTEGER NOT NULL
       ) WITHOUT ROWID`,
      `CREATE TABLE directory (
         ledger_id TEXT PRIMARY KEY,
         label TEXT NOT NULL,
         seen_ms INTEGER NOT NULL,
         calls INTEGER NOT NULL
       ) WITHOUT ROWID`,
      `CREATE INDEX directory_seen ON directory (seen_ms)`,
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
  noteLimit: `INSERT INTO accuracy_minutes (minute_ms, category, limit_key, granted_units, returned_units, asks, refused_asks) VALUES (?, ?, ?, ?, ?, ?, ?)
              ON CONFLICT (minute_ms, category, limit_key) DO UPDATE SET granted_units = granted_units + excluded.granted_units,
                returned_units = returned_units + excluded.returned_units, asks = asks + excluded.asks, refused_asks = refused_asks + excluded.refused_asks`,
  noteCall: `INSERT INTO call_minutes (minute_ms, calls, peak_per_s) VALUES (?, 1, ?)
             ON CONFLICT (minute_ms) DO UPDATE SET calls = calls + 1, peak_per_s = MAX(peak_per_s, excluded.peak_per_s)`,
  accuracySince: `SELECT category, limit_key AS limitKey, minute_ms AS minuteMs, granted_units AS grantedUnits, returned_units AS returnedUnits, asks, refused_asks AS refusedAsks
                  FROM accuracy_minutes WHERE minute_ms >= ? ORDER BY minute_ms`,
  callsSince: `SELECT COALESCE(SUM(calls), 0) AS calls, MIN(minute_ms) AS firstMinuteMs, COALESCE(MAX(peak_per_s), 0) AS peakPerS FROM call_minutes WHERE minute_ms >= ?`,
  removeOldMinutes: `DELETE FROM accuracy_minutes WHERE minute_ms < ?`,
  removeOldCallMinutes: `DELETE FROM call_minutes WHERE minute_ms < ?`,
  newestMinute: `SELECT MAX(minute_ms) AS newest FROM call_minutes`,
  register: `INSERT INTO directory (ledger_id, label, seen_ms, calls) VALUES (?, ?, ?, ?)
             ON CONFLICT (ledger_id) DO UPDATE SET label = excluded.label, seen_ms = MAX(seen_ms, excluded.seen_ms), calls = excluded.calls`,
  listLedgers: `SELECT ledger_id AS ledgerId, label, seen_ms AS seenMs, calls FROM directory WHERE seen_ms >= ? ORDER BY calls DESC, seen_ms DESC LIMIT ?`,
  countLedgers: `SELECT COUNT(*) AS n FROM directory WHERE seen_ms >= ?`,
  removeUnseen: `DELETE FROM directory WHERE seen_ms < ?`,
} as const;
