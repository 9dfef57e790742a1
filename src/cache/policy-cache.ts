// The operator's caller policy — overrides (and blocks) — held as one
// snapshot of the whole table per runtime, reloaded once per cache_ttl_s.
// Looking up a caller that has no override is then a Map miss, so a flood of
// anonymous requests from fresh addresses costs no D1 query per address.
// When D1 fails and no usable snapshot is held, callers get "no override"
// (the configured defaults apply) and D1 is not asked again for a moment.
import type { Config } from "../config";
import type { KeyLimits } from "../engine/resolve-limits";
import type { Db } from "../db/client";
import { loadAllOverrides } from "../db/overrides";
import { log } from "../log/logger";
import { ReadThroughCache } from "./read-through-cache";
import { compileStoredKeyLimits } from "./stored-limits";

/** The policy in force, compiled once per load. */
export class PolicySnapshot {
  readonly #overrides: ReadonlyMap<string, KeyLimits>;

  constructor(overrides: ReadonlyMap<string, KeyLimits>) {
    this.#overrides = overrides;
  }

  /** The override for a caller key (`key:<id>`, `ip:<address or /64>`), or null. */
  overrideFor(callerKey: string): KeyLimits | null {
    return this.#overrides.get(callerKey) ?? null;
  }

  get overrideCount(): number {
    return this.#overrides.size;
  }
}

export const EMPTY_POLICY = new PolicySnapshot(new Map());

const SNAPSHOT = "all";
/** After a failed load with nothing to serve, how long the empty answer stands before D1 is asked again. */
const FAILURE_BACKOFF_MS = 1000;

async function loadSnapshot(db: Db): Promise<PolicySnapshot> {
  const rows = await loadAllOverrides(db);
  const overrides = new Map<string, KeyLimits>();
  for (const row of rows) {
    const limits = compileStoredKeyLimits(row.limits, "caller_overrides.limits of an override");
    if (limits !== null) overrides.set(row.callerKey, limits);
  }
  return new PolicySnapshot(overrides);
}

export class PolicyCache {
  readonly #cache: ReadThroughCache<string, PolicySnapshot>;
  readonly #backoffMs: number;
  #failedUntilMs = 0;

  constructor(config: Config) {
    this.#backoffMs = Math.min(FAILURE_BACKOFF_MS, config.cacheTtlMs);
    this.#cache = new ReadThroughCache<string, PolicySnapshot>({
      maxEntries: 1,
      maxNegativeEntries: 0,
      ttlMs: config.cacheTtlMs,
      staleIfErrorMs: config.staleIfErrorMs,
      isNegative: () => false,
    });
  }

  /** The snapshot when it is fresh; never queries. */
  peek(nowMs: number): PolicySnapshot | undefined {
    const fresh = this.#cache.peek(SNAPSHOT, nowMs);
    if (fresh !== undefined) return fresh;
    return nowMs < this.#failedUntilMs ? EMPTY_POLICY : undefined;
  }

  /**
   * The policy in force. Never throws: with D1 down and no usable snapshot the
   * answer is empty, so callers fall back to the configured defaults. `db` is
   * only called when the snapshot is due for a reload.
   */
  async load(db: () => Db, nowMs: number, keepAlive?: (work: Promise<unknown>) => void): Promise<PolicySnapshot> {
    const peeked = this.peek(nowMs);
    if (peeked !== undefined) return peeked;
    try {
      return await this.#cache.get(SNAPSHOT, nowMs, () => loadSnapshot(db()), keepAlive);
    } catch {
      this.#failedUntilMs = nowMs + this.#backoffMs;
      log.warn("policy_unavailable", undefined, nowMs);
      return EMPTY_POLICY;
    }
  }

  /** Forget the snapshot (an admin wrote an override or block): the next request reloads it. */
  clear(): void {
    this.#cache.clearAll();
    this.#failedUntilMs = 0;
  }
}
