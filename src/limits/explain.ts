// Which limits apply to a caller, from which source, and where it stands
// under each: what the admin API's explain answers and its
// reset forgets. The same resolution as the rate-limit step (chargesFor):
// one entry per (category, subject, limit) that applies. Not the hot path.
//
// A global limit stands where its ledger says: one call per
// (subject, category) reads it; units leased to isolates count as spent
// there. Reset also empties the ledger of every subject with a global limit,
// and drops this isolate's leases on it.
import type { Config } from "../config";
import { type LedgerNamespace, ledgerStandingOf, resetLedger } from "../durable/ledger-client";
import { forgetLimit, peekLimit } from "../engine/caller-state";
import type { Limit, LimitScope } from "../engine/limit";
import type { LimiterTable } from "../engine/limiter-table";
import { BUILT_IN_LIMITS, type LimitSource, resolveSourcedLimits, type SubjectKind } from "../engine/resolve-limits";
import { errorName, log } from "../log/logger";
import type { GlobalLeases } from "./global-leases";
import type { ChargedSubject } from "./charged-subjects";
import { REQUEST_CATEGORY } from "./rate-limit";

export interface ApplicableLimit {
  readonly category: string;
  readonly kind: SubjectKind;
  readonly subject: string;
  readonly source: LimitSource;
  readonly limit: Limit;
}

/** Categories that are not a caller's: the admin API's own and the auth-failure gate's. */
const NOT_CALLER_CATEGORIES: ReadonlySet<string> = new Set(["admin", "auth_failures"]);

function categoriesOf(config: Config, subjects: readonly ChargedSubject[]): string[] {
  const names = new Set<string>([REQUEST_CATEGORY]);
  for (const category of config.routes.categories) names.add(category);
  for (const category of Object.keys(config.defaults)) names.add(category);
  for (const category of Object.keys(BUILT_IN_LIMITS)) names.add(category);
  for (const { sources } of subjects) {
    for (const record of [sources.override, sources.key, sources.tenant]) {
      if (record != null) for (const category of Object.keys(record)) names.add(category);
    }
  }
  return [...names].filter((name) => !NOT_CALLER_CATEGORIES.has(name));
}

/** Every (category, subject, limit) that applies to these subjects, with its source. */
export function applicableLimits(config: Config, subjects: readonly ChargedSubject[]): ApplicableLimit[] {
  const out: ApplicableLimit[] = [];
  for (const category of categoriesOf(config, subjects)) {
    for (const { kind, subject, sources } of subjects) {
      // Each limit with its own source: a shadow override tried above the tenant's limits says "override".
      for (const { limit, source } of resolveSourcedLimits(category, kind, sources)) out.push({ category, kind, subject, source, limit });
    }
  }
  return out;
}

/** An explain entry, in the shape docs/design.md fixes. */
export interface ExplainedLimit {
  readonly category: string;
  readonly subject: SubjectKind;
  readonly source: LimitSource;
  readonly scope: LimitScope;
  /** `delay_max_ms` only when the limit holds requests rather than refusing them. */
  readonly limit: { readonly count: number; readonly window_s: number; readonly burst?: number; readonly delay_max_ms?: number; readonly penalty?: { readonly after: number; readonly within_s: number; readonly block_s: number } };
  /** Present (true) for a shadow limit: kept as if enforced, refusing nothing. */
  readonly shadow?: true;
  /** This isolate's standing, or the ledger's for a global limit; null when the ledger could not be read (then `ledger_error` is true). */
  readonly remaining: number | null;
  readonly reset_ms: number | null;
  readonly ledger_error?: true;
}

function specOf(limit: Limit): ExplainedLimit["limit"] {
  const spec = limit.burst === limit.count ? { count: limit.count, window_s: limit.windowS } : { count: limit.count, window_s: limit.windowS, burst: limit.burst };
  const held = limit.delayMaxMs > 0 ? { ...spec, delay_max_ms: limit.delayMaxMs } : spec;
  const p = limit.penalty;
  return p === null ? held : { ...held, penalty: { after: p.after, within_s: p.withinMs / 1000, block_s: p.blockMs / 1000 } };
}

/** The global limits among `limits`, by (subject, category). */
function globalGroups(limits: readonly ApplicableLimit[]): Map<string, { subject: string; category: string; limits: Limit[] }> {
  const groups = new Map<string, { subject: string; category: string; limits: Limit[] }>();
  for (const { subject, category, limit } of limits) {
    if (limit.scope !== "global") continue;
    const key = `${subject}\u0000${category}`;
    const group = groups.get(key);
    if (group === undefined) groups.set(key, { subject, category, limits: [limit] });
    else group.limits.push(limit);
  }
  return groups;
}

/**
 * Where the caller stands under each limit, charging nothing: this isolate's
 * table for an isolate limit, the subject's ledger for a global one (read
 * once per subject and category; a ledger that cannot be read leaves its
 * entries' figures null and says `ledger_error`).
 */
export async function explainLimits(table: LimiterTable, ledger: LedgerNamespace, limits: readonly ApplicableLimit[], nowMs: number): Promise<ExplainedLimit[]> {
  const standings = new Map<string, { remaining: number; resetMs: number } | null>();
  await Promise.all(
    [...globalGroups(limits)].map(async ([key, group]) => {
      try {
        const read = await ledgerStandingOf(ledger, group.subject, group.category, group.limits, nowMs);
        group.limits.forEach((limit, i) => standings.set(`${key}\u0000${i}`, read[i] ?? null));
      } catch (err) {
        log.warn("ledger_unavailable", { error: errorName(err), during: "explain" });
        group.limits.forEach((_, i) => standings.set(`${key}\u0000${i}`, null));
      }
    }),
  );
  const seen = new Map<string, number>();
  return limits.map(({ category, kind, subject, source, limit }) => {
    const entry = { category, subject: kind, source, scope: limit.scope, limit: specOf(limit), ...(limit.shadow ? { shadow: true as const } : {}) };
    if (limit.scope !== "global") {
      const standing = peekLimit(table, subject, category, limit, nowMs);
      return { ...entry, remaining: standing.remaining, reset_ms: standing.resetMs };
    }
    const key = `${subject}\u0000${category}`;
    const index = seen.get(key) ?? 0;
    seen.set(key, index + 1);
    const standing = standings.get(`${key}\u0000${index}`) ?? null;
    return standing === null ? { ...entry, remaining: null, reset_ms: null, ledger_error: true as const } : { ...entry, remaining: standing.remaining, reset_ms: standing.resetMs };
  });
}

export interface ResetOutcome {
  /** States this isolate's table held (global limits' local fallback states included). */
  readonly held: number;
  /** States the ledgers of the caller's global limits held, or null when one could not be reset. */
  readonly ledgerStates: number | null;
  /** Subjects whose ledger was reset (those with a global limit). */
  readonly ledgers: number;
}

/**
 * Forgets the caller's state under each limit: in this isolate's table, and
 * for global limits in the subject's ledger (every category) along with this
 * isolate's leases on it. Leases other isolates already hold stay spendable
 * until they expire (at most L).
 */
export async function resetLimits(table: LimiterTable, ledger: LedgerNamespace, leases: GlobalLeases, limits: readonly ApplicableLimit[], nowMs: number): Promise<ResetOutcome> {
  let held = 0;
  for (const { category, subject, limit } of limits) if (forgetLimit(table, subject, category, limit, nowMs)) held++;
  const subjects = new Set([...globalGroups(limits).values()].map((g) => g.subject));
  let ledgerStates: number | null = 0;
  for (const subject of subjects) {
    leases.forgetSubject(subject);
    try {
      const reset = await resetLedger(ledger, subject);
      if (ledgerStates !== null) ledgerStates += reset.states;
    } catch (err) {
      log.warn("ledger_unavailable", { error: errorName(err), during: "reset" });
      ledgerStates = null;
    }
  }
  return { held, ledgerStates, ledgers: subjects.size };
}
