// The budgets column of a tenant, key or org row (`{"<category>": {"period": …}}`),
// compiled once per cache load into the set of budgeted categories: what the
// budget step checks, with no I/O, to know whether a request spends a budget.
// Amounts and spend are the quota object's; a stored value that does not
// parse is logged and treated as no budgets.
import type { BudgetCategories } from "../exchange";
import { log } from "../log/logger";

export function compileStoredBudgets(text: string | null | undefined, what: string): BudgetCategories {
  if (text == null) return null;
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw new TypeError("not an object");
    const categories = Object.keys(value);
    return categories.length === 0 ? null : new Set(categories);
  } catch {
    log.warn("stored_value_invalid", { what });
    return null;
  }
}
