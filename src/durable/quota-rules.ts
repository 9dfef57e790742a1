// The quota decisions as pure functions of the figures TenantQuota and
// OrgQuota read in their transactions: what an upload adds to the room held,
// whether that passes a hard quota, and which kinds sit at or over their soft
// quota. No storage, no clock.

import type { QuotaKind, QuotaLimits, QuotaWarning } from "./quota-types";

export const QUOTA_KINDS: readonly QuotaKind[] = ["bytes", "objects"];

export interface Usage {
  bytes: number;
  objects: number;
}

/** What live reservations hold (see UsageResult): bytes, and objects not stored yet. */
export interface Pending {
  bytes: number;
  objects: number;
}

/** What one reservation adds to the room held: bytes, and 0 or 1 object. */
export interface Growth {
  bytes: number;
  objects: number;
}

/**
 * Reserving `bytes` for an object, given its stored size (`ownerBytes`, null
 * when not stored) and the largest upload of it already in flight
 * (`maxLiveBytes`, null when none): two figures, both zero for a dedup (the
 * size stored, nothing larger in flight), which is still recorded: a delete
 * or a shrink landing while it is in flight is charged back at its commit.
 *
 * `held`: what it adds to the room the tenant holds. Per object the room
 * held is max(in flight) − stored (when positive), plus one object while it
 * is not stored. That bounds every order of commits, because the last commit
 * sets the size; so committed + held never grows except here, where it is
 * checked. A remove or a shrink while an overwrite or a dedup is in flight
 * moves room from committed to held, never creating any.
 *
 * `own`: the upload's growth over the stored object alone (new − old when
 * positive; one object when not stored), ignoring other uploads in flight.
 * The org is asked for this: another upload of the object that covers this
 * one at the tenant may be one the org refuses, so it cannot cover it there.
 */
export function uploadGrowth(ownerBytes: number | null, maxLiveBytes: number | null, bytes: number): { held: Growth; own: Growth } {
  const base = ownerBytes ?? 0;
  const heldBefore = maxLiveBytes === null ? 0 : Math.max(0, maxLiveBytes - base);
  const heldAfter = Math.max(0, Math.max(maxLiveBytes ?? 0, bytes) - base);
  const newObject = ownerBytes === null ? 1 : 0;
  return {
    held: { bytes: heldAfter - heldBefore, objects: maxLiveBytes === null ? newObject : 0 },
    own: { bytes: Math.max(0, bytes - base), objects: newObject },
  };
}

export interface Exceeded {
  kind: QuotaKind;
  quota: number;
  usage: number;
  requested: number;
}

/**
 * The first kind (bytes, then objects) whose hard quota the growth would
 * pass: committed usage + held + growth > hard. A kind the upload does not
 * grow is never refused (a shrink, or an overwrite that another upload in
 * flight already covers, passes even when a lowered quota is already passed).
 * `usage` in the answer includes what is held, since that is what stands
 * between the client and its quota.
 */
export function firstExceeded(committed: Usage, pending: Pending, quota: QuotaLimits, growth: Growth): Exceeded | null {
  for (const kind of QUOTA_KINDS) {
    const hard = quota[kind]?.hard;
    const requested = growth[kind];
    if (hard === undefined || requested <= 0) continue;
    const usage = committed[kind] + pending[kind];
    if (usage + requested > hard) return { kind, quota: hard, usage, requested };
  }
  return null;
}

export interface OverSoft {
  kind: QuotaKind;
  usage: number;
  soft: number;
  warning: QuotaWarning;
}

/**
 * The kinds whose committed usage is at or over their soft quota. The warning
 * shows usage against the hard quota, or against the soft one when no hard
 * quota is set (`bytes 950/1000`). No soft quota, no warning.
 */
export function overSoft(committed: Usage, quota: QuotaLimits): OverSoft[] {
  const out: OverSoft[] = [];
  for (const kind of QUOTA_KINDS) {
    const soft = quota[kind]?.soft;
    if (soft === undefined) continue;
    const usage = committed[kind];
    if (usage < soft) continue;
    const limit = quota[kind]?.hard ?? soft;
    out.push({ kind, usage, soft, warning: { kind, usage, limit } });
  }
  return out;
}
