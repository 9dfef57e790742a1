// Blocks (DESIGN §15): a blocked caller, tenant or network gets 403 blocked
// before any other check (after the client address), charged nothing, never
// forwarded. Countries come from the config (`blocked_countries`, matched
// against request.cf.country); operator blocks come from the policy snapshot.
import type { Exchange } from "../context";
import { problem } from "../errors";
import type { Check } from "./check";

export function blockedResponse(): Response {
  return problem("blocked", { detail: "Requests from this caller are blocked by the operator." });
}

export interface CountryBlockOptions {
  readonly countries: ReadonlySet<string>;
}

/**
 * @example blockCountries({ countries: new Set(["KP"]) }) // null when the list is empty
 */
export function blockCountries(options: CountryBlockOptions): Check | null {
  const countries = options.countries;
  if (countries.size === 0) return null;
  return function countryBlockStep(x: Exchange) {
    const country = (x.request as Request<unknown, IncomingRequestCfProperties>).cf?.country;
    if (typeof country === "string" && countries.has(country)) return x.refuse("blocked", blockedResponse());
    return null;
  };
}
