// docs/design.md step 6: requests in progress, per isolate. One credential (a key,
// or an anonymous caller's address) may hold at most
// min(in_flight.per_credential, credential_share × budget) slots, one tenant
// tenant_share × budget, and the isolate budget in all. Over → 429
// too_many_in_flight with Retry-After: 1.
//
// A slot is held until the response is fully streamed to the client, not just
// until the handler returns: the response body is piped through an identity
// stream and the slot is released when the pipe settles — finished, failed,
// or cancelled because the client went away (src/limits/settle.ts); on a
// response-priced route, when the cost tap has read the origin's body to its
// end (no second stream). A response without a body, a small one
// (SMALL_BODY_BYTES, declared), a refusal, or an exception releases at once.
// One table per runtime.
import type { Config } from "../config";
import type { Exchange } from "../context";
import { fixedProblem } from "../errors";
import type { Check } from "./check";

/** Counts by credential and by tenant; entries are deleted at zero, so the maps hold only what is in flight. */
export class InFlightTable {
  readonly #byCredential = new Map<string, number>();
  readonly #byTenant = new Map<string, number>();
  #total = 0;

  get total(): number {
    return this.#total;
  }

  countOf(credential: string): number {
    return this.#byCredential.get(credential) ?? 0;
  }

  /** Takes a slot if every bound allows it. */
  tryAcquire(credential: string, tenant: string | null, limits: InFlightLimits): boolean {
    if (this.#total >= limits.budget) return false;
    const held = this.#byCredential.get(credential) ?? 0;
    if (held >= limits.perCredential) return false;
    if (tenant !== null && (this.#byTenant.get(tenant) ?? 0) >= limits.perTenant) return false;
    this.#byCredential.set(credential, held + 1);
    if (tenant !== null) this.#byTenant.set(tenant, (this.#byTenant.get(tenant) ?? 0) + 1);
    this.#total++;
    return true;
  }

  release(credential: string, tenant: string | null): void {
    decrement(this.#byCredential, credential);
    if (tenant !== null) decrement(this.#byTenant, tenant);
    if (this.#total > 0) this.#total--;
  }
}

function decrement(map: Map<string, number>, name: string): void {
  const n = map.get(name);
  if (n === undefined) return;
  if (n <= 1) map.delete(name);
  else map.set(name, n - 1);
}

export interface InFlightLimits {
  readonly budget: number;
  readonly perCredential: number;
  readonly perTenant: number;
}

/** The bounds in force: the per-credential cap is the tighter of its count and its share. */
export function inFlightBounds(inFlight: Config["inFlight"]): InFlightLimits {
  const { budget, perCredential, credentialShare, tenantShare } = inFlight;
  return {
    budget,
    perCredential: Math.max(1, Math.min(perCredential, Math.floor(credentialShare * budget))),
    perTenant: Math.max(1, Math.floor(tenantShare * budget)),
  };
}

export interface InFlightOptions {
  readonly table: InFlightTable;
  readonly bounds: InFlightLimits;
}

/**
 * Takes an in-flight slot for the request's credential and tenant, or answers
 * 429 too_many_in_flight. The slot is released by whoever ends the request
 * (x.releaseSlot): at once for a refusal or an error, after the response body
 * is delivered or abandoned for a forwarded request (src/limits/settle.ts).
 * @example const slots = inFlightLimit({ table: runtime.inFlight, bounds: inFlightBounds(config.inFlight) });
 */
export function inFlightLimit(options: InFlightOptions): Check {
  const { table, bounds } = options;
  const tooMany = fixedProblem("too_many_in_flight", { detail: "Too many of this caller's requests are in progress at once.", headers: { "retry-after": "1" } });
  return function inFlightStep(x) {
    // A request held by a delay took its slot when it was held.
    if (x.releaseSlot !== null) return null;
    if (!takeSlot(x, table, bounds)) {
      return x.refuse("too_many_in_flight", tooMany());
    }
    return null;
  };
}

/** Takes an in-flight slot for the request's credential and tenant and sets x.releaseSlot; false when a bound is reached. */
export function takeSlot(x: Exchange, table: InFlightTable, bounds: InFlightLimits): boolean {
  const credential = x.caller.callerKey;
  const tenant = x.tenant?.slug ?? null;
  if (!table.tryAcquire(credential, tenant, bounds)) return false;
  let released = false;
  x.releaseSlot = () => {
    if (released) return;
    released = true;
    table.release(credential, tenant);
  };
  return true;
}
