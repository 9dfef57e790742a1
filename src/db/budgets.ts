// The `budgets` column of tenants, api_keys and orgs: which categories an
// owner has a budget of (`{"<category>": {"period": "month"}}`), read by the
// gateway with the cached record. Each write changes one category with
// SQLite's JSON functions in one statement, so two admin calls on different
// categories of one owner never lose each other's write.
import { eq, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { Db } from "./client";
import { apiKeys, orgs, tenants } from "./schema";

export type BudgetOwnerKind = "tenant" | "key" | "org";

function jsonPath(category: string): string {
  // Category names match ^[a-z][a-z0-9_]{0,31}$ (checked by the admin API): no quoting needed beyond the quotes.
  return `$."${category}"`;
}

function column(kind: BudgetOwnerKind): { budgets: SQLiteColumn; where: (id: string) => SQL } {
  switch (kind) {
    case "tenant":
      return { budgets: tenants.budgets, where: (id) => eq(tenants.slug, id) };
    case "key":
      return { budgets: apiKeys.budgets, where: (id) => eq(apiKeys.id, id) };
    case "org":
      return { budgets: orgs.budgets, where: (id) => eq(orgs.slug, id) };
  }
}

function update(db: Db, kind: BudgetOwnerKind, id: string, value: SQL) {
  const c = column(kind);
  switch (kind) {
    case "tenant":
      return db.update(tenants).set({ budgets: value }).where(c.where(id));
    case "key":
      return db.update(apiKeys).set({ budgets: value }).where(c.where(id));
    case "org":
      return db.update(orgs).set({ budgets: value }).where(c.where(id));
  }
}

/** Marks `category` as budgeted for the owner, for a batch. */
export function setBudgetCategory(db: Db, kind: BudgetOwnerKind, id: string, category: string, period: string) {
  const c = column(kind);
  return update(db, kind, id, sql`json_set(coalesce(${c.budgets}, '{}'), ${jsonPath(category)}, json(${JSON.stringify({ period })}))`);
}

/** Removes `category` from the owner's budgets (NULL when none is left), for a batch. */
export function removeBudgetCategory(db: Db, kind: BudgetOwnerKind, id: string, category: string) {
  const c = column(kind);
  const removed = sql`json_remove(coalesce(${c.budgets}, '{}'), ${jsonPath(category)})`;
  return update(db, kind, id, sql`nullif(${removed}, '{}')`);
}
