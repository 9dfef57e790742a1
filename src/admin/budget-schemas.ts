// The admin API's budget bodies and answers (zod), registered for the
// OpenAPI document like schemas.ts's.
import { z } from "zod";
import { BUDGET_PERIODS } from "../engine/budget-period";
import { MAX_BUDGET_AMOUNT } from "../durable/budget-types";
import { registry } from "./schemas";

const MAX_TOPUP_REASON_CHARS = 256;
const MAX_THRESHOLDS = 8;

// Whole numbers up to 2^53 itself (zod's int() stops at 2^53 − 1).
const wholeAmount = z
  .number("must be a number")
  .refine((n) => Number.isInteger(n), "must be a whole number")
  .refine((n) => n >= 0, "must be >= 0")
  .refine((n) => n <= MAX_BUDGET_AMOUNT, "must be <= 2^53");

export const budgetBodySchema = z.strictObject({
  amount: wholeAmount.describe("Units of the category the owner may spend per period (or in all, for credits)."),
  period: z.enum(BUDGET_PERIODS, "must be day, week, month or none").describe("`day`, `week` (from Monday) or `month`, each from 00:00 UTC; `none`: prepaid credits that never reset (top them up)."),
  thresholds: z
    .array(z.number("must be a number").gt(0, "must be > 0").lte(1, "must be <= 1"), "must be a list of fractions")
    .max(MAX_THRESHOLDS, `at most ${MAX_THRESHOLDS} thresholds`)
    .optional()
    .describe("Fractions of `amount` whose first crossing in a period writes a `budget_threshold` audit event; default [0.8, 1]."),
  shadow: z
    .boolean("must be true or false")
    .optional()
    .describe("Try the budget: kept as if enforced (its thresholds and alerts too, marked shadow), but a spend it cannot take is not refused (nor charged to it): the request goes on, marked `Tollgate-Shadow: budget_exhausted;policy=\"budget-<category>-<owner kind>-<period>\"`, and GET /traffic/shadow counts it. Default false; false switches it on."),
});
registry.add(budgetBodySchema, { id: "BudgetBody", description: "A budget of one category for a key, tenant or org." });

export const topUpBodySchema = z.strictObject({
  amount: wholeAmount.refine((n) => n > 0, "must be > 0").describe("Units added to the credits' amount."),
  reason: z.string("must be a string").max(MAX_TOPUP_REASON_CHARS, `at most ${MAX_TOPUP_REASON_CHARS} characters`).optional().describe("The operator's note, kept in the audit event."),
});
registry.add(topUpBodySchema, { id: "TopUpBody", description: "A top-up of prepaid credits (a budget with period `none`)." });

export const budgetSchema = z
  .object({
    owner: z.string().describe("`tenant:<slug>`, `key:<id>` or `org:<slug>`"),
    category: z.string(),
    period: z.enum(BUDGET_PERIODS),
    amount: z.number(),
    used: z.number().describe("Spent this period, with the units leased to isolates (counted from the grant) and the reserves of requests in flight; past `amount` only by a response-priced debt."),
    remaining: z.number(),
    leased: z.number().describe("Units isolates hold in leases and have not reported spent: `used − leased` is the spend the object knows of."),
    thresholds: z.array(z.number()),
    shadow: z.boolean().describe("true: a shadow budget, refusing nothing"),
    period_start: z.string().nullable().describe("ISO 8601; null for credits"),
    resets_at: z.string().nullable().describe("ISO 8601; null for credits"),
  })
  .meta({});
registry.add(budgetSchema, { id: "Budget", description: "A budget and its spend in the current period." });
