// What a LimitLedger keeps about its own accuracy, and how its minutes fold
// into the report GET /global/accuracy reads: per (category, limit) the units
// granted and given back, asks and refused asks, summed over the minutes
// asked about, with the busiest minute; and the calls it served. The rows
// are written by limit-ledger.ts in the transaction of the call they count
// (limit-ledger-sql.ts has the tables).
import { type LedgerLimitAccuracy, ledgerLimitOfKey } from "./ledger-types";

export const MINUTE_MS = 60_000;
/** How long the per-minute figures, and a directory entry, are kept: the report looks back at most an hour, with room for a registration's delay. */
export const ACCURACY_RETAIN_MS = 2 * 3_600_000;
/** How often a ledger with calls tells the directory it is there (and how many calls it served meanwhile). */
export const REGISTER_EVERY_MS = 10 * MINUTE_MS;
/** The one ledger that keeps the directory: a name no subject has (subjects are `key:`, `jwt:`, `tenant:`, `ip:` or `anonymous`). */
export const DIRECTORY_NAME = "directory:ledgers";

/** The start of the minute of `nowMs`. */
export function minuteOf(nowMs: number): number {
  const t = Math.floor(nowMs);
  return t - (((t % MINUTE_MS) + MINUTE_MS) % MINUTE_MS);
}

export interface AccuracyRow {
  category: string;
  limitKey: string;
  minuteMs: number;
  grantedUnits: number;
  returnedUnits: number;
  asks: number;
  refusedAsks: number;
}

/** Folds minute rows (in minute order) into one entry per (category, limit), in the order first seen. */
export function foldAccuracy(rows: readonly AccuracyRow[]): LedgerLimitAccuracy[] {
  const out = new Map<string, LedgerLimitAccuracy>();
  for (const row of rows) {
    const key = `${row.category}\u0000${row.limitKey}`;
    const net = row.grantedUnits - row.returnedUnits;
    const entry = out.get(key);
    if (entry === undefined) {
      out.set(key, {
        category: row.category,
        limit: ledgerLimitOfKey(row.limitKey),
        grantedUnits: row.grantedUnits,
        returnedUnits: row.returnedUnits,
        asks: row.asks,
        refusedAsks: row.refusedAsks,
        firstMinuteMs: row.minuteMs,
        lastMinuteMs: row.minuteMs,
        busiestMinuteMs: row.minuteMs,
        busiestMinuteUnits: net,
      });
      continue;
    }
    entry.grantedUnits += row.grantedUnits;
    entry.returnedUnits += row.returnedUnits;
    entry.asks += row.asks;
    entry.refusedAsks += row.refusedAsks;
    entry.lastMinuteMs = row.minuteMs;
    if (net > entry.busiestMinuteUnits) {
      entry.busiestMinuteUnits = net;
      entry.busiestMinuteMs = row.minuteMs;
    }
  }
  return [...out.values()];
}
