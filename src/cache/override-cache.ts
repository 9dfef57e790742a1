// Caller overrides, held as one snapshot of the whole caller_overrides table
// (a Map from caller key to compiled limits), reloaded once per TTL. Looking
// up an address that has no override is then a Map miss, so a flood of
// anonymous requests from fresh addresses costs no D1 query per address.
// When D1 fails and no usable snapshot is held, callers get "no override"
// (the configured defaults apply) and D1 is not asked again for a moment.
import type { Config } from "../config";
import type { KeyLimits } from "../engine/resolve-limits";
import type { Db } from "../db/client";
import { loadAllOverrides } from "../db/overrides";
import { ReadThroughCache } from "./read-through-cache";
import { compileStoredKeyLimits } from "./stored-limits";

export type OverrideSnapshot = ReadonlyMap<string, KeyLimits>;

const SNAPSHOT = "all";
const EMPTY: OverrideSnapshot = new Map();
/** After a failed load with nothing to serve, how long the empty answer stands before D1 is asked again. */
const FAILURE_BACKOFF_MS = 1000;

let cache: ReadThroughCache<string, OverrideSnapshot> | null = null;
let cacheSettings = "";
let failedUntilMs = 0;

function overrideCache(config: Config): ReadThroughCache<string, OverrideSnapshot> {
  const settings = `${config.cacheTtlMs}/${config.staleIfErrorMs}`;
  if (cache === null || settings !== cacheSettings) {
    cache = new ReadThroughCache<string, OverrideSnapshot>({
      maxEntries: 1,
      maxNegativeEntries: 0,
      ttlMs: config.cacheTtlMs,
      staleIfErrorMs: config.staleIfErrorMs,
      isNegative: () => false,
    });
    cacheSettings = settings;
  }
  return cache;
}

async function loadSnapshot(db: Db): Promise<OverrideSnapshot> {
  const rows = await loadAllOverrides(db);
  const snapshot = new Map<string, KeyLimits>();
  for (const row of rows) {
    const limits = compileStoredKeyLimits(row.limits, `caller_overrides.limits of an override`);
    if (limits !== null) snapshot.set(row.callerKey, limits);
  }
  return snapshot;
}

/** The snapshot when it is fresh; never queries. */
export function peekOverrides(config: Config, nowMs: number): OverrideSnapshot | undefined {
  const fresh = overrideCache(config).peek(SNAPSHOT, nowMs);
  if (fresh !== undefined) return fresh;
  return nowMs < failedUntilMs ? EMPTY : undefined;
}

/**
 * Every caller override, compiled. Never throws: with D1 down and no usable
 * snapshot the answer is empty, so callers fall back to the configured
 * defaults. `db` is only called when the snapshot is due for a reload.
 */
export async function loadOverrides(db: () => Db, config: Config, nowMs: number): Promise<OverrideSnapshot> {
  const peeked = peekOverrides(config, nowMs);
  if (peeked !== undefined) return peeked;
  try {
    return await overrideCache(config).get(SNAPSHOT, nowMs, () => loadSnapshot(db()));
  } catch {
    failedUntilMs = nowMs + Math.min(FAILURE_BACKOFF_MS, config.cacheTtlMs);
    console.warn(JSON.stringify({ level: "warn", at_unix_ms: nowMs, event: "overrides_unavailable" }));
    return EMPTY;
  }
}

/** Forget the snapshot (an admin set or removed an override): the next request reloads it. */
export function clearOverrideCache(): void {
  cache?.clearAll();
  failedUntilMs = 0;
}
