// Which categories a limit or a budget written through the admin API may
// name. A name that means nothing is refused with the names that do, never
// stored: `{"reqest": …}` would be kept and never apply, and the operator
// would believe the caller limited.
import type { Config } from "../config";
import { AUTH_FAILURE_CATEGORY } from "../limits/auth-gate";
import { REQUEST_CATEGORY } from "../limits/rate-limit";
import { MESSAGE_CATEGORY, STREAM_RENT_CATEGORY } from "../limits/stream-charges";
import { invalid } from "./validate";

/** The admin token's category and the auth-failure gate's: the gateway charges them to itself, never to a caller. */
const NOT_CALLER_CATEGORIES: ReadonlySet<string> = new Set(["admin", AUTH_FAILURE_CATEGORY]);

/**
 * What a request spends, and so what a budget can cap: the `request` unit,
 * each route's charges and `response_charge` category, and the config's
 * `categories` entries (which define a category by naming it).
 */
export function budgetCategories(config: Config): Set<string> {
  const out = new Set<string>([REQUEST_CATEGORY]);
  for (const c of config.routes.categories) out.add(c);
  for (const r of config.responseCharges) if (r !== null) out.add(r.category);
  for (const c of Object.keys(config.defaults)) out.add(c);
  for (const c of NOT_CALLER_CATEGORIES) out.delete(c);
  return out;
}

/** What a caller's limit (tenant, key, override) can apply to: every category a budget can, and a stream's rent and messages. */
export function limitCategories(config: Config): Set<string> {
  const out = budgetCategories(config);
  out.add(STREAM_RENT_CATEGORY);
  out.add(MESSAGE_CATEGORY);
  return out;
}

/** The answer for a category not in `known`: 400 naming `field` and listing the known ones. */
export function unknownCategory(field: string, category: string, known: ReadonlySet<string>): Response {
  return invalid(field, `no category named ${category}: one of ${[...known].sort().join(", ")}`);
}

/** A 400 naming the first category of `limits` (found at `field` of the body) that `config` does not define; null when all are known. */
export function unknownLimitCategory(limits: Readonly<Record<string, unknown>> | null | undefined, field: string, config: Config): Response | null {
  if (limits == null) return null;
  const known = limitCategories(config);
  for (const category of Object.keys(limits)) {
    if (!known.has(category)) return unknownCategory(`${field}.${category}`, category, known);
  }
  return null;
}
