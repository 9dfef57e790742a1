// The request and result shapes of the budget RPC methods that TenantQuota
// (tenant and key budgets) and OrgQuota (org budgets) both serve. The edge and
// the admin API import these (type-only); the objects check every field at
// runtime (budget-input.ts).
//
// Owners: `tenant:<slug>`, `key:<id>` (both in the tenant's object) and
// `org:<slug>` (in the org's). Units are whole numbers ≥ 0 up to 2^53;
// `*Ms` fields are Unix ms.
import type { BudgetPeriod } from "../engine/budget-period";

/** Largest `amount` a budget may have: 2^53 (the API's bound). */
export const MAX_BUDGET_AMOUNT = 2 ** 53;
/** Longest Idempotency-Key a top-up may carry. */
export const MAX_IDEMPOTENCY_KEY_CHARS = 200;
/** Thresholds a budget gets when none are given. */
export const DEFAULT_BUDGET_THRESHOLDS: readonly number[] = [0.8, 1];

/** One budget's figures now. */
export interface BudgetState {
  owner: string;
  category: string;
  period: BudgetPeriod;
  amount: number;
  used: number;
  /** max(amount − used, 0). */
  remaining: number;
  thresholds: number[];
  /** When the current period began (null for credits). */
  periodStartMs: number | null;
  /** When it resets (null for credits). */
  resetsAtMs: number | null;
  /** Units isolates hold in leases, counted in `used` and not yet reported spent (listings only). */
  leased?: number;
  /** Present (true) for a shadow budget: kept as if enforced, but a spend it cannot take is not refused (nor charged to it). */
  shadow?: true;
}

/** A spend of `units` of `category` from the budget of `owner`. */
export interface BudgetSpend {
  owner: string;
  category: string;
  units: number;
}

export interface BudgetReserveRequest {
  /** Unique per request; a retry with the same id is the same reservation. */
  reservationId: string;
  spends: BudgetSpend[];
  nowMs: number;
  /** Shadow mode: record the spends even past `amount`, and still say which budget would have refused. */
  force?: boolean;
}

/** A threshold crossed for the first time in a budget's period: an audit event to record. */
export interface BudgetThresholdAudit {
  owner: string;
  category: string;
  period: BudgetPeriod;
  threshold: number;
  amount: number;
  used: number;
  periodStartMs: number | null;
  /** Present (true) when the budget is a shadow one: its alerts and audit events say so. */
  shadow?: true;
}

/**
 * - `reserved`: every spend whose budget exists here was recorded; `budgets`
 *   are their figures after it (empty: none of the spends has a budget here).
 *   `exhausted` is set only with `force`: the budget that would have refused.
 * - `exhausted`: one budget cannot take its spend; nothing was recorded.
 */
export type BudgetReserveResult =
  | {
      status: "reserved";
      budgets: BudgetState[];
      exhausted: BudgetState | null;
      audits: BudgetThresholdAudit[];
      /** With `force` (shadow mode): the shadow budgets charged past their room, which the request is marked with. */
      shadows?: BudgetState[];
    }
  | { status: "exhausted"; budget: BudgetState };

export interface BudgetSettleRequest {
  reservationId: string;
  /** The actual units per category; a category not listed keeps its reserve. */
  actual: { category: string; units: number }[];
  nowMs: number;
}

export interface BudgetSettleResult {
  /** `unknown`: no reservation of that id is held (never made, settled already, or pruned after a day). */
  status: "settled" | "unknown";
  /** Units charged above the reserves (debt) and given back (refund), summed over the budgets. */
  debt: number;
  refunded: number;
  audits: BudgetThresholdAudit[];
}

export interface BudgetPutRequest {
  owner: string;
  category: string;
  amount: number;
  period: BudgetPeriod;
  thresholds?: number[];
  /** A shadow budget (tried, refusing nothing); absent or false: enforced. */
  shadow?: boolean;
  nowMs: number;
}

export interface BudgetPutResult {
  created: boolean;
  budget: BudgetState;
  previous: BudgetState | null;
}

export interface BudgetTopUpRequest {
  owner: string;
  category: string;
  amount: number;
  nowMs: number;
  /**
   * The admin's `Idempotency-Key`: a top-up of the same owner with the same
   * key within BUDGET_TOPUP_KEY_RETENTION_MS adds nothing and answers what
   * the first one did.
   */
  idempotencyKey?: string;
}

/**
 * - `topped_up`: `budget` is the credits after the top-up; `replayed`: this
 *   key's first top-up, answered again (nothing added now).
 * - `key_reused`: the key was given within its retention to a top-up of
 *   another category or amount; nothing was added.
 */
export type BudgetTopUpResult =
  | { status: "topped_up"; budget: BudgetState; replayed: boolean }
  | { status: "not_found" }
  | { status: "periodic"; budget: BudgetState }
  | { status: "key_reused" };
