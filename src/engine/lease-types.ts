// The shapes of an isolate's leases on global limits, and the
// bound they keep: what lease-book.ts keeps per (subject, category) and
// limit, what a request takes, what an ask says and what the ledger answers.
import type { Limit } from "./limit";

/** Slots (distinct global limits) one (subject, category) keeps; a config change can bring new ones, the oldest go. */
export const MAX_SLOTS_PER_GROUP = 6;

/** L for a limit: max_overshoot × W, at least min_lease_ms, in whole ms (rounded up). */
export function leaseMsFor(limit: Limit, maxOvershoot: number, minLeaseMs: number): number {
  // The 1e-9 keeps 0.02 × 3000 (60.000000000000014 in binary) from rounding up to 61.
  return Math.max(Math.ceil(maxOvershoot * limit.windowMs - 1e-9), Math.ceil(minLeaseMs));
}

/**
 * The published bound: over any interval of `deltaMs`, all isolates together
 * admit at most B + (Δ + L)·C/W units. Whether `admitted` is within it,
 * exactly (admitted·W <= B·W + (Δ + L)·C, in integers).
 */
export function withinBound(limit: Limit, admitted: number, deltaMs: number, leaseMs: number): boolean {
  return admitted * limit.windowMs <= limit.burst * limit.windowMs + (deltaMs + leaseMs) * limit.count;
}

/** The bound as a whole number of units: floor(B + (Δ + L)·C/W). */
export function boundUnits(limit: Limit, deltaMs: number, leaseMs: number): number {
  return limit.burst + Math.floor(((deltaMs + leaseMs) * limit.count) / limit.windowMs);
}

/** One global limit of one (subject, category) in this isolate. */
export interface LeaseSlot {
  readonly limit: Limit;
  readonly leaseMs: number;
  /** Unspent units of the current lease, spendable while nowMs < expiresAtMs. */
  units: number;
  /** When the ask that brought the lease was sent (this isolate's clock): the time the ledger charged it at. */
  grantedAtMs: number;
  expiresAtMs: number;
  /** Bumped at every new lease, so bookkeeping of an old one never touches a newer one. */
  serial: number;
  /** The ledger's figures right after the last grant or refusal, for the RateLimit headers. */
  ledgerRemaining: number;
  ledgerResetAtMs: number;
  /** Recent demand: units taken in the L-long window that began at windowStartMs, and an EWMA of the units per window before it. */
  windowStartMs: number;
  windowUnits: number;
  expectedUnits: number;
  /** A refusal kept: a need of at least deniedNeed is refused until deniedUntilMs, without asking again. */
  deniedUntilMs: number;
  deniedNeed: number;
  /** Units of requests waiting for an answer of the ledger: the next ask covers them (single flight). */
  waitingUnits: number;
}

/** The global limits of one (subject, category): one ledger call asks for all of its slots at once. */
export interface LeaseGroup {
  readonly subject: string;
  readonly category: string;
  readonly slots: LeaseSlot[];
  /** The ledger failed: until then its limits take `global.on_error`'s course without asking. */
  ledgerDownUntilMs: number;
}

/** Where one spend of a request goes. */
export interface LeaseRef {
  readonly group: LeaseGroup;
  readonly slot: LeaseSlot;
  readonly cost: number;
  /** The request's charge this spend belongs to (for the refusal's category and headers). */
  readonly chargeIndex: number;
}

/** A slot a request found without enough live units, and what it needs there. */
export interface Short {
  readonly slot: LeaseSlot;
  readonly need: number;
}

export type TakeResult =
  /** Taken from every lease. `tightest`: the ref with the least remaining (ties: longest reset), or −1. */
  | { readonly kind: "taken"; readonly tightest: number; readonly remaining: number; readonly resetMs: number }
  /** A kept refusal applies: nothing taken. */
  | { readonly kind: "refused"; readonly ref: number; readonly retryAfterMs: number; readonly remaining: number; readonly resetMs: number }
  /** Some leases are short: nothing taken; ask for these (by group). */
  | { readonly kind: "short"; readonly shorts: ReadonlyMap<LeaseGroup, Short[]> };

/** One slot's part of an ask. */
export interface AskItem {
  readonly slot: LeaseSlot;
  readonly limit: Limit;
  readonly need: number;
  readonly want: number;
  /** Unspent units of the slot's previous lease, given back with the ask (0: none), and when that lease was granted. */
  readonly returning: number;
  readonly returningGrantedAtMs: number;
}

export interface Ask {
  readonly group: LeaseGroup;
  readonly items: readonly AskItem[];
  /** Sent at: the ledger charges the grant at this time, and the lease expires L after it. */
  readonly askedAtMs: number;
}

/** The ledger's answer to an ask: every item granted (units and figures, by item), or the first item it refused. */
export type AskReply =
  | { readonly status: "granted"; readonly grants: readonly { readonly units: number; readonly remaining: number; readonly resetMs: number }[] }
  | { readonly status: "denied"; readonly index: number; readonly retryAfterMs: number; readonly remaining: number; readonly resetMs: number };

/** Unspent units of a dead or dropped lease, worth giving back (their credit is still positive). */
export interface Returnable {
  readonly subject: string;
  readonly category: string;
  readonly limit: Limit;
  readonly units: number;
  readonly grantedAtMs: number;
}

export interface LeaseBookOptions {
  readonly maxOvershoot: number;
  readonly minLeaseMs: number;
  /** Groups kept; the least recently used goes first (its unspent units are given back). */
  readonly maxGroups: number;
  /** After the ledger fails, how long before it is asked again. */
  readonly ledgerRetryMs: number;
}
