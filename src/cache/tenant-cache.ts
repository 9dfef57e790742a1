// The runtime's cache of tenants by slug, for callers whose tenant is named
// by a token's claim (JWT callers, docs/design.md) rather than joined with a key
// record: limits and quota compiled once per load; an unknown slug cached as
// a negative entry (so a flood of tokens naming made-up tenants costs one
// query per slug per TTL, bounded by the negative share).
import type { Config } from "../config";
import type { TenantInfo } from "../context";
import type { Db } from "../db/client";
import { findTenantForGateway } from "../db/tenants";
import type { LimitScope } from "../engine/limit";
import { ReadThroughCache } from "./read-through-cache";
import { compileStoredTenant } from "./stored-limits";

const NEGATIVE_SHARE = 0.25;

async function loadTenant(db: Db, slug: string, defaultScope: LimitScope): Promise<TenantInfo | null> {
  const row = await findTenantForGateway(db, slug);
  return row === null ? null : compileStoredTenant(row, defaultScope);
}

export class TenantCache {
  readonly #cache: ReadThroughCache<string, TenantInfo | null>;
  readonly #defaultScope: LimitScope;

  constructor(config: Config) {
    this.#defaultScope = config.defaultScope;
    this.#cache = new ReadThroughCache<string, TenantInfo | null>({
      maxEntries: config.cacheMaxEntries,
      maxNegativeEntries: Math.max(1, Math.floor(config.cacheMaxEntries * NEGATIVE_SHARE)),
      ttlMs: config.cacheTtlMs,
      staleIfErrorMs: config.staleIfErrorMs,
    });
  }

  peek(slug: string, nowMs: number): TenantInfo | null | undefined {
    return this.#cache.peek(slug, nowMs);
  }

  /** The tenant, or null when there is none. Throws when D1 fails with nothing usable held. */
  lookup(db: () => Db, slug: string, nowMs: number, keepAlive?: (work: Promise<unknown>) => void): Promise<TenantInfo | null> {
    return this.#cache.get(slug, nowMs, () => loadTenant(db(), slug, this.#defaultScope), keepAlive);
  }

  /** Forget a tenant (an admin wrote or deleted it). */
  clear(slug: string): void {
    this.#cache.clear(slug);
  }
}
