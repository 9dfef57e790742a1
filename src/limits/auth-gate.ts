// The one auth-failure gate, for the gateway's credentials
// and the admin API's tokens alike. A request that presents a credential from
// an address already over `auth_failures` (default 60 per 60 s) is refused 429
// before any lookup; every refused credential charges one unit to
// `authfail:<address or /64>`. Checking charges nothing.
import { admit, type Charge, wouldAdmit } from "../engine/gcra";
import type { Limit } from "../engine/limit";
import type { LimiterTable } from "../engine/limiter-table";
import { retryAfterSeconds } from "../engine/rate-limit-headers";
import { problem } from "../errors";

export const AUTH_FAILURE_CATEGORY = "auth_failures";

type GateOutcome = { open: true } | { open: false; retryAfterMs: number };

export class AuthFailureGate {
  readonly #table: LimiterTable;
  readonly #limits: readonly Limit[];

  constructor(table: LimiterTable, limits: readonly Limit[]) {
    this.#table = table;
    this.#limits = limits;
  }

  #charges(clientKey: string): Charge[] {
    return [{ subject: `authfail:${clientKey}`, category: AUTH_FAILURE_CATEGORY, limits: this.#limits, cost: 1 }];
  }

  /** Whether one more failure from this address would still fit; charges nothing. */
  check(clientKey: string, nowMs: number): GateOutcome {
    const decision = wouldAdmit(this.#table, this.#charges(clientKey), nowMs);
    return decision.allowed ? OPEN : { open: false, retryAfterMs: decision.retryAfterMs };
  }

  /** One refused credential from this address. */
  charge(clientKey: string, nowMs: number): void {
    admit(this.#table, this.#charges(clientKey), nowMs);
  }
}

const OPEN: GateOutcome = Object.freeze({ open: true });

/** 429 auth_failures for a closed gate. Never names the address. */
export function authFailuresResponse(retryAfterMs: number): Response {
  return problem("auth_failures", {
    detail: "Too many failed authentications from this address.",
    extras: { category: AUTH_FAILURE_CATEGORY, retry_after_ms: retryAfterMs },
    headers: { "retry-after": String(retryAfterSeconds(retryAfterMs)) },
  });
}
