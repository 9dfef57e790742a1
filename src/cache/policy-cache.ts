// The operator's caller policy — overrides and blocks — held as one snapshot
// of both tables per runtime, reloaded once per cache_ttl_s (docs/design.md:
// blocks read through the same snapshot cache as overrides). Looking up a
// caller that has no override or block is then a Map miss, so a flood of
// anonymous requests from fresh addresses costs no D1 query per address. An
// override or block that expires while the snapshot is held stops applying
// at its expires_at.
//
// Blocks must not lapse because D1 does: a failed reload keeps serving the
// last snapshot, with no time limit (stale_if_error_s does not apply here).
// An isolate that has never loaded one follows `policy_on_error`: "closed"
// answers UNAVAILABLE_POLICY (the block step refuses 503 policy_unavailable),
// "open" answers an empty policy (the configured defaults, no blocks). Either
// way D1 is not asked again for a moment, and /_tollgate/health says which.
//
// A penalty (a limit's penalty box, src/limits/penalty.ts) applies in the
// isolate that imposed it at once, before its row reaches D1: it is held
// here beside the snapshot until a snapshot loaded after the row landed
// carries it (or it ends). Other isolates see it through their next load.
import type { Config } from "../config";
import type { LimitScope } from "../engine/limit";
import type { KeyLimits } from "../engine/resolve-limits";
import { activeBlocksQuery } from "../db/blocks";
import type { Db } from "../db/client";
import { activeOverridesQuery } from "../db/overrides";
import type { ParsedAddress } from "../engine/cidr";
import { compileNetBlocks, type NetBlockMatcher } from "../engine/net-blocks";
import { log } from "../log/logger";
import { ReadThroughCache } from "./read-through-cache";
import { compileStoredKeyLimits } from "./stored-limits";

interface Timed<T> {
  readonly value: T;
  /** Unix ms at which it stops applying; Infinity for never. */
  readonly untilMs: number;
}

/** A block that applies: its id and target, for explain. */
export interface ActiveBlock {
  /** 0 for a penalty this isolate imposed whose row has not landed yet. */
  readonly id: number;
  readonly target: string;
  readonly expiresAtMs: number | null;
  /** Marks and counts what it would refuse, refusing nothing. */
  readonly shadow: boolean;
  /** `penalty:<policy>` for a penalty the gateway imposed; null for an operator's block. */
  readonly penalty: string | null;
}

/** The name a block goes by in Tollgate-Shadow, traffic and the log: its cause for a penalty, else `block-<id>`. */
export function blockPolicyName(block: ActiveBlock): string {
  return block.penalty ?? `block-${block.id}`;
}

/** A penalty imposed by this isolate, held until a snapshot carries its row. */
interface LocalPenalty {
  block: ActiveBlock;
  readonly untilMs: number;
  /** The load count when its row landed; null while the write is in flight (or failed). */
  landedAt: number | null;
}

/** Penalties this isolate imposed lately, by target; bounded (the oldest go first). */
const MAX_LOCAL_PENALTIES = 10_000;

/** The policy in force, compiled once per load. */
export class PolicySnapshot {
  readonly #overrides: ReadonlyMap<string, Timed<KeyLimits>>;
  readonly #blocks: ReadonlyMap<string, Timed<ActiveBlock>>;
  /** Network blocks by id, and the matcher that finds the most specific one holding an address. */
  readonly #netBlocks: ReadonlyMap<string, Timed<ActiveBlock>>;
  readonly #netMatcher: NetBlockMatcher | null;
  /** The penalties this isolate imposed and no snapshot carries yet (the cache's, shared by its snapshots). */
  readonly #local: ReadonlyMap<string, LocalPenalty>;
  /** False only for UNAVAILABLE_POLICY: no policy could be loaded and `policy_on_error` is "closed". */
  readonly available: boolean;

  constructor(overrides: ReadonlyMap<string, Timed<KeyLimits>>, blocks: ReadonlyMap<string, Timed<ActiveBlock>>, netBlocks: ReadonlyMap<string, Timed<ActiveBlock>>, available = true, local: ReadonlyMap<string, LocalPenalty> = NO_LOCAL) {
    this.available = available;
    this.#overrides = overrides;
    this.#blocks = blocks;
    this.#netBlocks = netBlocks;
    this.#local = local;
    // Compiled once per snapshot load (every cache_ttl_s), never per request: stays fast with 10,000 blocks.
    this.#netMatcher = netBlocks.size === 0 ? null : compileNetBlocks([...netBlocks.values()].map((b) => ({ id: String(b.value.id), cidr: b.value.target.slice(4) })));
  }

  /** The override for a caller key (`key:<id>`, `ip:<address or /64>`, `jwt:<hex>`) in force at nowMs, or null. */
  overrideFor(callerKey: string, nowMs: number): KeyLimits | null {
    const entry = this.#overrides.get(callerKey);
    return entry !== undefined && nowMs < entry.untilMs ? entry.value : null;
  }

  /** The block of a caller key or tenant (`tenant:<slug>`) in force at nowMs, or null (a penalty this isolate imposed included). */
  blockOf(target: string, nowMs: number): ActiveBlock | null {
    const entry = this.#blocks.get(target);
    if (entry !== undefined && nowMs < entry.untilMs) return entry.value;
    if (this.#local.size === 0) return null;
    const local = this.#local.get(target);
    return local !== undefined && nowMs < local.untilMs ? local.block : null;
  }

  /** A network block (`net:<CIDR>`) holding the address at nowMs, or null. */
  netBlockOf(addr: ParsedAddress, nowMs: number): ActiveBlock | null {
    const id = this.#netMatcher?.match(addr) ?? null;
    if (id === null) return null;
    // The most specific network holding the address; if that one has expired meanwhile, the snapshot's reload (within cache_ttl_s) brings the next.
    const entry = this.#netBlocks.get(id);
    return entry !== undefined && nowMs < entry.untilMs ? entry.value : null;
  }

  get hasBlocks(): boolean {
    return this.#blocks.size > 0 || this.#netBlocks.size > 0 || this.#local.size > 0;
  }
}

const NO_LOCAL: ReadonlyMap<string, LocalPenalty> = new Map();

export const EMPTY_POLICY = new PolicySnapshot(new Map(), new Map(), new Map());
/** What an isolate that never loaded the policy gets under `policy_on_error: "closed"`: no overrides or blocks, and `available` false. */
export const UNAVAILABLE_POLICY = new PolicySnapshot(new Map(), new Map(), new Map(), false);

/**
 * Where the isolate's policy stands, for health: `loaded` (the snapshot is
 * current), `stale` (the last reload failed; the last snapshot is served),
 * `not_loaded` (nothing asked for it yet), `failing_closed` / `failing_open`
 * (never loaded, and the last load failed: refusing, or forwarding without it).
 */
export type PolicyState = "loaded" | "stale" | "not_loaded" | "failing_closed" | "failing_open";

export interface PolicyHealth {
  readonly state: PolicyState;
  readonly on_error: "closed" | "open";
  /** When the snapshot served was loaded (ISO 8601), if one was. */
  readonly loaded_at?: string;
}

const SNAPSHOT = "all";
/** After a failed load with nothing to serve, how long the empty answer stands before D1 is asked again. */
const FAILURE_BACKOFF_MS = 1000;

async function loadSnapshot(db: Db, nowMs: number, defaultScope: LimitScope, local: ReadonlyMap<string, LocalPenalty>): Promise<PolicySnapshot> {
  // One D1 round trip for both tables.
  const [overrideRows, blockRows] = await db.batch([activeOverridesQuery(db, nowMs), activeBlocksQuery(db, nowMs)]);
  const overrides = new Map<string, Timed<KeyLimits>>();
  for (const row of overrideRows) {
    const limits = compileStoredKeyLimits(row.limits, "caller_overrides.limits of an override", defaultScope);
    if (limits !== null) overrides.set(row.callerKey, { value: limits, untilMs: row.expiresAt ?? Infinity });
  }
  const blocks = new Map<string, Timed<ActiveBlock>>();
  const netBlocks = new Map<string, Timed<ActiveBlock>>();
  for (const row of blockRows) {
    const block: ActiveBlock = { id: row.id, target: row.target, expiresAtMs: row.expiresAt, shadow: row.shadow, penalty: row.source === "penalty" ? row.reason : null };
    const timed = { value: block, untilMs: row.expiresAt ?? Infinity };
    if (row.target.startsWith("net:")) netBlocks.set(String(row.id), timed);
    else blocks.set(row.target, timed);
  }
  return new PolicySnapshot(overrides, blocks, netBlocks, true, local);
}

export class PolicyCache {
  readonly #cache: ReadThroughCache<string, PolicySnapshot>;
  readonly #backoffMs: number;
  readonly #defaultScope: LimitScope;
  readonly #onError: "closed" | "open";
  /** The last snapshot loaded, kept through D1 failures and admin writes (which only make it due for reload). */
  #last: { snapshot: PolicySnapshot; loadedAtMs: number } | null = null;
  /** Whether the last load attempt failed. */
  #failing = false;
  #failedUntilMs = 0;
  /** Penalties imposed here that no snapshot carries yet (see LocalPenalty). */
  readonly #local = new Map<string, LocalPenalty>();
  /** Loads started, for telling whether a load began after a penalty's row landed. */
  #loads = 0;
  /** What a failed first load answers, with this isolate's penalties. */
  readonly #empty: PolicySnapshot;
  readonly #unavailable: PolicySnapshot;

  constructor(config: Config) {
    this.#defaultScope = config.defaultScope;
    this.#onError = config.policyOnError;
    this.#backoffMs = Math.min(FAILURE_BACKOFF_MS, config.cacheTtlMs);
    this.#empty = new PolicySnapshot(new Map(), new Map(), new Map(), true, this.#local);
    this.#unavailable = new PolicySnapshot(new Map(), new Map(), new Map(), false, this.#local);
    this.#cache = new ReadThroughCache<string, PolicySnapshot>({
      maxEntries: 1,
      maxNegativeEntries: 0,
      ttlMs: config.cacheTtlMs,
      // No time limit: a block must not lapse because D1 is down.
      staleIfErrorMs: Number.POSITIVE_INFINITY,
      isNegative: () => false,
    });
  }

  /** What a failed load with no fresh snapshot answers: the last snapshot, else what policy_on_error says. */
  #fallback(): PolicySnapshot {
    if (this.#last !== null) return this.#last.snapshot;
    return this.#onError === "closed" ? this.#unavailable : this.#empty;
  }

  /** The snapshot when it is fresh (or a failed load is backing off); never queries. */
  peek(nowMs: number): PolicySnapshot | undefined {
    const fresh = this.#cache.peek(SNAPSHOT, nowMs);
    if (fresh !== undefined) return fresh;
    return nowMs < this.#failedUntilMs ? this.#fallback() : undefined;
  }

  /**
   * The policy in force. Never throws: with D1 down it is the last snapshot
   * loaded, or, in an isolate that never loaded one, UNAVAILABLE_POLICY
   * ("closed") or an empty policy ("open"). `db` is only called when the
   * snapshot is due for a reload.
   */
  async load(db: () => Db, nowMs: number, keepAlive?: (work: Promise<unknown>) => void): Promise<PolicySnapshot> {
    const peeked = this.peek(nowMs);
    if (peeked !== undefined) return peeked;
    try {
      return await this.#cache.get(SNAPSHOT, nowMs, () => this.#load(db, nowMs), keepAlive);
    } catch {
      this.#failedUntilMs = nowMs + this.#backoffMs;
      return this.#fallback();
    }
  }

  async #load(db: () => Db, nowMs: number): Promise<PolicySnapshot> {
    const load = ++this.#loads;
    try {
      const snapshot = await loadSnapshot(db(), nowMs, this.#defaultScope, this.#local);
      this.#last = { snapshot, loadedAtMs: nowMs };
      this.#failing = false;
      // A penalty whose row landed before this load began is in the snapshot now (or was lifted): the snapshot has the last word.
      for (const [target, p] of this.#local) if ((p.landedAt !== null && p.landedAt < load) || p.untilMs <= nowMs) this.#local.delete(target);
      return snapshot;
    } catch (error) {
      this.#failing = true;
      log.warn("policy_unavailable", { serving: this.#last !== null ? "last_snapshot" : this.#onError === "closed" ? "refusals" : "no_policy" }, nowMs);
      throw error;
    }
  }

  /** Where the policy stands in this isolate (for /_tollgate/health). */
  health(): PolicyHealth {
    const last = this.#last;
    if (last === null) {
      const state: PolicyState = !this.#failing ? "not_loaded" : this.#onError === "closed" ? "failing_closed" : "failing_open";
      return { state, on_error: this.#onError };
    }
    return { state: this.#failing ? "stale" : "loaded", on_error: this.#onError, loaded_at: new Date(last.loadedAtMs).toISOString() };
  }

  /** Make the snapshot due for reload (an admin wrote an override or block): the next request reloads it. The last one is kept for D1 failures. */
  clear(): void {
    this.#cache.clearAll();
    this.#failedUntilMs = 0;
  }

  /**
   * Applies a penalty in this isolate at once (until `untilMs`), before its
   * row reaches D1; returns the handle to call `landed` or `dropped` with
   * once the write is done.
   */
  imposePenalty(block: Omit<ActiveBlock, "id">, untilMs: number): { landed(id: number): void; dropped(): void } {
    const entry: LocalPenalty = { block: Object.freeze({ ...block, id: 0 }), untilMs, landedAt: null };
    this.#local.delete(block.target);
    this.#local.set(block.target, entry);
    if (this.#local.size > MAX_LOCAL_PENALTIES) this.#local.delete(this.#local.keys().next().value!);
    return {
      landed: (id) => {
        entry.block = Object.freeze({ ...entry.block, id });
        entry.landedAt = this.#loads;
      },
      dropped: () => {
        if (this.#local.get(block.target) === entry) this.#local.delete(block.target);
      },
    };
  }

  /** Forgets a penalty of this isolate that an operator lifted (DELETE /blocks/{id}): the next load decides. */
  forgetPenalty(id: number): void {
    for (const [target, p] of this.#local) if (p.block.id === id) this.#local.delete(target);
  }
}
