// The penalty box: a limit with `penalty: {after, within_s, block_s}` blocks
// a caller it refuses `after` times within `within_s` seconds, for `block_s`
// seconds. The block is a row of the blocks table like an operator's (with
// `source` penalty and reason `penalty:<policy>`): listed by GET /blocks,
// explained, lifted by DELETE /blocks/{id}, audited with its cause. It
// applies at once in the isolate that imposed it (held beside its policy
// snapshot until the row lands, src/cache/policy-cache.ts) and in every
// other isolate from its next snapshot load, within cache_ttl_s.
//
// Bounded, so refusals cannot be turned into writes: at most one penalty
// per caller and policy per block_s in an isolate, and at most
// `penalty.max_per_minute` penalty writes per isolate and minute (the
// excess counted, and shown by /_tollgate/health). Refusals are counted in
// fixed memory: at most MAX_HELD_REFUSALS instants over all callers, the
// callers not seen longest forgotten first. The write goes through
// waitUntil and never holds the request; its audit event names the caller
// as the audit log does (an address only as its keyed digest).
import type { PolicyCache } from "../cache/policy-cache";
import { insertAuditEventWhere } from "../db/audit";
import { penaltyWritten, putPenaltyBlock, type PenaltyBlock } from "../db/blocks";
import { database } from "../db/client";
import type { Exchange } from "../exchange";
import type { Penalty } from "../engine/limit";
import { errorName, log } from "../log/logger";
import { keepAlive } from "../utils/wait-until";
import { callerSubject } from "./traffic";

/** Refusal instants held over all callers and policies: 64k numbers, about 0.5 MB. */
const MAX_HELD_REFUSALS = 65_536;
/** (caller, policy) pairs remembered as penalised within their block_s. */
const MAX_REMEMBERED_PENALTIES = 10_000;

/** One limit's penalty, as a request met it. */
export interface PenaltyCase {
  /** The caller to block: `ip:<address or /64>`, `key:<id>` or `jwt:<hex>`. */
  readonly target: string;
  /** The limit's policy name (`request-key-60s`): the block's reason is `penalty:<policy>`. */
  readonly policy: string;
  /** Tells two limits with one name apart (its figures' salt). */
  readonly limitSalt: number;
  readonly penalty: Penalty;
  /** The limit is a shadow one: its penalty is a shadow block. */
  readonly shadow: boolean;
}

/** What the isolate's penalty box has done, for /_tollgate/health. */
export interface PenaltyHealth {
  /** Penalties imposed by this isolate since it started. */
  readonly imposed: number;
  /** Penalties earned but not written because `penalty.max_per_minute` was reached. */
  readonly dropped: number;
  readonly max_per_minute: number;
}

export class PenaltyBox {
  readonly #maxPerMinute: number;
  /** `target \0 policy \0 salt` → refusal instants within the span, oldest first; the least recently refused first in the map. */
  readonly #refusals = new Map<string, number[]>();
  #held = 0;
  /** `target \0 policy \0 salt` → until when a penalty was imposed (no second one before). */
  readonly #imposed = new Map<string, number>();
  #minute = -1;
  #thisMinute = 0;
  #total = 0;
  #dropped = 0;

  constructor(maxPerMinute: number) {
    this.#maxPerMinute = maxPerMinute;
  }

  /**
   * Counts one refusal; true when it earns a penalty that may be written
   * now (the `after`-th within the span, the caller not penalised by this
   * limit within block_s, the minute's writes not used up).
   */
  earned(c: PenaltyCase, nowMs: number): boolean {
    const key = `${c.target}\u0000${c.policy}\u0000${c.limitSalt}`;
    const until = this.#imposed.get(key);
    if (until !== undefined) {
      if (nowMs < until) return false;
      this.#imposed.delete(key);
    }
    const { after, withinMs, blockMs } = c.penalty;
    let times = this.#refusals.get(key);
    if (times === undefined) times = [];
    else this.#refusals.delete(key);
    // Only the last `after` instants within the span matter.
    let drop = 0;
    while (drop < times.length && (times[drop]! <= nowMs - withinMs || times.length - drop >= after)) drop++;
    if (drop > 0) times.splice(0, drop);
    this.#held -= drop;
    times.push(nowMs);
    this.#held += 1;
    if (times.length < after) {
      this.#refusals.set(key, times);
      this.#trim();
      return false;
    }
    this.#held -= times.length;
    if (!this.#take(nowMs)) return false;
    this.#imposed.set(key, nowMs + blockMs);
    if (this.#imposed.size > MAX_REMEMBERED_PENALTIES) this.#imposed.delete(this.#imposed.keys().next().value!);
    return true;
  }

  /** Takes one of the minute's writes; false (and counted) when they are used up. */
  #take(nowMs: number): boolean {
    const minute = Math.floor(nowMs / 60_000);
    if (minute !== this.#minute) {
      this.#minute = minute;
      this.#thisMinute = 0;
    }
    if (this.#thisMinute >= this.#maxPerMinute) {
      this.#dropped += 1;
      return false;
    }
    this.#thisMinute += 1;
    this.#total += 1;
    return true;
  }

  #trim(): void {
    while (this.#held > MAX_HELD_REFUSALS) {
      const oldest = this.#refusals.keys().next().value!;
      this.#held -= this.#refusals.get(oldest)!.length;
      this.#refusals.delete(oldest);
    }
  }

  health(): PenaltyHealth {
    return { imposed: this.#total, dropped: this.#dropped, max_per_minute: this.#maxPerMinute };
  }
}

/**
 * Counts a refusal by a limit with a penalty and, when it earns one, blocks
 * the caller: at once in this isolate, and through a blocks row written in
 * the background (with its audit event in the same batch).
 */
export function notePenalty(x: Exchange, box: PenaltyBox, policy: PolicyCache, c: PenaltyCase, nowMs: number): void {
  if (c.target === "ip:unknown" || !box.earned(c, nowMs)) return;
  const reason = `penalty:${c.policy}`;
  const untilMs = nowMs + c.penalty.blockMs;
  const local = policy.imposePenalty({ target: c.target, expiresAtMs: untilMs, shadow: c.shadow, penalty: reason }, untilMs);
  const row: PenaltyBlock = { target: c.target, expiresAt: untilMs, reason, shadow: c.shadow, nowMs };
  const tenant = x.tenant?.slug ?? null;
  const write = async () => {
    try {
      const db = database(x.env.DB);
      const subject = await callerSubject(x.runtime, x.env, nowMs, c.target);
      const detail = {
        policy: c.policy,
        after: c.penalty.after,
        within_s: c.penalty.withinMs / 1000,
        block_s: c.penalty.blockMs / 1000,
        expires_at: new Date(untilMs).toISOString(),
        shadow: c.shadow,
      };
      const [written] = await db.batch([putPenaltyBlock(db, row), insertAuditEventWhere(db, { atMs: nowMs, kind: "block_penalty", actor: "gateway", tenant, subject, detail }, penaltyWritten(row))]);
      const id = written[0]?.id;
      // Not written: an operator's block holds the target, and it decides.
      if (id === undefined) local.dropped();
      else local.landed(id);
    } catch (err) {
      // The penalty still holds in this isolate until it ends.
      log.warn("penalty_write_failed", { error: errorName(err) }, nowMs);
    }
  };
  keepAlive(x.ctx, write());
}
