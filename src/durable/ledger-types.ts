// What the edge and LimitLedger say to each other, and the
// runtime checks the object makes on it. A failed check is a bug at the edge,
// so it throws a TypeError naming the field, which RPC carries back.
//
// Limits travel as their figures ({count, window_s, burst}); the object
// compiles them with the engine's own rule. Times are the calling isolate's
// Unix ms: the ledger charges a grant at the time the ask was sent, which is
// also when the isolate's lease starts (lease-book.ts).
import { compileLimit, type Limit, limitError, MAX_COST } from "../engine/limit";

export interface LedgerLimit {
  count: number;
  window_s: number;
  burst: number;
}

export interface LedgerAskItem {
  limit: LedgerLimit;
  /** The spend this ask must cover, 1..MAX_COST. */
  need: number;
  /** The lease it would like, >= need. */
  want: number;
  /** Unspent units of this isolate's previous lease of the limit, given back first (0: none). */
  returning: number;
  returningGrantedAtMs: number;
}

export interface LedgerGrantRequest {
  category: string;
  nowMs: number;
  items: LedgerAskItem[];
  /**
   * Who the ledger's subject is, as the accuracy report may name it: the
   * subject itself (`key:<digest>`, `tenant:<slug>`, `jwt:<hex>`,
   * `anonymous`), or `ip` alone for an address, which never reaches the
   * ledger. Kept in the directory of ledgers (ledgerLabelOf).
   */
  label?: string;
}

export interface LedgerFigures {
  /** Whole spends of cost 1 that fit now. */
  remaining: number;
  /** Whole ms until the state is earned back. */
  resetMs: number;
}

export type LedgerGrantResult =
  | { status: "granted"; grants: (LedgerFigures & { units: number })[] }
  | ({ status: "denied"; index: number; retryAfterMs: number } & LedgerFigures);

export interface LedgerReturn {
  limit: LedgerLimit;
  units: number;
  grantedAtMs: number;
}

export interface LedgerGiveBackRequest {
  category: string;
  nowMs: number;
  returns: LedgerReturn[];
}

export interface LedgerSettleRequest {
  category: string;
  nowMs: number;
  kind: "debt" | "refund";
  /** Whole units, 0..MAX_SAFE_INTEGER (a response's actual cost less its reserve, or the reverse). */
  units: number;
  limits: LedgerLimit[];
}

export interface LedgerStandingRequest {
  category: string;
  nowMs: number;
  limits: LedgerLimit[];
}

export interface LedgerStats {
  /** RPC calls this instance of the object has served since it started. */
  calls: number;
  startedAtMs: number;
  /** States held (limits not yet earned back, or not yet cleaned up). */
  states: number;
}

/** What one global limit of a ledger did in the minutes asked about: the accuracy report's figures. */
export interface LedgerLimitAccuracy {
  category: string;
  limit: LedgerLimit;
  /** Units granted in leases, and the unspent units isolates gave back (credited or not). */
  grantedUnits: number;
  returnedUnits: number;
  asks: number;
  refusedAsks: number;
  /** The first and last minute (Unix ms, whole minutes of the calls' clocks) with a call. */
  firstMinuteMs: number;
  lastMinuteMs: number;
  /** The minute whose granted less returned units were the most, and that figure. */
  busiestMinuteMs: number;
  busiestMinuteUnits: number;
}

export interface LedgerAccuracy {
  limits: LedgerLimitAccuracy[];
  /** RPC calls in the minutes asked about, the first minute with one (null: none), and the most in one second. */
  calls: number;
  firstCallMinuteMs: number | null;
  peakCallsPerS: number;
}

export interface LedgerAccuracyRequest {
  nowMs: number;
  /** Minutes that start at or after this. */
  sinceMs: number;
}

/** A ledger telling the directory it had calls lately. */
export interface LedgerRegistration {
  /** The ledger's Durable Object id (hex): the directory never learns more of the subject than the label. */
  ledgerId: string;
  label: string;
  nowMs: number;
  /** Calls the ledger served since it last registered: the directory lists the busiest first. */
  calls: number;
}

export interface LedgerListing {
  ledgers: { ledgerId: string; label: string; seenMs: number; calls: number }[];
  /** Ledgers seen since `sinceMs`, listed or not. */
  seen: number;
}

/** The wire form of a compiled global limit. */
export function ledgerLimitOf(limit: Limit): LedgerLimit {
  return { count: limit.count, window_s: limit.windowS, burst: limit.burst };
}

/** The key a limit's state is stored under: its figures, so a changed limit starts from fresh state, as in the isolate. */
export function limitKeyOf(limit: Limit): string {
  return `${limit.count}/${limit.windowMs}/${limit.burst}`;
}

const MAX_CATEGORY_CHARS = 64;
const MAX_ITEMS = 8;

function fail(field: string, rule: string): never {
  throw new TypeError(`ledger: ${field} ${rule}`);
}

function object(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) fail(field, "must be an object");
  return value as Record<string, unknown>;
}

function whole(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) fail(field, `must be a whole number in ${min}..${max}`);
  return value;
}

function list(value: unknown, field: string): unknown[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_ITEMS) fail(field, `must be a list of 1..${MAX_ITEMS}`);
  return value;
}

function category(value: unknown): string {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_CATEGORY_CHARS) fail("category", `must be a string of 1..${MAX_CATEGORY_CHARS} characters`);
  return value;
}

function timeMs(value: unknown, field = "nowMs"): number {
  return whole(value, field, 0, 2 ** 52);
}

/** Compiles a wire limit with the engine's rule (as a global limit). */
function ledgerLimit(value: unknown, field: string): Limit {
  const o = object(value, field);
  const spec = { count: o.count, window_s: o.window_s, burst: o.burst };
  const reason = limitError(spec);
  if (reason !== null) fail(field, `is not a valid limit: ${reason}`);
  return compileLimit(spec as { count: number; window_s: number; burst: number }, "global");
}

function distinct<T extends { limit: Limit }>(items: T[], field: string): T[] {
  const keys = new Set(items.map((item) => limitKeyOf(item.limit)));
  if (keys.size !== items.length) fail(field, "must not name one limit twice");
  return items;
}

export interface GrantInput {
  category: string;
  nowMs: number;
  items: { limit: Limit; need: number; want: number; returning: number; returningGrantedAtMs: number }[];
  label: string | null;
}

const MAX_LABEL_CHARS = 160;
const MAX_LISTED_LEDGERS = 500;

/** A label as the directory keeps it: never an address (`ip:` is refused; an address subject is labelled `ip`). */
function label(value: unknown): string {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_LABEL_CHARS) fail("label", `must be a string of 1..${MAX_LABEL_CHARS} characters`);
  if (value.startsWith("ip:")) fail("label", "must not name an address");
  return value;
}

export function grantInput(req: unknown): GrantInput {
  const o = object(req, "request");
  const items = list(o.items, "items").map((raw, i) => {
    const item = object(raw, `items[${i}]`);
    const limit = ledgerLimit(item.limit, `items[${i}].limit`);
    return {
      limit,
      need: whole(item.need, `items[${i}].need`, 1, MAX_COST),
      want: whole(item.want, `items[${i}].want`, 0, Number.MAX_SAFE_INTEGER),
      returning: whole(item.returning, `items[${i}].returning`, 0, limit.burst + MAX_COST),
      returningGrantedAtMs: timeMs(item.returningGrantedAtMs, `items[${i}].returningGrantedAtMs`),
    };
  });
  return { category: category(o.category), nowMs: timeMs(o.nowMs), items: distinct(items, "items"), label: o.label === undefined ? null : label(o.label) };
}

export function accuracyInput(req: unknown): LedgerAccuracyRequest {
  const o = object(req, "request");
  return { nowMs: timeMs(o.nowMs), sinceMs: timeMs(o.sinceMs, "sinceMs") };
}

export function registrationInput(req: unknown): LedgerRegistration {
  const o = object(req, "request");
  if (typeof o.ledgerId !== "string" || !/^[0-9a-f]{64}$/.test(o.ledgerId)) fail("ledgerId", "must be a Durable Object id (64 hex digits)");
  return { ledgerId: o.ledgerId, label: label(o.label), nowMs: timeMs(o.nowMs), calls: whole(o.calls, "calls", 0, Number.MAX_SAFE_INTEGER) };
}

export function listingInput(req: unknown): { sinceMs: number; limit: number } {
  const o = object(req, "request");
  return { sinceMs: timeMs(o.sinceMs, "sinceMs"), limit: whole(o.limit, "limit", 1, MAX_LISTED_LEDGERS) };
}

/** A limit key (limitKeyOf) back as the wire limit. */
export function ledgerLimitOfKey(key: string): LedgerLimit {
  const [count, windowMs, burst] = key.split("/").map(Number);
  return { count: count!, window_s: windowMs! / 1000, burst: burst! };
}

export function giveBackInput(req: unknown): { category: string; nowMs: number; returns: { limit: Limit; units: number; grantedAtMs: number }[] } {
  const o = object(req, "request");
  const returns = list(o.returns, "returns").map((raw, i) => {
    const item = object(raw, `returns[${i}]`);
    const limit = ledgerLimit(item.limit, `returns[${i}].limit`);
    return { limit, units: whole(item.units, `returns[${i}].units`, 0, limit.burst + MAX_COST), grantedAtMs: timeMs(item.grantedAtMs, `returns[${i}].grantedAtMs`) };
  });
  return { category: category(o.category), nowMs: timeMs(o.nowMs), returns: distinct(returns, "returns") };
}

export function settleInput(req: unknown): { category: string; nowMs: number; kind: "debt" | "refund"; units: number; limits: Limit[] } {
  const o = object(req, "request");
  if (o.kind !== "debt" && o.kind !== "refund") fail("kind", 'must be "debt" or "refund"');
  const limits = list(o.limits, "limits").map((raw, i) => ({ limit: ledgerLimit(raw, `limits[${i}]`) }));
  return { category: category(o.category), nowMs: timeMs(o.nowMs), kind: o.kind, units: whole(o.units, "units", 0, Number.MAX_SAFE_INTEGER), limits: distinct(limits, "limits").map((l) => l.limit) };
}

export function standingInput(req: unknown): { category: string; nowMs: number; limits: Limit[] } {
  const o = object(req, "request");
  const limits = list(o.limits, "limits").map((raw, i) => ({ limit: ledgerLimit(raw, `limits[${i}]`) }));
  return { category: category(o.category), nowMs: timeMs(o.nowMs), limits: distinct(limits, "limits").map((l) => l.limit) };
}
