// DESIGN §3 step 6: requests in progress, per isolate. One credential (a key,
// or an anonymous caller's address) may hold at most
// min(in_flight.per_credential, credential_share × budget) slots, one tenant
// tenant_share × budget, and the isolate budget in all. Over → 429
// too_many_in_flight with Retry-After: 1.
//
// A slot is held until the response is fully streamed to the client, not just
// until the handler returns: the response body is piped through an identity
// stream and the slot is released when the pipe settles — finished, failed,
// or cancelled because the client went away. A response without a body, a
// small one (SMALL_BODY_BYTES, declared), a refusal, or an exception releases
// at once.
import type { Context, MiddlewareHandler } from "hono";
import type { Config } from "../config";
import type { GatewayEnv } from "../context";
import { problem } from "../errors";
import { declaredLength } from "../proxy/content-length";
import { refuse } from "./refuse";

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

  tenantCountOf(tenant: string): number {
    return this.#byTenant.get(tenant) ?? 0;
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

// The bounds of the config last seen: derived once per config, not per request.
let limitsFor: Config | null = null;
let limitsMemo: InFlightLimits | null = null;

/** The bounds in force: the per-credential cap is the tighter of its count and its share. */
export function inFlightLimits(config: Config): InFlightLimits {
  if (limitsFor === config && limitsMemo !== null) return limitsMemo;
  const { budget, perCredential, credentialShare, tenantShare } = config.inFlight;
  limitsFor = config;
  limitsMemo = {
    budget,
    perCredential: Math.max(1, Math.min(perCredential, Math.floor(credentialShare * budget))),
    perTenant: Math.max(1, Math.floor(tenantShare * budget)),
  };
  return limitsMemo;
}

/** The isolate's table. Bounded by the budget: at most `budget` entries in each map. */
export const inFlight = new InFlightTable();

type Ctx = Context<GatewayEnv>;

/**
 * A response body of at most this many bytes, declared in Content-Length,
 * releases its slot when it is handed to the runtime: it leaves in one write,
 * and piping it costs more than the time it would hold the slot.
 */
export const SMALL_BODY_BYTES = 16 * 1024;

/** Calls `release` once, when the response body has been delivered or abandoned. */
function releaseWhenDelivered(c: Ctx, release: () => void): void {
  const body = c.res.body;
  // A FixedLengthStream keeps the origin's Content-Length on the way out
  // (an identity stream would turn the response chunked).
  const length = declaredLength(c.res.headers);
  if (body === null || (length !== null && length <= SMALL_BODY_BYTES)) {
    release();
    return;
  }
  const { readable, writable } = length === null ? new IdentityTransformStream() : new FixedLengthStream(length);
  const delivered = body.pipeTo(writable).then(release, release);
  c.res = new Response(readable, c.res);
  try {
    // Keeps the request's context alive until the pipe settles, so the slot
    // is released even when the client has gone.
    c.executionCtx.waitUntil(delivered);
  } catch {
    // No execution context (the app called directly): the pipe still settles.
  }
}

export function inFlightLimit(): MiddlewareHandler<GatewayEnv> {
  return async function inFlightLimit(c, next) {
    const caller = c.get("caller");
    const credential = caller.kind === "key" ? `key:${caller.keyId}` : `ip:${c.get("clientKey")}`;
    const tenant = caller.kind === "key" ? caller.tenant : null;
    const table = inFlight;
    if (!table.tryAcquire(credential, tenant, inFlightLimits(c.get("config")))) {
      const refused = refuse(
        c,
        "too_many_in_flight",
        problem("too_many_in_flight", { detail: "Too many of this caller's requests are in progress at once.", headers: { "retry-after": "1" } }),
      );
      if (refused !== null) return refused;
      return next();
    }
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      table.release(credential, tenant);
    };
    try {
      await next();
    } catch (err) {
      release();
      throw err;
    }
    if (c.error !== undefined || c.res.status >= 400) {
      // Refusals and errors carry small bodies of our own: no need to wait for them.
      if (c.res.headers.get("content-type") === "application/problem+json") {
        release();
        return;
      }
    }
    releaseWhenDelivered(c, release);
  };
}
