// An isolate's leases of budgets, as pure bookkeeping: no I/O, no promises,
// time as `nowMs`. src/limits/budget-leases.ts makes the object calls around
// it; test/engine/budget-lease-property.test.ts drives it against a model of
// the object over random interleavings.
//
// A slot is one budget (owner, category) held in one quota object. Its lease
// is `units` granted by the object and already counted there as spent, so
// taking from it needs no call: a request takes every spend it needs from
// its slots at once, or none (take()). What it cannot find it asks for, one
// call per object carrying every short slot of that object (askFor()), whose
// answer answered() applies. What the isolate spent of a lease goes to the
// object at least every REPORT_EVERY_MS while it spends (reportsDue()), and a
// lease that ended, or is replaced, is closed: its unspent units go back.
//
// Lease size: what the requests waiting on the ask need, plus what recent
// demand says will be spent before the lease ends (lease-demand.ts); the
// object grants the waiting part whole while the budget has it and shrinks
// the rest as the budget nears its end, to a single exact spend.
import { type DemandWindow, extraFor, rollDemand } from "./lease-demand";

/** An isolate reports what it spent of a lease at least this often while it spends. */
export const REPORT_EVERY_MS = 1000;
/** A budget the object says does not exist (deleted meanwhile) is not asked about again for this long: its spends pass. */
export const ABSENT_FOR_MS = 1000;

/** The figures the object last gave for a budget (the refusal's body and headers are built from them). */
export interface BudgetFigures {
  readonly owner: string;
  readonly category: string;
  readonly period: "day" | "week" | "month" | "none";
  readonly amount: number;
  readonly used: number;
  readonly remaining: number;
  readonly thresholds: number[];
  readonly periodStartMs: number | null;
  readonly resetsAtMs: number | null;
  /** A shadow budget: what it cannot take is marked on the request, not refused. */
  readonly shadow?: true;
}

export interface BudgetSlot extends DemandWindow {
  /** The quota object holding the budget: `tenant:<slug>` or `org:<slug>`. */
  readonly object: string;
  readonly owner: string;
  readonly category: string;
  /** The current lease, or null. */
  leaseId: string | null;
  /** Units left to spend in it. */
  units: number;
  /** Units taken from it so far, net of what went back to it. */
  spent: number;
  /** `spent` as last reported to the object. */
  reported: number;
  /** When the ask that brought it was sent (this isolate's clock): an older answer never replaces it. */
  grantedAtMs: number;
  expiresAtMs: number;
  lastReportMs: number;
  /** The period the lease's units count in (null for credits): a refund after the lease ends goes back to it. */
  periodStartMs: number | null;
  /** Units of requests waiting for the next answer about this slot. */
  waiting: number;
  /** The budget is not at the object (deleted): its spends pass until then. */
  absentUntilMs: number;
  /** When the object last refused a need of this budget (its figures say why); requests waiting since before then are refused. */
  refusedAtMs: number;
  /** The object's figures after the last grant, report or refusal. */
  figures: BudgetFigures | null;
}

/** One spend of a request, on a slot. */
export interface SlotSpend {
  readonly slot: BudgetSlot;
  readonly units: number;
}

/** What a request took from a lease: given back to it (a refund, a release) while it lives, else to the object. */
export interface LeaseDebit {
  readonly slot: BudgetSlot;
  readonly leaseId: string;
  readonly periodStartMs: number | null;
  units: number;
}

export type BudgetTake = { readonly kind: "taken"; readonly debits: LeaseDebit[] } | { readonly kind: "short"; readonly shorts: ReadonlyMap<string, SlotSpend[]> };

/** A lease's report or close, as a lease call carries it. */
export interface LeaseReportItem {
  readonly slot: BudgetSlot;
  readonly leaseId: string;
  readonly spent: number;
  readonly close: boolean;
}

/** One slot's part of an ask. */
export interface BudgetAskItem {
  readonly slot: BudgetSlot;
  /** The largest single need of a waiting request (null: a report or close only). */
  readonly need: number | null;
  readonly waiting: number;
  readonly extra: number;
  /** The slot's lease, reported or closed with this call. */
  readonly lease: { readonly id: string; readonly spent: number; readonly close: boolean } | null;
}

export interface BudgetAsk {
  readonly object: string;
  readonly items: readonly BudgetAskItem[];
  readonly askedAtMs: number;
}

export type BudgetAnswer =
  | { readonly status: "granted"; readonly leaseId: string; readonly units: number; readonly expiresAtMs: number; readonly budget: BudgetFigures }
  | { readonly status: "exhausted"; readonly budget: BudgetFigures }
  | { readonly status: "withheld"; readonly budget: BudgetFigures }
  | { readonly status: "none" }
  | { readonly status: "reported"; readonly budget: BudgetFigures | null };

export interface BudgetLeaseBookOptions {
  /** How long a lease lasts (budgets.lease_s), and the demand window. */
  readonly leaseMs: number;
  /** Slots kept; the least recently used goes first (its lease closed). */
  readonly maxSlots: number;
}

function live(slot: BudgetSlot, t: number): boolean {
  return slot.leaseId !== null && t < slot.expiresAtMs;
}

export class BudgetLeaseBook {
  readonly #options: BudgetLeaseBookOptions;
  readonly #slots = new Map<string, BudgetSlot>();
  /** Leases to report or close with the next call to their object (dropped slots, stale grants, ended leases). */
  #closing: LeaseReportItem[] = [];

  constructor(options: BudgetLeaseBookOptions) {
    this.#options = options;
  }

  get leaseMs(): number {
    return this.#options.leaseMs;
  }

  /** The slot of a budget, made when first used; past maxSlots the least recently used goes (its lease closed). */
  slot(object: string, owner: string, category: string, nowMs: number): BudgetSlot {
    const key = `${object}\u0000${owner}\u0000${category}`;
    const slots = this.#slots;
    let slot = slots.get(key);
    if (slot !== undefined) {
      slots.delete(key);
      slots.set(key, slot);
      return slot;
    }
    while (slots.size >= this.#options.maxSlots) {
      const oldest = slots.entries().next();
      if (oldest.done === true) break;
      slots.delete(oldest.value[0]);
      this.#close(oldest.value[1]);
    }
    slot = {
      object,
      owner,
      category,
      leaseId: null,
      units: 0,
      spent: 0,
      reported: 0,
      grantedAtMs: 0,
      expiresAtMs: 0,
      lastReportMs: 0,
      periodStartMs: null,
      waiting: 0,
      absentUntilMs: 0,
      refusedAtMs: -1,
      figures: null,
      windowStartMs: Math.floor(nowMs),
      windowUnits: 0,
      expectedUnits: 0,
    };
    slots.set(key, slot);
    return slot;
  }

  /**
   * Takes every spend from its slot's live lease at `nowMs`, or nothing. A
   * spend of 0 needs a unit left in the lease (as at the object: the budget
   * not spent). Spends on one slot add up. A slot whose budget the object
   * said is gone takes nothing and passes.
   */
  take(spends: readonly SlotSpend[], nowMs: number): BudgetTake {
    const t = Math.floor(nowMs);
    let shorts: Map<string, SlotSpend[]> | null = null;
    for (let i = 0; i < spends.length; i++) {
      const slot = spends[i]!.slot;
      if (slot.absentUntilMs > t) continue;
      let need = 0;
      let first = true;
      for (let j = 0; j < spends.length; j++) {
        if (spends[j]!.slot !== slot) continue;
        if (j < i) first = false;
        need += spends[j]!.units;
      }
      if (!first) continue;
      // A spend of 0 (a response-priced reserve of 0) takes nothing but needs a unit left: it is refused once the budget is spent.
      if (!live(slot, t) || slot.units < Math.max(need, 1)) {
        shorts ??= new Map();
        const list = shorts.get(slot.object);
        if (list === undefined) shorts.set(slot.object, [{ slot, units: need }]);
        else list.push({ slot, units: need });
      }
    }
    if (shorts !== null) return { kind: "short", shorts };
    const debits: LeaseDebit[] = [];
    for (const { slot, units } of spends) {
      if (slot.absentUntilMs > t) continue;
      slot.units -= units;
      slot.spent += units;
      rollDemand(slot, this.#options.leaseMs, t);
      slot.windowUnits += units;
      debits.push({ slot, leaseId: slot.leaseId!, periodStartMs: slot.periodStartMs, units });
    }
    return { kind: "taken", debits };
  }

  /**
   * The ask for `shorts` of `object` at `nowMs`, with the reports and closes
   * due to that object: each short slot closes its lease (its unspent units
   * go back) and asks for what its waiting requests need, plus what demand
   * expects over a lease.
   */
  askFor(object: string, shorts: readonly SlotSpend[], nowMs: number): BudgetAsk {
    const t = Math.floor(nowMs);
    const items: BudgetAskItem[] = [];
    for (const { slot, units } of shorts) {
      rollDemand(slot, this.#options.leaseMs, t);
      const lease = slot.leaseId === null ? null : { id: slot.leaseId, spent: slot.spent, close: true };
      // Beyond what waits: what demand expects over a lease, or at least what was taken in this window so far (a
      // new or growing demand doubles its lease each ask rather than waiting a window to be seen).
      items.push({ slot, need: units, waiting: Math.max(units, slot.waiting), extra: Math.max(extraFor(slot.expectedUnits), slot.windowUnits), lease });
      this.#forget(slot);
    }
    for (const due of this.#takeClosing(object)) items.push({ slot: due.slot, need: null, waiting: 0, extra: 0, lease: { id: due.leaseId, spent: due.spent, close: due.close } });
    return { object, items, askedAtMs: t };
  }

  /**
   * The reports and closes due at `nowMs`, by object: leases spent from
   * since their last report REPORT_EVERY_MS ago, leases that ended (closed:
   * the slot asks again when next needed), and closes queued meanwhile.
   */
  reportsDue(nowMs: number): Map<string, BudgetAsk> {
    const t = Math.floor(nowMs);
    const out = new Map<string, BudgetAsk>();
    const add = (slot: BudgetSlot, lease: { id: string; spent: number; close: boolean }) => {
      let ask = out.get(slot.object);
      if (ask === undefined) out.set(slot.object, (ask = { object: slot.object, items: [], askedAtMs: t }));
      (ask.items as BudgetAskItem[]).push({ slot, need: null, waiting: 0, extra: 0, lease });
    };
    for (const slot of this.#slots.values()) {
      if (slot.leaseId === null) continue;
      if (t >= slot.expiresAtMs) {
        add(slot, { id: slot.leaseId, spent: slot.spent, close: true });
        this.#forget(slot);
      } else if (slot.spent !== slot.reported && t - slot.lastReportMs >= REPORT_EVERY_MS) {
        add(slot, { id: slot.leaseId, spent: slot.spent, close: false });
        slot.reported = slot.spent;
        slot.lastReportMs = t;
      }
    }
    for (const due of this.#closing) add(due.slot, { id: due.leaseId, spent: due.spent, close: due.close });
    this.#closing = [];
    return out;
  }

  /**
   * Applies the object's answer to `ask`, received at `nowMs`. Returns the
   * figures of the budget that refused (exhausted), or null.
   */
  answered(ask: BudgetAsk, answers: readonly BudgetAnswer[], nowMs: number): BudgetFigures | null {
    const t = Math.floor(nowMs);
    let refusing: BudgetFigures | null = null;
    ask.items.forEach((item, i) => {
      const answer = answers[i];
      if (answer === undefined) return;
      const slot = item.slot;
      switch (answer.status) {
        case "granted": {
          if (ask.askedAtMs < slot.grantedAtMs || live(slot, t)) {
            // A newer lease stands (an older ask answered late): these units go back.
            this.#closing.push({ slot, leaseId: answer.leaseId, spent: 0, close: true });
            return;
          }
          // A lease that ended while this ask was out, not closed yet: it closes now (what it did not spend goes back).
          if (slot.leaseId !== null) this.#closing.push({ slot, leaseId: slot.leaseId, spent: slot.spent, close: true });
          slot.leaseId = answer.leaseId;
          slot.units = answer.units;
          slot.spent = 0;
          slot.reported = 0;
          slot.grantedAtMs = ask.askedAtMs;
          slot.expiresAtMs = answer.expiresAtMs;
          slot.lastReportMs = t;
          slot.periodStartMs = answer.budget.periodStartMs;
          slot.figures = answer.budget;
          return;
        }
        case "exhausted":
          slot.figures = answer.budget;
          slot.refusedAtMs = t;
          refusing ??= answer.budget;
          return;
        case "withheld":
          slot.figures = answer.budget;
          return;
        case "none":
          slot.absentUntilMs = t + ABSENT_FOR_MS;
          return;
        case "reported":
          if (answer.budget !== null) slot.figures = answer.budget;
      }
    });
    return refusing;
  }

  /** A call failed: the closes it carried are tried again with the next call to that object (a report is simply sent again later). */
  failed(ask: BudgetAsk): void {
    for (const item of ask.items) {
      if (item.lease !== null && item.lease.close) this.#closing.push({ slot: item.slot, leaseId: item.lease.id, spent: item.lease.spent, close: true });
      else if (item.lease !== null) item.slot.reported = -1;
    }
  }

  /** Gives `units` back to the lease a debit came from, while it lives; false when it has ended (the object must take them). */
  giveBack(debit: LeaseDebit, units: number, nowMs: number): boolean {
    const slot = debit.slot;
    if (slot.leaseId !== debit.leaseId || !live(slot, Math.floor(nowMs))) return false;
    slot.units += units;
    slot.spent -= units;
    return true;
  }

  /** Takes up to `units` more from the lease a debit came from (a debt); the units it could take. */
  takeMore(debit: LeaseDebit, units: number, nowMs: number): number {
    const slot = debit.slot;
    if (slot.leaseId !== debit.leaseId || !live(slot, Math.floor(nowMs))) return 0;
    const taken = Math.min(units, slot.units);
    slot.units -= taken;
    slot.spent += taken;
    return taken;
  }

  /** Units this isolate holds unspent in live leases of a budget (for explain). */
  held(object: string, owner: string, category: string, nowMs: number): number {
    const slot = this.#slots.get(`${object}\u0000${owner}\u0000${category}`);
    return slot !== undefined && live(slot, Math.floor(nowMs)) ? slot.units : 0;
  }

  /** Closes and forgets every lease (the runtime is being replaced). */
  dropAll(): void {
    for (const slot of this.#slots.values()) this.#close(slot);
    this.#slots.clear();
  }

  /** Closes and forgets every lease of `owner`'s budgets (an admin changed them through this isolate). */
  dropOwner(owner: string): void {
    for (const [key, slot] of this.#slots) {
      if (slot.owner !== owner) continue;
      this.#slots.delete(key);
      this.#close(slot);
    }
  }

  #takeClosing(object: string): LeaseReportItem[] {
    if (this.#closing.length === 0) return [];
    const mine = this.#closing.filter((c) => c.slot.object === object);
    if (mine.length > 0) this.#closing = this.#closing.filter((c) => c.slot.object !== object);
    return mine;
  }

  #close(slot: BudgetSlot): void {
    if (slot.leaseId !== null) this.#closing.push({ slot, leaseId: slot.leaseId, spent: slot.spent, close: true });
    this.#forget(slot);
  }

  /** The slot holds no lease any more (closed, or being replaced). */
  #forget(slot: BudgetSlot): void {
    slot.leaseId = null;
    slot.units = 0;
    slot.spent = 0;
    slot.reported = 0;
  }
}
