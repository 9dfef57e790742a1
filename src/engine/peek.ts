// "Would this spend fit now?" without charging: the auth-failure gate asks it
// before every credential lookup (DESIGN §3 step 2), and only a refused
// credential is then charged with admit(). The rule is admit()'s exactly
// (see gcra.ts); nothing in the table changes. Pure: no Workers types.
import type { Charge, Decision } from "./gcra";
import { type Limit, MAX_COST } from "./limit";
import { ceilDiv, floorDiv, type LimiterTable } from "./limiter-table";

const ALLOWED_UNMETERED: Decision = Object.freeze({ allowed: true, retryAfterMs: 0, deniedChargeIndex: -1, tightest: null });

function remainingOf(limit: Limit, relUnits: number): number {
  const slackUnits = limit.toleranceUnits - relUnits;
  if (slackUnits <= 0) return 0;
  return limit.intervalUnits === 1 ? slackUnits : floorDiv(slackUnits, limit.intervalUnits);
}

/**
 * The Decision admit(table, charges, nowMs) would return, without charging
 * anything. For an allowed answer, `tightest` describes the state as it would
 * be after the spend. Throws RangeError for a cost that is not a whole number
 * in 0..MAX_COST (a bug), as admit does.
 */
export function wouldAdmit(table: LimiterTable, charges: readonly Charge[], nowMs: number): Decision {
  const t = Math.floor(nowMs);
  // The (set, tag, state-after) of each limit checked so far, so a key repeated
  // within the call sees the earlier spend, as in admit().
  const seenSet: number[] = [];
  const seenTag: number[] = [];
  const seenRel: number[] = [];
  let metered = false;
  let retryAfterMs = 0;
  let deniedChargeIndex = -1;
  let denied: { limit: Limit; relUnits: number } | null = null;
  let tight: { chargeIndex: number; limit: Limit; remaining: number; resetMs: number } | null = null;

  for (let c = 0; c < charges.length; c++) {
    const charge = charges[c]!;
    const cost = charge.cost;
    if (!(Number.isInteger(cost) && cost >= 0 && cost <= MAX_COST)) throw new RangeError(`charge ${c}: cost must be a whole number in 0..${MAX_COST}`);
    if (cost === 0 || charge.limits.length === 0) continue;
    table.hashKey(charge.subject, charge.category);
    for (const limit of charge.limits) {
      metered = true;
      const setBase = table.setBaseOf(limit);
      const tag = table.tagOf(limit);
      let dUnits = -1;
      for (let k = seenSet.length - 1; k >= 0; k--) {
        if (seenSet[k] === setBase && seenTag[k] === tag) {
          dUnits = seenRel[k]!;
          break;
        }
      }
      if (dUnits < 0) dUnits = table.relUnits(table.find(setBase, tag), t, limit.unitsPerMs);
      const afterUnits = dUnits + cost * limit.intervalUnits;
      const delayUnits = cost <= limit.burst ? afterUnits - limit.toleranceUnits : dUnits;
      const fits = delayUnits <= 0;
      seenSet.push(setBase);
      seenTag.push(tag);
      seenRel.push(fits ? afterUnits : dUnits);
      if (!fits) {
        const delayMs = ceilDiv(delayUnits, limit.unitsPerMs);
        if (delayMs > retryAfterMs) {
          retryAfterMs = delayMs;
          deniedChargeIndex = c;
          denied = { limit, relUnits: dUnits };
        }
      } else {
        const remaining = remainingOf(limit, afterUnits);
        const resetMs = ceilDiv(afterUnits, limit.unitsPerMs);
        if (tight === null || remaining < tight.remaining || (remaining === tight.remaining && resetMs > tight.resetMs)) {
          tight = { chargeIndex: c, limit, remaining, resetMs };
        }
      }
    }
  }

  if (!metered) return ALLOWED_UNMETERED;
  if (denied !== null) {
    return {
      allowed: false,
      retryAfterMs,
      deniedChargeIndex,
      tightest: { chargeIndex: deniedChargeIndex, limit: denied.limit, remaining: remainingOf(denied.limit, denied.relUnits), resetMs: ceilDiv(denied.relUnits, denied.limit.unitsPerMs) },
    };
  }
  return { allowed: true, retryAfterMs: 0, deniedChargeIndex: -1, tightest: tight };
}
