// Which limits apply to a caller, from which source, and where it stands
// under each (DESIGN §15): what the admin API's explain answers and its
// reset forgets. The same resolution as the rate-limit step (chargesFor):
// one entry per (category, subject, limit) that applies. Not the hot path.
import type { Config } from "../config";
import { forgetLimit, peekLimit } from "../engine/caller-state";
import type { Limit } from "../engine/limit";
import type { LimiterTable } from "../engine/limiter-table";
import { BUILT_IN_LIMITS, type LimitSource, limitSourceOf, resolveLimits, type SubjectKind } from "../engine/resolve-limits";
import { type ChargedSubject, REQUEST_CATEGORY } from "./rate-limit";

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
      const source = limitSourceOf(category, kind, sources);
      if (source === null) continue;
      for (const limit of resolveLimits(category, kind, sources)) out.push({ category, kind, subject, source, limit });
    }
  }
  return out;
}

/** An explain entry, in the shape DESIGN §15 fixes. */
export interface ExplainedLimit {
  readonly category: string;
  readonly subject: SubjectKind;
  readonly source: LimitSource;
  readonly scope: "isolate";
  readonly limit: { readonly count: number; readonly window_s: number; readonly burst?: number };
  readonly remaining: number;
  readonly reset_ms: number;
}

/** Where the caller stands under each limit in this isolate's table, charging nothing. */
export function explainLimits(table: LimiterTable, limits: readonly ApplicableLimit[], nowMs: number): ExplainedLimit[] {
  return limits.map(({ category, kind, subject, source, limit }) => {
    const standing = peekLimit(table, subject, category, limit, nowMs);
    return {
      category,
      subject: kind,
      source,
      scope: "isolate",
      limit: limit.burst === limit.count ? { count: limit.count, window_s: limit.windowS } : { count: limit.count, window_s: limit.windowS, burst: limit.burst },
      remaining: standing.remaining,
      reset_ms: standing.resetMs,
    };
  });
}

/** Forgets the caller's state under each limit in this isolate's table; how many states were held. */
export function resetLimits(table: LimiterTable, limits: readonly ApplicableLimit[], nowMs: number): number {
  let held = 0;
  for (const { category, subject, limit } of limits) if (forgetLimit(table, subject, category, limit, nowMs)) held++;
  return held;
}
