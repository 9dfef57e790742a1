// A limit, as config and the admin API write it, and its compiled form.
//
// Exactness. The emission interval T = W/C is often fractional (1000/3 ms), so
// the engine never meters in floating-point milliseconds. Each limit gets its
// own time unit, 1/unitsPerMs ms, chosen so that T is a whole number of units:
// with windowMs = W·1000 and g = gcd(windowMs, C), T = (windowMs/g)/(C/g) ms,
// i.e. intervalUnits = windowMs/g units of 1/unitsPerMs = C/g ms each. Every
// quantity the admission rule compares (E − t, n·T, B·T) is then a whole
// number of units, held in a double. Doubles hold every integer below 2^53
// exactly. A state never reaches past t + max(B, MAX_COST)·T, and a check adds
// at most MAX_COST·T to it, so limitError refuses a limit unless
// (burst + 2·MAX_COST)·intervalUnits ≤ MAX_EXACT_UNITS = 2^52. That leaves
// room below 2^53 for rounding up to whole ms (one more unitsPerMs ≤ 10^9),
// and keeps any state's TAT within 2^52 ms of now, which the limiter table
// stores in 53 bits. Real limits sit far below it (1000/s: T = 1 ms, one unit
// per ms; 1 per 366 days with a burst of 1: 6.3·10^14); it refuses only
// absurd ones such as a burst of 10^9 over a year-long window with a prime
// count.
import { mix32, mixWhole, fmix32 } from "./hash32";

/**
 * Where a limit's state lives: "isolate" meters in each isolate
 * on its own; "global" holds across every isolate through leases from the
 * subject's LimitLedger Durable Object.
 */
export type LimitScope = "isolate" | "global";

/** The config / admin JSON shape: a sustained `count` per `window_s` seconds, bursts up to `burst` (default `count`); `scope` defaults to `limiter.default_scope`. */
export interface LimitSpec {
  count: number;
  window_s: number;
  burst?: number;
  scope?: LimitScope;
  /** Hold a request whose exact retry delay is at most this many ms instead of refusing it (0 or absent: refuse). */
  delay_max_ms?: number;
  /** Kept exactly as if enforced, but never refuses: what it would refuse is marked and counted (a rollout's dry run). */
  shadow?: boolean;
  /** Block a caller this limit refuses `after` times within `within_s` seconds, for `block_s` seconds. */
  penalty?: PenaltySpec;
}

/** The penalty box of a limit, as written. */
export interface PenaltySpec {
  after: number;
  within_s: number;
  block_s: number;
}

/** A compiled penalty: refusals counted per caller, the block they earn. */
export interface Penalty {
  readonly after: number;
  readonly withinMs: number;
  readonly blockMs: number;
}

/** A validated limit with everything the admission rule needs precomputed. Frozen; compare by value, not identity. */
export interface Limit {
  readonly count: number;
  readonly windowS: number;
  readonly burst: number;
  /** As written, or the default scope it was compiled with. */
  readonly scope: LimitScope;
  /** A denial by this limit whose exact retry delay is at most this is held rather than refused; 0 = never held. Not part of the state's identity. */
  readonly delayMaxMs: number;
  /**
   * Decided beside the enforced limits, never with them (admit() skips it):
   * charged when it fits, never refusing. Not part of the state's identity,
   * so switching it off enforces from the state it kept.
   */
  readonly shadow: boolean;
  /** The penalty box (null: none). Not part of the state's identity. */
  readonly penalty: Penalty | null;
  readonly windowMs: number;
  /** The metering unit is 1/unitsPerMs ms (C/g; 1 whenever T is a whole number of ms). */
  readonly unitsPerMs: number;
  /** The emission interval T = W/C in units (windowMs/g). */
  readonly intervalUnits: number;
  /** T as whole ms plus a remainder in units (intervalUnits = intervalWholeMs·unitsPerMs + intervalRemUnits), so a spend's new TAT needs no division. */
  readonly intervalWholeMs: number;
  readonly intervalRemUnits: number;
  /** The tolerance B·T in units: a spend fits when it ends at most this far after now. */
  readonly toleranceUnits: number;
  /** Two 32-bit words hashed from (count, windowMs, burst, and a global scope), mixed into the table key so a changed limit starts from fresh state. */
  readonly keySaltA: number;
  readonly keySaltB: number;
}

/** Enforced limits per list (per subject and category): say one per minute and one per hour. */
export const MAX_LIMITS_PER_LIST = 3;
/** Shadow limits a list may hold beside its enforced ones (a new limit tried before it is switched on). */
export const MAX_SHADOW_LIMITS_PER_LIST = 3;
/** The penalty box's bounds: refusals counted, the span they are counted over, the block they earn (a week). */
export const MAX_PENALTY_AFTER = 10_000;
export const MAX_PENALTY_WITHIN_S = 86_400;
export const MAX_PENALTY_BLOCK_S = 604_800;
/** Bounds that keep every metered quantity an exact integer (see the header comment). */
export const MAX_COUNT = 1_000_000_000;
export const MAX_BURST = 1_000_000_000;
/** 366 days. */
export const MAX_WINDOW_S = 31_622_400;
/** The longest a request may be held rather than refused (`delay_max_ms`). */
export const MAX_DELAY_MS = 10_000;
/** The largest cost of one spend (routes' charges); part of the exactness bound. */
export const MAX_COST = 10_000;
/** The largest number of units a state plus a spend may reach (see the header comment). */
export const MAX_EXACT_UNITS = 2 ** 52;

/** The fields a limit may have: a typo such as `scpoe` is refused, not ignored. */
const LIMIT_FIELDS: ReadonlySet<string> = new Set(["count", "window_s", "burst", "scope", "delay_max_ms", "shadow", "penalty"]);
const PENALTY_FIELDS: ReadonlySet<string> = new Set(["after", "within_s", "block_s"]);

function isWholeIn(value: unknown, min: number, max: number): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= min && value <= max;
}

function gcd(a: number, b: number): number {
  while (b !== 0) {
    const r = a % b;
    a = b;
    b = r;
  }
  return a;
}

/** Null when `spec` is a valid limit, else a short reason naming the field. */
export function limitError(spec: unknown): string | null {
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) return "a limit must be an object {count, window_s, burst?, scope?}";
  for (const field of Object.keys(spec)) if (!LIMIT_FIELDS.has(field)) return `${field.slice(0, 40)} is not a known limit field (count, window_s, burst, scope, delay_max_ms, shadow, penalty)`;
  const { count, window_s: windowS, burst, scope, delay_max_ms: delayMaxMs, shadow, penalty } = spec as Record<string, unknown>;
  if (!isWholeIn(count, 1, MAX_COUNT)) return `count must be a whole number > 0 and <= ${MAX_COUNT}`;
  if (typeof windowS !== "number" || !Number.isFinite(windowS) || windowS <= 0) return "window_s must be a finite number of seconds > 0";
  if (windowS > MAX_WINDOW_S) return `window_s must be <= ${MAX_WINDOW_S} (366 days)`;
  // Whole milliseconds, so that T is an exact fraction; 0.25 is fine, 0.0001 is not.
  const windowMs = Math.round(windowS * 1000);
  if (windowMs === 0 || windowMs / 1000 !== windowS) return "window_s must be a whole number of milliseconds (e.g. 0.25, not 0.0001)";
  if (burst !== undefined && !isWholeIn(burst, 1, MAX_BURST)) return `burst must be a whole number > 0 and <= ${MAX_BURST}`;
  if (scope !== undefined && scope !== "isolate" && scope !== "global") return 'scope must be "isolate" or "global"';
  if (delayMaxMs !== undefined && !isWholeIn(delayMaxMs, 0, MAX_DELAY_MS)) return `delay_max_ms must be a whole number of ms from 0 to ${MAX_DELAY_MS}`;
  if (shadow !== undefined && typeof shadow !== "boolean") return "shadow must be true or false";
  // A global limit's state lives in its ledger, which admits all or nothing with the isolates' leases: a shadow one would have to be decided there too.
  if (shadow === true && scope === "global") return 'shadow must not be set on a limit with scope "global": try it with scope "isolate"';
  if (penalty !== undefined) {
    const reason = penaltyError(penalty);
    if (reason !== null) return reason;
  }
  const burstCount = burst ?? count;
  const intervalUnits = windowMs / gcd(windowMs, count);
  if ((burstCount + 2 * MAX_COST) * intervalUnits > MAX_EXACT_UNITS) {
    return "burst × window_s is too large to meter exactly for this count: shorten window_s or lower burst";
  }
  return null;
}

/** Null when `spec` is a valid penalty, else a reason starting with the field (`penalty.after …`). */
function penaltyError(spec: unknown): string | null {
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) return "penalty must be an object {after, within_s, block_s}";
  for (const field of Object.keys(spec)) if (!PENALTY_FIELDS.has(field)) return `penalty.${field.slice(0, 40)} is not a known penalty field (after, within_s, block_s)`;
  const { after, within_s: withinS, block_s: blockS } = spec as Record<string, unknown>;
  if (!isWholeIn(after, 1, MAX_PENALTY_AFTER)) return `penalty.after must be a whole number of refusals from 1 to ${MAX_PENALTY_AFTER}`;
  if (typeof withinS !== "number" || !Number.isFinite(withinS) || withinS <= 0 || withinS > MAX_PENALTY_WITHIN_S) return `penalty.within_s must be a number of seconds > 0 and <= ${MAX_PENALTY_WITHIN_S}`;
  if (Math.round(withinS * 1000) / 1000 !== withinS) return "penalty.within_s must be a whole number of milliseconds";
  if (!isWholeIn(blockS, 1, MAX_PENALTY_BLOCK_S)) return `penalty.block_s must be a whole number of seconds from 1 to ${MAX_PENALTY_BLOCK_S}`;
  return null;
}

/**
 * Compiles a valid spec; a spec without `scope` takes `defaultScope`, except
 * a shadow one, which is metered per isolate (see limitError). Throws
 * on an invalid one: callers validate first, so that is a bug.
 */
export function compileLimit(spec: LimitSpec, defaultScope: LimitScope = "isolate"): Limit {
  const reason = limitError(spec);
  if (reason !== null) throw new TypeError(`invalid limit: ${reason}`);
  const count = spec.count;
  const burst = spec.burst ?? count;
  const shadow = spec.shadow === true;
  const scope = spec.scope ?? (shadow ? "isolate" : defaultScope);
  const windowMs = Math.round(spec.window_s * 1000);
  const g = gcd(windowMs, count);
  const intervalUnits = windowMs / g;
  const unitsPerMs = count / g;
  let a = mix32(mixWhole(mix32(0x243f6a88, count), windowMs), burst);
  let b = mix32(mixWhole(mix32(0x13198a2e, burst), windowMs), count);
  // A global limit metered per isolate (the ledger unreachable, `global.on_error: "local"`) keeps its own state, apart from an isolate limit of the same figures.
  if (scope === "global") {
    a = mix32(a, 0x676c6f62);
    b = mix32(b, 0x616c2121);
  }
  a = fmix32(a);
  b = fmix32(b ^ 0x03707344);
  return Object.freeze({
    count,
    windowS: spec.window_s,
    burst,
    scope,
    delayMaxMs: spec.delay_max_ms ?? 0,
    shadow,
    penalty: spec.penalty === undefined ? null : Object.freeze({ after: spec.penalty.after, withinMs: Math.round(spec.penalty.within_s * 1000), blockMs: spec.penalty.block_s * 1000 }),
    windowMs,
    unitsPerMs,
    intervalUnits,
    intervalWholeMs: Math.floor(intervalUnits / unitsPerMs),
    intervalRemUnits: intervalUnits % unitsPerMs,
    toleranceUnits: burst * intervalUnits,
    keySaltA: a,
    keySaltB: b,
  });
}

/** Whether a spec says `shadow: true` (for counting a list's entries before they are validated). */
function isShadowSpec(spec: unknown): boolean {
  return typeof spec === "object" && spec !== null && (spec as { shadow?: unknown }).shadow === true;
}

/** Null when a list holds at most MAX_LIMITS_PER_LIST enforced and MAX_SHADOW_LIMITS_PER_LIST shadow entries, else the rule. */
export function listSizeError(specs: readonly unknown[]): string | null {
  let shadow = 0;
  for (const spec of specs) if (isShadowSpec(spec)) shadow++;
  if (specs.length - shadow > MAX_LIMITS_PER_LIST) return `at most ${MAX_LIMITS_PER_LIST} limits per list (and ${MAX_SHADOW_LIMITS_PER_LIST} shadow ones beside them)`;
  if (shadow > MAX_SHADOW_LIMITS_PER_LIST) return `at most ${MAX_SHADOW_LIMITS_PER_LIST} shadow limits per list`;
  return null;
}

/** Null when `specs` is a valid list (at most MAX_LIMITS_PER_LIST enforced limits and MAX_SHADOW_LIMITS_PER_LIST shadow ones), else the reason naming the entry. */
export function limitListError(specs: unknown): string | null {
  if (!Array.isArray(specs)) return "limits must be a list";
  const size = listSizeError(specs);
  if (size !== null) return size;
  for (let i = 0; i < specs.length; i++) {
    const reason = limitError(specs[i]);
    if (reason !== null) return `[${i}]: ${reason}`;
  }
  return null;
}

/**
 * Compiles a list of up to MAX_LIMITS_PER_LIST limits (and shadow ones
 * beside them); a spend must fit all the enforced ones. A repeated limit
 * (same count, window, burst and scope) is kept once: it is the same state,
 * and admit() would otherwise charge it twice; when one copy is enforced and
 * another shadow, the enforced one is kept. A spec without `scope` takes
 * `defaultScope`. Throws on an invalid list.
 */
export function compileLimits(specs: readonly LimitSpec[], defaultScope: LimitScope = "isolate"): readonly Limit[] {
  const reason = limitListError(specs);
  if (reason !== null) throw new TypeError(`invalid limit list: ${reason}`);
  const limits: Limit[] = [];
  for (const limit of specs.map((spec) => compileLimit(spec, defaultScope))) {
    const same = limits.findIndex((l) => sameLimit(l, limit));
    if (same < 0) limits.push(limit);
    else if (limits[same]!.shadow && !limit.shadow) limits[same] = limit;
  }
  return Object.freeze(limits);
}

/** Whether a list holds only shadow limits (and at least one): it does not displace the enforced limits below it. */
export function isShadowOnly(limits: readonly Limit[]): boolean {
  if (limits.length === 0) return false;
  for (let i = 0; i < limits.length; i++) if (!limits[i]!.shadow) return false;
  return true;
}

/** Whether a list holds a shadow limit. */
export function hasShadow(limits: readonly Limit[]): boolean {
  for (let i = 0; i < limits.length; i++) if (limits[i]!.shadow) return true;
  return false;
}

const ENFORCED_TWINS = new WeakMap<Limit, Limit>();

/** A shadow limit as an enforced one (the same state): what admit() decides it with, beside the enforced limits. */
export function enforcedTwin(limit: Limit): Limit {
  if (!limit.shadow) return limit;
  let twin = ENFORCED_TWINS.get(limit);
  if (twin === undefined) {
    twin = Object.freeze({ ...limit, shadow: false });
    ENFORCED_TWINS.set(limit, twin);
  }
  return twin;
}

/** Whether two compiled limits are the same state: same figures and scope. */
export function sameLimit(a: Limit, b: Limit): boolean {
  return a.count === b.count && a.windowMs === b.windowMs && a.burst === b.burst && a.scope === b.scope;
}
