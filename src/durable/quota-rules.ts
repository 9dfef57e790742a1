// The quota decisions as pure functions of the figures TenantQuota reads in
// its transaction: whether an upload passes a hard quota, and which kinds sit
// at or over their soft quota. No storage, no clock.

import type { QuotaKind, QuotaLimits, QuotaWarning } from "./quota-types";

export const QUOTA_KINDS: readonly QuotaKind[] = ["bytes", "objects"];

export interface Usage {
  bytes: number;
  objects: number;
}

/** Live reservations: their bytes, and how many (each may become one object). */
export interface Pending {
  bytes: number;
  count: number;
}

export interface Exceeded {
  kind: QuotaKind;
  quota: number;
  usage: number;
  requested: number;
}

/**
 * The first kind (bytes, then objects) whose hard quota the upload would pass:
 * committed usage + live reservations + this upload > hard. Every reservation
 * counts as one object, even two of the same name, so racing uploads can
 * never overshoot (the loser of such a race is turned into a dedup at commit).
 * `usage` in the answer includes the live reservations, since they are what
 * stands between the client and its quota.
 */
export function firstExceeded(committed: Usage, pending: Pending, quota: QuotaLimits, requestedBytes: number): Exceeded | null {
  const bytesHard = quota.bytes?.hard;
  if (bytesHard !== undefined) {
    const usage = committed.bytes + pending.bytes;
    if (usage + requestedBytes > bytesHard) return { kind: "bytes", quota: bytesHard, usage, requested: requestedBytes };
  }
  const objectsHard = quota.objects?.hard;
  if (objectsHard !== undefined) {
    const usage = committed.objects + pending.count;
    if (usage + 1 > objectsHard) return { kind: "objects", quota: objectsHard, usage, requested: 1 };
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
