// docs/design.md steps 4–5: the request's charges (1 `request`, its route's
// charges, and the reserve of a response-priced route) against its subjects —
// the caller (`key:<digest>`, `jwt:<hex>` or `ip:<address or /64>`), its
// tenant, and for anonymous callers the optional `anonymous` aggregate — all
// or nothing, in the runtime's limiter table. Every charged response carries
// the RateLimit headers: every policy charged, and the tightest limit's figures.
//
// Global limits spend from the isolate's leases, all or nothing
// with the table (global-admission.ts). A request whose leases hold its units
// is decided synchronously, with no I/O; one whose leases are short waits for
// the ledger (single flight) and is decided again, up to MAX_ASK_ROUNDS times.
//
// A request refused only by limits with `delay_max_ms` is held rather than
// refused (src/limits/delay.ts); a route with `charge_on_status` has its own
// charges taken here like any other, and given back once the origin's status
// is known not to match (src/limits/status-charge.ts).
//
// Shadow limits (`shadow: true`) are decided beside the enforced ones once
// those admit the request (src/engine/shadow.ts): never refusing, never
// holding, never changing what the enforced limits decide or charge; what
// one would have refused is marked on the answer and counted. A refusal by
// a limit with a penalty is counted in the penalty box (src/limits/penalty.ts).
import { rateLimitRejections } from "../cache/rejection-counter";
import type { Caller, Exchange } from "../exchange";
import { admit, admitAt, type Charge, type Decision } from "../engine/gcra";
import type { LeaseGroup, Short } from "../engine/lease-types";
import type { LimiterTable } from "../engine/limiter-table";
import { type HeaderVersion, policyName, rateLimitHeaders } from "../engine/rate-limit-headers";
import { asCharged, chargesHaveShadow, decideShadow } from "../engine/shadow";
import type { PolicyCache } from "../cache/policy-cache";
import { notePenalty, type PenaltyBox } from "./penalty";
import { type CategoryDefaults, resolveLimits } from "../engine/resolve-limits";
import type { RouteMatch } from "../engine/routes";
import { problem } from "../errors";
import type { ResponseCharge } from "../proxy/response-cost-spec";
import { type ChargedSubject, chargedSubjects } from "./charged-subjects";
import type { Check, CheckResult } from "./check";
import { contended, decideGlobal, type GlobalOutcome, type GlobalPlan, planGlobal } from "./global-admission";
import type { GlobalLeases } from "./global-leases";
import { rateLimitedResponse } from "./rate-limit-response";
import { addOpenRent } from "./stream-charges";
import { type HeldRequests, holdDelayMs, type Sleep } from "./delay";
import { type InFlightLimits, type InFlightTable, takeSlot } from "./in-flight";
import { refund } from "../proxy/response-cost-gcra";
import { database } from "../db/client";
import { keepAlive } from "../utils/wait-until";
import { type Limit, sameLimit } from "../engine/limit";
import type { StatusSet } from "../engine/status-match";
import { noteRefusal } from "./sustained";

/** Asks of the ledger one request may wait for before it is refused as contended. */
const MAX_ASK_ROUNDS = 4;
/** Seconds a client is told to wait when a global limit cannot be checked (`global.on_error: "deny"`). */
export const LIMITS_UNAVAILABLE_RETRY_AFTER_S = 1;

export const REQUEST_CATEGORY = "request";

/** `cost` of `category` on every subject (a subject with no limits there costs nothing to admit). */
function addCharges(charges: Charge[], subjects: readonly ChargedSubject[], category: string, cost: number): void {
  for (const { kind, subject, sources } of subjects) charges.push({ subject, category, limits: resolveLimits(category, kind, sources), cost });
}

/**
 * Every (subject, category, limits, cost) this request is charged, in this
 * order: the `request` unit on each subject, the route's charges (one entry
 * per category and subject), the reserve of `responseCharge` (the last
 * `subjects.length` entries).
 */
export function chargesFor(subjects: readonly ChargedSubject[], route: RouteMatch | null, responseCharge: ResponseCharge | null = null): Charge[] {
  const charges: Charge[] = [];
  addCharges(charges, subjects, REQUEST_CATEGORY, 1);
  if (route !== null) for (const [category, cost] of route.charges) addCharges(charges, subjects, category, cost);
  if (responseCharge !== null) addCharges(charges, subjects, responseCharge.category, responseCharge.reserve);
  return charges;
}

/** How a refused subject is named in the audit log: the caller key (`key:<id>`) rather than the key's digest. */
function auditedSubject(caller: Caller, subject: string): string {
  return subject.startsWith("key:") ? caller.callerKey : subject;
}

export interface RateLimitOptions {
  readonly table: LimiterTable;
  /** The isolate's leases on global limits (the runtime's). */
  readonly leases: GlobalLeases;
  /** The runtime's clock, read again after waiting for the ledger. */
  readonly now: () => number;
  readonly defaults: CategoryDefaults;
  /** Each route's response_charge, by route index. */
  readonly responseCharges: readonly (ResponseCharge | null)[];
  /** The ratelimit-headers draft the answers follow (default draft-11). */
  readonly headerVersion?: HeaderVersion;
  /** The penalty box and the policy cache its blocks go into (the runtime's). Absent: penalties are never imposed. */
  readonly penalties?: { readonly box: PenaltyBox; readonly policy: PolicyCache };
  /** Holding requests instead of refusing them (delay_max_ms): the isolate's count, the timer, and the in-flight bounds a held request counts against. Absent: never held. */
  readonly delay?: {
    readonly held: HeldRequests;
    readonly sleep: Sleep;
    readonly inFlight: InFlightTable;
    readonly bounds: InFlightLimits;
  };
}

/** Counts (sign 1) or uncounts (-1) a waiting request's needs in its slots, so the next ask wants them too. */
function countWaiting(shorts: ReadonlyMap<LeaseGroup, Short[]>, sign: 1 | -1): void {
  for (const list of shorts.values()) for (const s of list) s.slot.waitingUnits += sign * s.need;
}

/** Waits for the ledger's answer to every short group (one flight each, shared). */
async function waitForLedger(leases: GlobalLeases, x: Exchange, shorts: ReadonlyMap<LeaseGroup, Short[]>): Promise<void> {
  const flights: Promise<void>[] = [];
  for (const [group, list] of shorts) flights.push(leases.flight(x.env.LIMIT_LEDGER, x.ctx, group, list));
  await Promise.all(flights);
}

/**
 * Charges the request's limits, all or nothing; 429 rate_limited when one
 * does not fit, 503 limits_unavailable when a global one cannot be checked
 * and `global.on_error` is "deny".
 * Needs the limiter table, the global leases, the clock, the category defaults and the response charges; returns a Check that sets x.rateHeaders.
 * @example const limit = rateLimit({ table: runtime.limiter, leases: runtime.leases, now: runtime.now, defaults: config.defaults, responseCharges: config.responseCharges });
 */
export function rateLimit(options: RateLimitOptions): Check {
  const { table, leases, now, defaults, responseCharges } = options;
  const version = options.headerVersion ?? "draft-11";

  /** Counts a refusal by `limit` of `charge` in the penalty box, when the limit has a penalty. */
  function penalise(x: Exchange, charge: Charge, limit: Limit, nowMs: number): void {
    const penalties = options.penalties;
    if (penalties === undefined || limit.penalty === null) return;
    const c = { target: x.caller.callerKey, policy: policyName(charge.category, charge.subject, limit), limitSalt: limit.keySaltA, penalty: limit.penalty, shadow: limit.shadow };
    notePenalty(x, penalties.box, penalties.policy, c, nowMs);
  }

  /** Decides the shadow limits of an admitted request, marks what they would have refused; returns the charges as charged. */
  function decideShadowLimits(x: Exchange, charges: readonly Charge[], nowMs: number): readonly Charge[] {
    if (!chargesHaveShadow(charges)) return charges;
    const verdicts = decideShadow(table, charges, nowMs);
    for (const v of verdicts) {
      if (v.admitted) continue;
      const charge = charges[v.chargeIndex]!;
      x.markShadow("rate_limited", policyName(charge.category, charge.subject, v.limit));
      penalise(x, charge, v.limit, nowMs);
    }
    return asCharged(charges, verdicts);
  }

  /** The answer for a decision: the refusal, or null with the headers (and a response-priced reserve) recorded. */
  function conclude(x: Exchange, decision: Decision, allCharges: readonly Charge[], reserveFrom: number, responseCharge: ResponseCharge | null, nowMs: number): CheckResult {
    let charges = allCharges;
    if (!decision.allowed) {
      const denied = charges[decision.deniedChargeIndex];
      if (denied !== undefined) noteRefusal(x, rateLimitRejections, "rate_limit_sustained", auditedSubject(x.caller, denied.subject), denied.category, nowMs);
      if (options.penalties !== undefined) for (const ref of decision.violated ?? []) penalise(x, charges[ref.chargeIndex]!, ref.limit, nowMs);
      const refused = x.refuse("rate_limited", rateLimitedResponse(decision, charges, version));
      if (refused !== null) return refused;
    } else {
      charges = decideShadowLimits(x, charges, nowMs);
      if (charges !== allCharges && x.statusCharge !== null) x.statusCharge = { ...x.statusCharge, charges };
    }
    if (responseCharge !== null) {
      // The reserve's charges are the last ones: kept to settle against the same
      // limits once the origin has answered. In shadow mode a denied request is
      // forwarded with nothing charged to its limits; its priced cost still
      // settles its budgets and metering (what is spent is counted).
      x.priced = { charge: responseCharge, tightest: decision.tightest, charges, reserveFrom, limitsCharged: decision.allowed };
    }
    // Kept so that a later refusal of the same spend (a budget) can give it back: all or nothing.
    if (decision.allowed) x.charged = charges;
    // A charge_on_status route's charges went to the limits only if the request
    // was admitted; a shadow-mode request they refused goes on, and its budgets
    // (which spent them) still give them back when the status does not match.
    else if (x.statusCharge !== null) x.statusCharge = { ...x.statusCharge, limitsCharged: false };
    x.rateHeaders = rateLimitHeaders(decision, charges, version);
    return null;
  }

  /** Gives back a held request's spend (it is not forwarded now): never before now, so its instant goes to whoever asks next. */
  function giveBack(charges: readonly Charge[], nowMs: number): void {
    refund(
      table,
      charges.map((c) => ({ subject: c.subject, category: c.category, limits: c.limits, units: c.cost })),
      nowMs,
    );
  }

  /** The caller's override as this isolate knows it now (an admin write clears the snapshot: it is read again). */
  async function currentOverride(x: Exchange, nowMs: number): Promise<Caller["override"]> {
    const policy = x.runtime.policy;
    const snapshot = policy.peek(nowMs) ?? (await policy.load(() => database(x.env.DB), nowMs, (work) => keepAlive(x.ctx, work)));
    return snapshot.overrideFor(x.caller.callerKey, nowMs);
  }

  /** Whether the caller's own limits for these charges differ under `override` (a held request is then decided again). */
  function limitsChanged(x: Exchange, charges: readonly Charge[], override: Caller["override"]): boolean {
    const own = chargedSubjects({ ...x.caller, override } as Caller, defaults)[0]!;
    const same = (a: readonly Limit[], b: readonly Limit[]) => a.length === b.length && a.every((l, i) => sameLimit(l, b[i]!));
    return charges.some((c) => c.subject === own.subject && c.cost > 0 && !same(resolveLimits(c.category, own.kind, own.sources), c.limits));
  }

  /**
   * Holds a request denied for `delayMs` or less by limits that allow it:
   * its spend admitted at the instant it fits, forwarded then. Null when it
   * cannot be held (shadow mode, a bound reached): the caller refuses it.
   */
  function hold(x: Exchange, charges: readonly Charge[], delayMs: number, nowMs: number, reserveFrom: number, responseCharge: ResponseCharge | null): Promise<CheckResult> | null {
    const delay = options.delay;
    // Shadow mode forwards everything at once; a WebSocket open takes a stream slot, not an in-flight one: neither is held.
    if (delay === undefined || x.config.mode === "shadow" || x.upgrade) return null;
    if (!delay.held.tryHold()) return null;
    if (x.releaseSlot === null && !takeSlot(x, delay.inFlight, delay.bounds)) {
      delay.held.release();
      return null;
    }
    const atMs = nowMs + delayMs;
    const reserved = admitAt(table, charges, atMs, nowMs);
    if (!reserved.allowed) {
      // Cannot happen (the delay is exact); refused as usual if it did.
      delay.held.release();
      return null;
    }
    return (async () => {
      let elapsed: boolean;
      try {
        elapsed = await delay.sleep(delayMs, x.request.signal ?? null);
      } finally {
        delay.held.release();
      }
      const firedMs = Math.max(atMs, Math.floor(now()));
      if (!elapsed) {
        // The client hung up while held: charged nothing; its slot is freed by whoever ends the request.
        giveBack(charges, Math.floor(now()));
        x.decision = "rate_limited";
        return rateLimitedResponse({ ...reserved, allowed: false, retryAfterMs: delayMs, deniedChargeIndex: 0 }, charges, version);
      }
      const override = await currentOverride(x, firedMs);
      if (limitsChanged(x, charges, override)) {
        giveBack(charges, firedMs);
        x.caller = { ...x.caller, override } as Caller;
        x.delayedMs += delayMs;
        return decideAt(x, firedMs);
      }
      x.delayedMs += delayMs;
      return conclude(x, reserved, charges, reserveFrom, responseCharge, atMs);
    })();
  }

  function concludeGlobal(x: Exchange, outcome: Exclude<GlobalOutcome, { kind: "short" }>, plan: GlobalPlan, reserveFrom: number, responseCharge: ResponseCharge | null, nowMs: number): CheckResult {
    if (outcome.kind === "unavailable") {
      x.ledgerError = true;
      // Nothing was charged to the limits (in shadow mode the request goes on): only its budgets give back.
      if (x.statusCharge !== null) x.statusCharge = { ...x.statusCharge, limitsCharged: false };
      return x.refuse(
        "limits_unavailable",
        problem("limits_unavailable", {
          detail: "A global rate limit could not be checked; the request was not forwarded.",
          headers: { "retry-after": String(LIMITS_UNAVAILABLE_RETRY_AFTER_S) },
        }),
      );
    }
    if (outcome.ledgerError) x.ledgerError = true;
    return conclude(x, outcome.decision, plan.charges, reserveFrom, responseCharge, nowMs);
  }

  async function slowGlobal(x: Exchange, plan: GlobalPlan, first: ReadonlyMap<LeaseGroup, Short[]>, reserveFrom: number, responseCharge: ResponseCharge | null): Promise<CheckResult> {
    let shorts = first;
    // A request's needs stay counted from its first ask until it is decided:
    // when an answer lands, every waiter resumes before any decides, so needs
    // counted per ask would all be gone when the next ask is sized, and
    // concurrent waiters would be served one unit per round.
    countWaiting(shorts, 1);
    try {
      for (let round = 0; round < MAX_ASK_ROUNDS; round++) {
        await waitForLedger(leases, x, shorts);
        const nowMs = Math.floor(now());
        const outcome = decideGlobal(table, leases, plan, nowMs);
        if (outcome.kind !== "short") return concludeGlobal(x, outcome, plan, reserveFrom, responseCharge, nowMs);
        countWaiting(shorts, -1);
        shorts = outcome.shorts;
        countWaiting(shorts, 1);
      }
      return conclude(x, contended(plan, shorts), plan.charges, reserveFrom, responseCharge, Math.floor(now()));
    } finally {
      countWaiting(shorts, -1);
    }
  }

  return function rateLimitStep(x) {
    return decideAt(x, x.startedAtMs);
  };

  /** Decides the request at whole-ms `nowMs` (its arrival, or the instant a held request was due). */
  function decideAt(x: Exchange, nowMs: number): CheckResult | Promise<CheckResult> {
    const route = x.route;
    // A WebSocket upgrade pays its route's reserve too: an origin that ignores
    // `Upgrade` answers it as an HTTP request, and that answer is priced.
    const responseCharge = route === null ? null : (responseCharges[route.index] ?? null);
    const subjects = chargedSubjects(x.caller, defaults);
    const charges = chargesFor(subjects, route, responseCharge);
    const reserveFrom = charges.length - subjects.length;
    // charge_on_status: the route's charges are taken now, all or nothing with
    // the rest, so concurrent calls can never pass the limit; they go back
    // once the origin's status is known not to match (the settlement's work).
    const statuses: StatusSet | null = route === null || x.upgrade || route.charges.length === 0 ? null : route.chargeOnStatus;
    x.statusCharge = statuses === null ? null : { statuses, charges, deferredFrom: subjects.length, deferredTo: subjects.length * (1 + route!.charges.length), limitsCharged: true };
    // A WebSocket open also prepays its first period of stream rent, in the same all-or-nothing admission.
    if (x.upgrade) addOpenRent(charges, subjects);
    const plan = planGlobal(leases, charges, nowMs);
    if (plan === null) {
      const decision = admit(table, charges, nowMs);
      if (!decision.allowed && options.delay !== undefined) {
        const delayMs = holdDelayMs(decision);
        const held = delayMs > 0 ? hold(x, charges, delayMs, nowMs, reserveFrom, responseCharge) : null;
        if (held !== null) return held;
      }
      return conclude(x, decision, charges, reserveFrom, responseCharge, nowMs);
    }
    leases.returnDue(x.env.LIMIT_LEDGER, x.ctx, nowMs);
    const outcome = decideGlobal(table, leases, plan, nowMs);
    if (outcome.kind === "short") return slowGlobal(x, plan, outcome.shorts, reserveFrom, responseCharge);
    return concludeGlobal(x, outcome, plan, reserveFrom, responseCharge, nowMs);
  }
}
