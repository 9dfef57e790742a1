// One caller's state under one limit, read or dropped without charging: what
// the admin API's explain (GET /callers/{caller_key}) shows and its reset
// (DELETE /callers/{caller_key}/state) does, docs/design.md. Not on the request path.
import { remainingOf } from "./gcra";
import type { Limit } from "./limit";
import type { LimiterTable } from "./limiter-table";

/** Where a subject stands under one limit: the figures the RateLimit headers would carry. */
export interface LimitStanding {
  /** Whole spends of cost 1 the limit admits now (RateLimit's r): the burst when nothing is held. */
  readonly remaining: number;
  /** Whole ms, rounded up, until the limit is fully earned back (0 when it already is). */
  readonly resetMs: number;
}

/**
 * Where `subject` stands under `limit` in `category` at `nowMs` (whole ms; a
 * fraction is dropped), charging nothing. After an admitted spend at the
 * same nowMs these are that decision's header figures for the limit; a state
 * the table has forgotten reads as fully earned back, as admit()
 * would treat it.
 */
export function peekLimit(table: LimiterTable, subject: string, category: string, limit: Limit, nowMs: number): LimitStanding {
  const t = Math.floor(nowMs);
  table.hashKey(subject, category);
  const slot = table.find(table.setHashOf(limit), table.tagOf(limit));
  return { remaining: remainingOf(limit, table.relUnits(slot, t, limit.unitsPerMs)), resetMs: table.aheadMs(slot, t) };
}

/**
 * Drops the state of `subject` under `limit` in `category` (a reset): its
 * next spend is judged as a first one. Returns true when a state not yet
 * earned back at `nowMs` was dropped; without nowMs, when any record of the
 * key was (perhaps one already earned back, which admit() ignores anyway).
 */
export function forgetLimit(table: LimiterTable, subject: string, category: string, limit: Limit, nowMs?: number): boolean {
  table.hashKey(subject, category);
  const slot = table.find(table.setHashOf(limit), table.tagOf(limit));
  if (slot < 0) return false;
  // A slot never written reads as earned back at 0, so time 0 tells "ever recorded".
  const held = table.aheadMs(slot, nowMs === undefined ? 0 : Math.floor(nowMs)) > 0;
  table.forget(slot);
  return held;
}
