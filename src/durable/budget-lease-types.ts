// The request and result shapes of the budget lease RPCs that TenantQuota
// and OrgQuota both serve (budget-lease-store.ts), imported type-only by the
// edge (src/limits/budget-leases.ts).
//
// A lease is `units` of one budget (owner, category) granted to one isolate
// and counted in the budget's `used` at grant time, so what is spent plus
// what is leased never passes `amount`. The isolate spends from it with no
// I/O until it ends (`expiresAtMs`, or the period's end), reports what it
// spent (`spent`, the units taken from the lease so far, net of what went
// back to it), and closes it: its unspent units then leave `used` again.
import type { BudgetState, BudgetThresholdAudit } from "./budget-types";

/** The isolate's lease of a budget, as it reports it: what it has spent from it so far. */
export interface LeaseReport {
  readonly id: string;
  /** Units taken from the lease so far, refunds deducted (0..granted). */
  readonly spent: number;
  /** Give the unspent units back: the lease ends (dropped, expired, or replaced by the grant this call asks for). */
  readonly close: boolean;
}

/** One budget's part of a lease call. */
export interface BudgetLeaseItem {
  readonly owner: string;
  readonly category: string;
  /**
   * Units a waiting request needs at least, or null for a report or close
   * only. 0 is a spend too (a response-priced reserve of 0): it needs the
   * budget not spent.
   */
  readonly need: number | null;
  /** Units the requests waiting for this call need in all (≥ need): granted whole while the budget has them. */
  readonly waiting: number;
  /** Units beyond `waiting` that recent demand says the isolate will spend before the lease ends: granted in part, less as the budget nears its end. */
  readonly extra: number;
  /** The isolate's current lease of this budget, reported (and closed when `close`). */
  readonly lease: LeaseReport | null;
}

export interface BudgetLeaseRequest {
  readonly items: readonly BudgetLeaseItem[];
  /** The isolate's clock: the lease runs from here. */
  readonly nowMs: number;
  /** How long a lease lasts (budgets.lease_s); it also ends when the budget's period does. */
  readonly leaseMs: number;
}

/**
 * One item's answer, in order:
 * - `granted`: a new lease (its id, units, end) and the budget's figures after it;
 * - `exhausted`: the budget cannot give `need`; nothing was granted in this call;
 * - `withheld`: the budget could, but another item of the call was exhausted (all or nothing);
 * - `none`: no such budget here (deleted): nothing to lease;
 * - `reported`: a report or close only, taken.
 */
export type BudgetLeaseAnswer =
  | { readonly status: "granted"; readonly leaseId: string; readonly units: number; readonly expiresAtMs: number; readonly budget: BudgetState }
  | { readonly status: "exhausted"; readonly budget: BudgetState }
  | { readonly status: "withheld"; readonly budget: BudgetState }
  | { readonly status: "none" }
  | { readonly status: "reported"; readonly budget: BudgetState | null };

export interface BudgetLeaseResult {
  readonly answers: readonly BudgetLeaseAnswer[];
  readonly audits: readonly BudgetThresholdAudit[];
}

/** A change to a budget's `used` outside any lease: a debt past a lease (> 0), or a refund after its lease ended (< 0, given back only to `periodStartMs`'s period). */
export interface BudgetAdjustment {
  readonly owner: string;
  readonly category: string;
  readonly units: number;
  /** The period the spend was counted in (null for credits). */
  readonly periodStartMs: number | null;
}

export interface BudgetAdjustRequest {
  readonly adjustments: readonly BudgetAdjustment[];
  readonly nowMs: number;
}
