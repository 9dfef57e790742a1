// A discrete-event simulation of one caller's global limits:
// many isolates, each with the real LeaseBook, over one simulated ledger that
// decides with the real answerAsk / giveBack (the moves LimitLedger makes in
// its transaction), with random demand and random one-way latencies (some
// past L, so leases arrive dead; calls reach the ledger out of order).
//
// It records what the property test checks: every admitted spend (time,
// cost, per limit), every lease the ledger granted in the order it granted
// them (with the units later spent from it), and every ledger call, so a
// BigInt model can replay the ledger's own decisions.
import { LeaseBook } from "../../src/engine/lease-book";
import type { Ask, AskReply, LeaseGroup, LeaseRef, LeaseSlot, Returnable, Short } from "../../src/engine/lease-types";
import { answerAsk, EMPTY_STATE, type GcraState, giveBack } from "../../src/engine/ledger-gcra";
import type { Limit } from "../../src/engine/limit";
import { mulberry32 as prng } from "../prng";

export interface SimParams {
  limits: readonly Limit[];
  isolates: number;
  maxOvershoot: number;
  minLeaseMs: number;
  durationMs: number;
  /**
   * Per isolate, requests per ms: "waves" drift between 0 and this (about 0.6
   * of it on average) with bursts; "steady" is a Poisson stream at it;
   * "bursts" (the adversary of the bound) trickles one request per isolate
   * per cycle of about L, then floods every isolate at the same instant.
   */
  peakRatePerMs: number;
  demand: "waves" | "steady" | "bursts";
  /** Adversarial isolates: every ask wants the whole burst, so leases are as large as the ledger allows and sit until demand comes. */
  hoard?: boolean;
  /** The largest one-way latency to the ledger, ms. */
  maxLatencyMs: number;
  maxCost: number;
  seed: number;
}

export interface Spend {
  atMs: number;
  cost: number;
}

/** One grant, in the order the ledger made it. */
export interface GrantRecord {
  limitIndex: number;
  askedAtMs: number;
  units: number;
  /** Units the isolate spent from this lease (filled in as it runs). */
  spent: number;
}

/** One ledger call as the ledger processed it, for the replay. */
export type LedgerCall =
  | { kind: "ask"; nowMs: number; items: { limitIndex: number; need: number; want: number; returning: number; returningGrantedAtMs: number }[]; reply: AskReply }
  | { kind: "giveBack"; nowMs: number; returns: { limitIndex: number; units: number; grantedAtMs: number }[] };

export interface SimResult {
  admitted: Spend[][];
  grants: GrantRecord[];
  calls: LedgerCall[];
  requests: number;
  admittedRequests: number;
  /** Requests decided from a live lease, with no ledger call. */
  fromLease: number;
  leaseMs: number[];
}

interface Request {
  isolate: number;
  refs: LeaseRef[];
  rounds: number;
}

interface Isolate {
  book: LeaseBook;
  group: LeaseGroup;
  flight: { waiters: Request[] } | null;
  /** serial of a slot's lease → the grant it came from. */
  leaseOf: Map<LeaseSlot, Map<number, GrantRecord>>;
}

type Event =
  | { kind: "arrival"; isolate: number; cost: number }
  | { kind: "ask"; isolate: number; ask: Ask }
  | { kind: "reply"; isolate: number; ask: Ask; reply: AskReply; records: (GrantRecord | null)[] }
  | { kind: "giveBack"; returns: Returnable[]; nowMs: number };

const SUBJECT = "key:sim";
const CATEGORY = "request";
const MAX_ROUNDS = 4;

export function simulate(p: SimParams): SimResult {
  const rnd = prng(p.seed);
  // A binary heap on (time, order of scheduling).
  const queue: { atMs: number; seq: number; event: Event }[] = [];
  let seq = 0;
  const before = (a: number, b: number): boolean => queue[a]!.atMs < queue[b]!.atMs || (queue[a]!.atMs === queue[b]!.atMs && queue[a]!.seq < queue[b]!.seq);
  const swap = (a: number, b: number): void => {
    const x = queue[a]!;
    queue[a] = queue[b]!;
    queue[b] = x;
  };
  const push = (atMs: number, event: Event): void => {
    queue.push({ atMs, seq: seq++, event });
    for (let k = queue.length - 1; k > 0 && before(k, (k - 1) >> 1); k = (k - 1) >> 1) swap(k, (k - 1) >> 1);
  };
  const pop = (): { atMs: number; event: Event } => {
    const top = queue[0]!;
    const last = queue.pop()!;
    if (queue.length > 0) {
      queue[0] = last;
      for (let k = 0; ; ) {
        const l = 2 * k + 1;
        const r = l + 1;
        let m = k;
        if (l < queue.length && before(l, m)) m = l;
        if (r < queue.length && before(r, m)) m = r;
        if (m === k) break;
        swap(k, m);
        k = m;
      }
    }
    return top;
  };
  const latency = (): number => Math.floor(rnd() * (p.maxLatencyMs + 1));
  const ledger = p.limits.map(() => ({ state: EMPTY_STATE as GcraState, seenMs: 0 }));
  const limitIndex = (limit: Limit): number => p.limits.findIndex((l) => l === limit);
  const result: SimResult = { admitted: p.limits.map(() => []), grants: [], calls: [], requests: 0, admittedRequests: 0, fromLease: 0, leaseMs: [] };

  const isolates: Isolate[] = [];
  for (let i = 0; i < p.isolates; i++) {
    const book = new LeaseBook({ maxOvershoot: p.maxOvershoot, minLeaseMs: p.minLeaseMs, maxGroups: 16, ledgerRetryMs: 1000 });
    const group = book.group(SUBJECT, CATEGORY, 0);
    for (const limit of p.limits) book.slot(group, limit, 0);
    isolates.push({ book, group, flight: null, leaseOf: new Map(group.slots.map((s) => [s, new Map()])) });
    // Demand in waves: each isolate's rate drifts between 0 and the peak.
    let t = Math.floor(rnd() * 50);
    while (t < p.durationMs) {
      const phase = Math.sin((t / p.durationMs) * Math.PI * (1 + 4 * rnd()) + i);
      const rate = p.demand === "steady" ? p.peakRatePerMs : p.peakRatePerMs * Math.max(0.02, (phase + 1) / 2) * (rnd() < 0.05 ? 5 : 1);
      t += Math.round(-Math.log(1 - rnd()) / rate);
      if (p.demand !== "bursts" && t < p.durationMs) push(t, { kind: "arrival", isolate: i, cost: 1 + Math.floor(rnd() * p.maxCost) });
    }
  }
  if (p.demand === "bursts") {
    const leaseMs = Math.max(1, isolates[0]!.group.slots[0]!.leaseMs);
    const flood = Math.max(2, Math.ceil((2 * Math.max(...p.limits.map((l) => l.burst))) / p.isolates));
    // Bounded: at most about 6,000 arrivals a run.
    for (let t = 0, arrivals = 0; t < p.durationMs && arrivals < 6000; arrivals += p.isolates * (flood + 1)) {
      const cycleMs = Math.max(2, Math.round(leaseMs * (0.3 + 2.5 * rnd())));
      for (let i = 0; i < p.isolates; i++) {
        push(t + Math.floor(rnd() * cycleMs * 0.5), { kind: "arrival", isolate: i, cost: 1 + Math.floor(rnd() * p.maxCost) });
        for (let c = 0; c < flood; c++) push(t + cycleMs, { kind: "arrival", isolate: i, cost: 1 + Math.floor(rnd() * p.maxCost) });
      }
      t += cycleMs + 1 + Math.floor(rnd() * leaseMs);
    }
  }
  result.leaseMs = isolates[0]!.group.slots.map((s) => s.leaseMs);

  const sendReturns = (iso: Isolate, nowMs: number): void => {
    iso.book.sweep(nowMs);
    const returns = iso.book.takeReturns();
    if (returns.length > 0) push(nowMs + latency(), { kind: "giveBack", returns, nowMs });
  };

  const attempt = (req: Request, nowMs: number): void => {
    const iso = isolates[req.isolate]!;
    const taken = iso.book.take(req.refs, nowMs);
    if (taken.kind === "taken") {
      if (req.rounds === 0) result.fromLease++;
      result.admittedRequests++;
      for (const ref of req.refs) {
        result.admitted[limitIndex(ref.slot.limit)]!.push({ atMs: nowMs, cost: ref.cost });
        const record = iso.leaseOf.get(ref.slot)!.get(ref.slot.serial);
        if (record === undefined) throw new Error("spent from a lease the ledger never granted");
        record.spent += ref.cost;
      }
      return;
    }
    if (taken.kind === "refused" || req.rounds >= MAX_ROUNDS || iso.book.isDown(iso.group, nowMs)) return;
    req.rounds++;
    const shorts: Short[] = taken.shorts.get(iso.group)!;
    for (const s of shorts) s.slot.waitingUnits += s.need;
    if (iso.flight !== null) {
      iso.flight.waiters.push(req);
      return;
    }
    iso.flight = { waiters: [req] };
    const ask = iso.book.askFor(iso.group, shorts, nowMs);
    const sent = p.hoard ? { ...ask, items: ask.items.map((item) => ({ ...item, want: Math.max(item.want, item.limit.burst) })) } : ask;
    push(nowMs + latency(), { kind: "ask", isolate: req.isolate, ask: sent });
  };

  while (queue.length > 0) {
    const { atMs, event } = pop();
    switch (event.kind) {
      case "arrival": {
        const iso = isolates[event.isolate]!;
        result.requests++;
        sendReturns(iso, atMs);
        attempt({ isolate: event.isolate, refs: iso.group.slots.map((slot) => ({ group: iso.group, slot, cost: event.cost, chargeIndex: 0 })), rounds: 0 }, atMs);
        break;
      }
      case "ask": {
        const ask = event.ask;
        const asks = ask.items.map((item) => {
          const k = limitIndex(item.limit);
          return { ...item, state: ledger[k]!.state, seenMs: ledger[k]!.seenMs };
        });
        const outcome = answerAsk(asks, ask.askedAtMs);
        ask.items.forEach((item, n) => {
          const k = limitIndex(item.limit);
          if (outcome.granted || item.returning > 0) ledger[k] = { state: outcome.states[n]!, seenMs: Math.max(ledger[k]!.seenMs, ask.askedAtMs) };
        });
        const reply: AskReply = outcome.granted
          ? { status: "granted", grants: outcome.grants.map((g) => ({ units: g.units, ...g.standing })) }
          : { status: "denied", index: outcome.index, retryAfterMs: outcome.retryAfterMs, ...outcome.standing };
        const records = ask.items.map((item, n) => {
          if (!outcome.granted) return null;
          const record: GrantRecord = { limitIndex: limitIndex(item.limit), askedAtMs: ask.askedAtMs, units: outcome.grants[n]!.units, spent: 0 };
          result.grants.push(record);
          return record;
        });
        result.calls.push({
          kind: "ask",
          nowMs: ask.askedAtMs,
          items: ask.items.map((item) => ({ limitIndex: limitIndex(item.limit), need: item.need, want: item.want, returning: item.returning, returningGrantedAtMs: item.returningGrantedAtMs })),
          reply,
        });
        push(atMs + latency(), { kind: "reply", isolate: event.isolate, ask, reply, records });
        break;
      }
      case "reply": {
        const iso = isolates[event.isolate]!;
        iso.book.answered(event.ask, event.reply, atMs, (slot) => Math.ceil(slot.leaseMs / 4));
        if (event.reply.status === "granted") {
          event.ask.items.forEach((item, n) => iso.leaseOf.get(item.slot)!.set(item.slot.serial, event.records[n]!));
        }
        const waiters = iso.flight?.waiters ?? [];
        iso.flight = null;
        for (const req of waiters) for (const ref of req.refs) ref.slot.waitingUnits = Math.max(0, ref.slot.waitingUnits - ref.cost);
        for (const req of waiters) attempt(req, atMs);
        break;
      }
      case "giveBack": {
        const returns = event.returns.map((r) => {
          const k = limitIndex(r.limit);
          const back = giveBack(r.limit, ledger[k]!.state, r.units, r.grantedAtMs, event.nowMs, ledger[k]!.seenMs);
          if (back.creditedUnits > 0) ledger[k] = { state: back.state, seenMs: Math.max(ledger[k]!.seenMs, event.nowMs) };
          return { limitIndex: k, units: r.units, grantedAtMs: r.grantedAtMs };
        });
        result.calls.push({ kind: "giveBack", nowMs: event.nowMs, returns });
        break;
      }
    }
  }
  return result;
}
