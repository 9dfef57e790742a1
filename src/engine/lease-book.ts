// An isolate's leases on global limits, as pure bookkeeping: no
// I/O, no promises, time as `nowMs`. src/limits/global-leases.ts does the
// ledger calls around it; the property test drives it against a simulated
// ledger and clock.
//
// A lease is `units` of one global limit of one (subject, category), granted
// by the ledger to this isolate and spendable only while nowMs < expiresAtMs,
// where expiresAtMs = the time the ask was sent + L, on this isolate's clock,
// which is also the time the ledger charges the grant at: every spend lies in
// [grant, grant + L]. A request takes from every lease it needs at once, or
// from none (take()); what it cannot find is asked for (askFor(), whose
// answer answered() applies; failed() when the ledger could not be asked).
// The shapes, L and the bound's arithmetic are in lease-types.ts.
//
// Lease size: the ask wants what the requests waiting on it need, or more
// when recent demand says the lease will be spent: need + f − 2√f for the f
// units expected over L (an EWMA of the units taken per L-long window; the
// 2√f keeps a Poisson-like demand from leaving units behind). Units left when a
// lease dies are credited back only in part (ledger-gcra.ts giveBack: less
// what the rate earned back meanwhile), so a lease sized to be spent, not
// returned, is what keeps a caller at 90 % of its limit from being refused.
// Below ~4 units expected per L the ask is the single exact spend. The
// ledger then shrinks grants further as it nears the limit.
import { extraFor, rollDemand } from "./lease-demand";
import { type Limit, sameLimit } from "./limit";
import {
  type Ask,
  type AskItem,
  type AskReply,
  type LeaseBookOptions,
  type LeaseGroup,
  type LeaseRef,
  leaseMsFor,
  type LeaseSlot,
  MAX_SLOTS_PER_GROUP,
  type Returnable,
  type Short,
  type TakeResult,
} from "./lease-types";

/** Closes the demand windows (one lease time long) that ended by `t`. */
function rollWindow(slot: LeaseSlot, t: number): void {
  rollDemand(slot, slot.leaseMs, t);
}

/** Whether giving `units` back now still credits anything: units·T > elapsed (ledger-gcra.ts giveBack). */
function creditLeft(limit: Limit, units: number, grantedAtMs: number, nowMs: number): boolean {
  return units > 0 && units * limit.intervalUnits > Math.max(0, Math.floor(nowMs) - grantedAtMs) * limit.unitsPerMs;
}

export class LeaseBook {
  readonly #options: LeaseBookOptions;
  readonly #groups = new Map<string, LeaseGroup>();
  /** Leases in the order they were granted, to find dead ones with units left (sweep). */
  readonly #granted: { group: LeaseGroup; slot: LeaseSlot; serial: number; expiresAtMs: number }[] = [];
  #returns: Returnable[] = [];

  constructor(options: LeaseBookOptions) {
    this.#options = options;
  }

  get size(): number {
    return this.#groups.size;
  }

  /** The group of (subject, category), made when first asked for; past maxGroups the least recently used is dropped (its units queued to go back). */
  group(subject: string, category: string, nowMs: number): LeaseGroup {
    const key = `${subject}\u0000${category}`;
    const groups = this.#groups;
    let group = groups.get(key);
    if (group !== undefined) {
      groups.delete(key);
      groups.set(key, group);
      return group;
    }
    while (groups.size >= this.#options.maxGroups) {
      const oldest = groups.entries().next();
      if (oldest.done === true) break;
      groups.delete(oldest.value[0]);
      for (const slot of oldest.value[1].slots) this.#dropSlot(oldest.value[1], slot, nowMs);
    }
    group = { subject, category, slots: [], ledgerDownUntilMs: 0 };
    groups.set(key, group);
    return group;
  }

  /** The slot of `limit` in `group`. */
  slot(group: LeaseGroup, limit: Limit, nowMs: number): LeaseSlot {
    for (const slot of group.slots) if (sameLimit(slot.limit, limit)) return slot;
    if (group.slots.length >= MAX_SLOTS_PER_GROUP) this.#dropSlot(group, group.slots.shift()!, nowMs);
    const slot: LeaseSlot = {
      limit,
      leaseMs: leaseMsFor(limit, this.#options.maxOvershoot, this.#options.minLeaseMs),
      units: 0,
      grantedAtMs: 0,
      expiresAtMs: 0,
      serial: 0,
      ledgerRemaining: limit.burst,
      ledgerResetAtMs: 0,
      windowStartMs: Math.floor(nowMs),
      windowUnits: 0,
      expectedUnits: 0,
      deniedUntilMs: 0,
      deniedNeed: 0,
      waitingUnits: 0,
    };
    group.slots.push(slot);
    return slot;
  }

  /**
   * Takes every ref's cost from its lease at `nowMs`, or nothing: a kept
   * refusal refuses (the longest delay wins), else a slot whose lease is dead
   * or holds too few units makes the result "short". Costs on one slot add up.
   */
  take(refs: readonly LeaseRef[], nowMs: number): TakeResult {
    const t = Math.floor(nowMs);
    let refused = -1;
    let refusedMs = 0;
    let shorts: Map<LeaseGroup, Short[]> | null = null;
    for (let i = 0; i < refs.length; i++) {
      const ref = refs[i]!;
      const slot = ref.slot;
      let need = 0;
      let first = true;
      for (let j = 0; j < refs.length; j++) {
        if (refs[j]!.slot !== slot) continue;
        if (j < i) first = false;
        need += refs[j]!.cost;
      }
      if (!first || need === 0) continue;
      if (slot.deniedUntilMs > t && need >= slot.deniedNeed) {
        if (slot.deniedUntilMs - t > refusedMs) {
          refused = i;
          refusedMs = slot.deniedUntilMs - t;
        }
      } else if (t >= slot.expiresAtMs || slot.units < need) {
        shorts ??= new Map();
        const list = shorts.get(ref.group);
        if (list === undefined) shorts.set(ref.group, [{ slot, need }]);
        else list.push({ slot, need });
      }
    }
    if (refused >= 0) {
      const slot = refs[refused]!.slot;
      return { kind: "refused", ref: refused, retryAfterMs: refusedMs, remaining: 0, resetMs: Math.max(0, slot.ledgerResetAtMs - t) };
    }
    if (shorts !== null) return { kind: "short", shorts };
    let tightest = -1;
    let tightRemaining = Number.MAX_SAFE_INTEGER;
    let tightResetMs = -1;
    for (let i = 0; i < refs.length; i++) {
      const slot = refs[i]!.slot;
      const cost = refs[i]!.cost;
      slot.units -= cost;
      rollWindow(slot, t);
      slot.windowUnits += cost;
    }
    for (let i = 0; i < refs.length; i++) {
      const slot = refs[i]!.slot;
      const remaining = slot.units + slot.ledgerRemaining;
      const resetMs = Math.max(0, slot.ledgerResetAtMs - t);
      if (remaining < tightRemaining || (remaining === tightRemaining && resetMs > tightResetMs)) {
        tightest = i;
        tightRemaining = remaining;
        tightResetMs = resetMs;
      }
    }
    return { kind: "taken", tightest, remaining: tightRemaining, resetMs: Math.max(0, tightResetMs) };
  }

  /**
   * The ask for `shorts` of `group` at `nowMs`: each slot wants what its
   * waiting requests need, or the demand-sized lease when larger (never more
   * than the burst unless one need is). The units a slot's previous lease
   * still holds go back with it (they stop being spendable here).
   */
  askFor(group: LeaseGroup, shorts: readonly Short[], nowMs: number): Ask {
    const t = Math.floor(nowMs);
    const items: AskItem[] = [];
    for (const { slot, need } of shorts) {
      rollWindow(slot, t);
      const sized = need + extraFor(slot.expectedUnits);
      const want = Math.max(need, Math.min(Math.max(sized, slot.waitingUnits), slot.limit.burst));
      const returning = creditLeft(slot.limit, slot.units, slot.grantedAtMs, t) ? slot.units : 0;
      items.push({ slot, limit: slot.limit, need, want, returning, returningGrantedAtMs: slot.grantedAtMs });
      slot.units = 0;
    }
    return { group, items, askedAtMs: t };
  }

  /** Applies the ledger's answer to `ask`, received at `nowMs`. */
  answered(ask: Ask, reply: AskReply, nowMs: number, holdMs: (slot: LeaseSlot) => number): void {
    const t = Math.floor(nowMs);
    if (reply.status === "granted") {
      ask.items.forEach((item, i) => {
        const grant = reply.grants[i];
        if (grant === undefined) return;
        const slot = item.slot;
        if (ask.askedAtMs < slot.grantedAtMs) {
          // An older ask answered after a newer one (it outlived its flight's
          // age guard): the newer lease stands, these units go back.
          if (grant.units > 0) this.#returns.push({ subject: ask.group.subject, category: ask.group.category, limit: slot.limit, units: grant.units, grantedAtMs: ask.askedAtMs });
          return;
        }
        slot.serial++;
        slot.units = grant.units;
        slot.grantedAtMs = ask.askedAtMs;
        slot.expiresAtMs = ask.askedAtMs + slot.leaseMs;
        slot.ledgerRemaining = grant.remaining;
        slot.ledgerResetAtMs = ask.askedAtMs + grant.resetMs;
        slot.deniedUntilMs = 0;
        this.#noteGranted(ask.group, slot);
      });
      return;
    }
    const item = ask.items[reply.index];
    if (item === undefined || ask.askedAtMs < item.slot.grantedAtMs) return;
    const slot = item.slot;
    // The ledger's delay runs from the time it decided at (askedAtMs); held at
    // least holdMs from now, so isolates refused together do not all ask again at once.
    slot.deniedUntilMs = Math.max(ask.askedAtMs + reply.retryAfterMs, t + holdMs(slot), t + 1);
    slot.deniedNeed = item.need;
    slot.ledgerRemaining = reply.remaining;
    slot.ledgerResetAtMs = ask.askedAtMs + reply.resetMs;
  }

  /** The ledger could not be asked (or answered too late): its limits take on_error's course until ledgerRetryMs from now. */
  failed(group: LeaseGroup, nowMs: number): void {
    group.ledgerDownUntilMs = Math.floor(nowMs) + this.#options.ledgerRetryMs;
  }

  /** Whether the ledger is taken as down for `group` at `nowMs`. */
  isDown(group: LeaseGroup, nowMs: number): boolean {
    return group.ledgerDownUntilMs > nowMs;
  }

  /**
   * Finds leases that died with units whose credit is still positive, and
   * queues them to go back; takeReturns() hands them over. Cheap: it looks
   * only at the oldest grants.
   */
  sweep(nowMs: number): void {
    const t = Math.floor(nowMs);
    const granted = this.#granted;
    let n = 0;
    while (n < granted.length && granted[n]!.expiresAtMs <= t) n++;
    if (n === 0) return;
    for (const { group, slot, serial } of granted.splice(0, n)) {
      if (slot.serial === serial) this.#retire(group, slot, t);
    }
  }

  /** Units queued to go back to the ledger (and forgets them). */
  takeReturns(): Returnable[] {
    if (this.#returns.length === 0) return [];
    const out = this.#returns;
    this.#returns = [];
    return out;
  }

  /** Forgets every lease and kept refusal of `subject`, giving nothing back (its ledger state is being reset). */
  forgetSubject(subject: string): void {
    for (const [key, group] of this.#groups) if (group.subject === subject) this.#groups.delete(key);
  }

  #noteGranted(group: LeaseGroup, slot: LeaseSlot): void {
    const granted = this.#granted;
    // Bounded: one entry per lease; past the bound the oldest entries go (their units are not given back: a loss of credit, never of the bound).
    if (granted.length >= this.#options.maxGroups * 2) granted.shift();
    granted.push({ group, slot, serial: slot.serial, expiresAtMs: slot.expiresAtMs });
  }

  #retire(group: LeaseGroup, slot: LeaseSlot, t: number): void {
    if (creditLeft(slot.limit, slot.units, slot.grantedAtMs, t)) {
      this.#returns.push({ subject: group.subject, category: group.category, limit: slot.limit, units: slot.units, grantedAtMs: slot.grantedAtMs });
    }
    slot.units = 0;
  }

  // Dropped for room (a group evicted, a slot pushed out): its units go back while still worth it.
  #dropSlot(group: LeaseGroup, slot: LeaseSlot, nowMs: number): void {
    this.#retire(group, slot, Math.floor(nowMs));
    slot.serial++;
  }
}
