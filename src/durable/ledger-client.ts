// The edge's side of the LimitLedger protocol: which object is
// called (one per subject, `idFromName(subject)`), with what, and what the
// answers mean. Leasing is driven by src/limits/global-leases.ts; explain and
// reset call ledgerStandingOf and resetLedger.
//
// askLedger and the background calls throw on I/O failure (the lease layer
// takes `global.on_error`'s course); none of them is retried: a grant whose
// answer was lost was still charged, and charging it twice only costs
// capacity, never the bound.
import type { Ask, AskReply, Returnable } from "../engine/lease-types";
import type { Limit } from "../engine/limit";
import { DIRECTORY_NAME } from "./ledger-accuracy";
import { type LedgerAccuracy, type LedgerFigures, type LedgerListing, ledgerLimitOf, limitKeyOf } from "./ledger-types";
import type { LimitLedger } from "./limit-ledger";

export type LedgerNamespace = DurableObjectNamespace<LimitLedger>;

function ledgerOf(ns: LedgerNamespace, subject: string): DurableObjectStub<LimitLedger> {
  return ns.get(ns.idFromName(subject));
}

/**
 * The name the accuracy report may show for a subject's ledger: the subject
 * itself, except an address (`ip:…`), which is only ever `ip`.
 */
export function ledgerLabelOf(subject: string): string {
  return subject.startsWith("ip:") ? "ip" : subject;
}

/** Sends an ask (lease-book.ts) to the subject's ledger: at the time it was made, returning what the slots' old leases held. */
export async function askLedger(ns: LedgerNamespace, ask: Ask): Promise<AskReply> {
  const reply = await ledgerOf(ns, ask.group.subject).grant({
    category: ask.group.category,
    nowMs: ask.askedAtMs,
    label: ledgerLabelOf(ask.group.subject),
    items: ask.items.map((item) => ({
      limit: ledgerLimitOf(item.limit),
      need: item.need,
      want: item.want,
      returning: item.returning,
      returningGrantedAtMs: item.returningGrantedAtMs,
    })),
  });
  if (reply.status === "granted") return { status: "granted", grants: reply.grants.map((g) => ({ units: g.units, remaining: g.remaining, resetMs: g.resetMs })) };
  return { status: "denied", index: reply.index, retryAfterMs: reply.retryAfterMs, remaining: reply.remaining, resetMs: reply.resetMs };
}

/** Gives unspent units of dead or dropped leases back, one call per (subject, category). */
export async function giveBackToLedger(ns: LedgerNamespace, returns: readonly Returnable[], nowMs: number): Promise<void> {
  const byGroup = new Map<string, Returnable[]>();
  for (const r of returns) {
    const key = `${r.subject}\u0000${r.category}`;
    const list = byGroup.get(key);
    if (list === undefined) byGroup.set(key, [r]);
    // The ledger takes one return per limit and call; a second one (rare) is dropped: a loss of credit, never of the bound.
    else if (!list.some((o) => limitKeyOf(o.limit) === limitKeyOf(r.limit))) list.push(r);
  }
  await Promise.all(
    [...byGroup.values()].map((list) =>
      ledgerOf(ns, list[0]!.subject).giveBack({
        category: list[0]!.category,
        nowMs,
        returns: list.map((r) => ({ limit: ledgerLimitOf(r.limit), units: r.units, grantedAtMs: r.grantedAtMs })),
      }),
    ),
  );
}

/** A response-priced settlement of `units` on the subject's global `limits` in `category`. */
export async function settleOnLedger(ns: LedgerNamespace, subject: string, category: string, limits: readonly Limit[], kind: "debt" | "refund", units: number, nowMs: number): Promise<LedgerFigures[]> {
  return ledgerOf(ns, subject).settle({ category, nowMs, kind, units, limits: limits.map(ledgerLimitOf) });
}

/** One global limit as the ledger stands: what explain shows for it. */
export interface LedgerStanding {
  readonly limit: Limit;
  /** Whole spends of cost 1 the ledger would still grant now (leases already out are spent in its eyes). */
  readonly remaining: number;
  /** Whole ms until the ledger's state is earned back. */
  readonly resetMs: number;
}

/**
 * The ledger's figures for `subject`'s global `limits` in `category` at
 * `nowMs`, charging nothing. Throws when the ledger cannot be reached (explain
 * then says so). Limits of isolate scope are ignored.
 * @example await ledgerStandingOf(env.LIMIT_LEDGER, "key:<digest>", "request", limits, Date.now())
 */
export async function ledgerStandingOf(ns: LedgerNamespace, subject: string, category: string, limits: readonly Limit[], nowMs: number): Promise<LedgerStanding[]> {
  const global = limits.filter((l) => l.scope === "global");
  if (global.length === 0) return [];
  const figures = await ledgerOf(ns, subject).standing({ category, nowMs: Math.floor(nowMs), limits: global.map(ledgerLimitOf) });
  return global.map((limit, i) => ({ limit, remaining: figures[i]!.remaining, resetMs: figures[i]!.resetMs }));
}

/**
 * Forgets every global limit state of `subject` in its ledger (docs/design.md's
 * reset). Returns how many states it held. Throws when the ledger cannot be
 * reached. Leases already out in isolates stay spendable until they expire
 * (at most L); the isolate that calls this should also drop its own
 * (GlobalLeases.forgetSubject).
 * @example await resetLedger(env.LIMIT_LEDGER, "key:<digest>")
 */
export async function resetLedger(ns: LedgerNamespace, subject: string): Promise<{ states: number }> {
  return ledgerOf(ns, subject).reset();
}

/**
 * The ledgers that had calls since `sinceMs`, busiest first (at most
 * `limit`), from the directory every ledger with calls registers with.
 * Throws when the directory cannot be reached.
 */
export async function listLedgers(ns: LedgerNamespace, sinceMs: number, limit: number): Promise<LedgerListing> {
  return ns.get(ns.idFromName(DIRECTORY_NAME)).ledgers({ sinceMs: Math.floor(sinceMs), limit });
}

/** What the ledger with Durable Object id `ledgerId` (from listLedgers) did in the minutes since `sinceMs`. Throws when it cannot be reached. */
export async function ledgerAccuracyOf(ns: LedgerNamespace, ledgerId: string, sinceMs: number, nowMs: number): Promise<LedgerAccuracy> {
  return ns.get(ns.idFromString(ledgerId)).accuracy({ nowMs: Math.floor(nowMs), sinceMs: Math.floor(sinceMs) });
}
