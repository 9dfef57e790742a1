// A budget's quota object as the simulation runs it: the lease rules of
// src/durable/budget-lease-store.ts (reports and closes first, then every
// item granted or none; a grant is what waits, whole, plus a share of the
// extra demand asks for that shrinks as the budget nears its end,
// (remaining − waiting) / (2 · (live leases + 1)); unspent units of a closed
// lease leave `used`), on budgets and leases held in Maps instead of SQLite
// (Node has no SQLite here), behind a SimObject that adds distance and the
// queue. Budgets are credits (`period: "none"`): the scenarios run for
// seconds, not across a period's end. It also keeps what the report needs:
// `used` over time, so never-over and never-under can be checked.
import type { BudgetLeaseAnswer, BudgetLeaseItem, BudgetLeaseRequest, BudgetLeaseResult } from "../../src/durable/budget-lease-types";
import type { BudgetState } from "../../src/durable/budget-types";
import type { BudgetNamespaces } from "../../src/durable/budget-client";
import type { SimObject } from "./deployment";

interface Budget {
  readonly owner: string;
  readonly category: string;
  amount: number;
  used: number;
}

interface Lease {
  readonly owner: string;
  readonly category: string;
  readonly granted: number;
  spent: number;
  readonly expiresAtMs: number;
}

export class BudgetObjectModel {
  readonly #budgets = new Map<string, Budget>();
  readonly #leases = new Map<string, Lease>();
  readonly #object: SimObject;
  #nextId = 0;
  calls = 0;
  grants = 0;
  exhausted = 0;

  constructor(object: SimObject) {
    this.#object = object;
  }

  put(owner: string, category: string, amount: number): void {
    this.#budgets.set(`${owner}\u0000${category}`, { owner, category, amount, used: 0 });
  }

  /** A top-up: credits add to the amount (as POST …/topups does). */
  topUp(owner: string, category: string, units: number): void {
    this.#budgets.get(`${owner}\u0000${category}`)!.amount += units;
  }

  budget(owner: string, category: string): Readonly<Budget> {
    return this.#budgets.get(`${owner}\u0000${category}`)!;
  }

  /** Units in live leases not reported spent (the `leased` figure of GET …/budgets). */
  leased(owner: string, category: string, nowMs: number): number {
    let units = 0;
    for (const l of this.#leases.values()) if (l.owner === owner && l.category === category && l.expiresAtMs > nowMs) units += l.granted - l.spent;
    return units;
  }

  /** The namespaces an isolate `rttMs` from the object binds (tenant and org objects alike land here). */
  namespacesFor(rttMs: number): BudgetNamespaces {
    const stub = {
      budgetLease: (req: BudgetLeaseRequest): Promise<BudgetLeaseResult> => this.#object.call(rttMs, () => this.#lease(req)),
      budgetAdjust: (): Promise<never[]> => this.#object.call(rttMs, () => []),
    };
    const ns = { idFromName: (name: string) => name, get: () => stub };
    return { tenant: ns, org: ns } as unknown as BudgetNamespaces;
  }

  #state(b: Budget): BudgetState {
    return { owner: b.owner, category: b.category, period: "none", amount: b.amount, used: b.used, remaining: Math.max(0, b.amount - b.used), thresholds: [], periodStartMs: null, resetsAtMs: null };
  }

  #lease(req: BudgetLeaseRequest): BudgetLeaseResult {
    this.calls++;
    const nowMs = req.nowMs;
    for (const item of req.items) if (item.lease !== null) this.#report(item);
    const lives = req.items.map((item) => (item.need === null ? null : (this.#budgets.get(`${item.owner}\u0000${item.category}`) ?? null)));
    const fits = (b: Budget, need: number): boolean => (need > 0 ? need <= b.amount - b.used : b.amount - b.used > 0);
    const exhausted = req.items.some((item, i) => item.need !== null && lives[i] !== null && !fits(lives[i]!, item.need));
    if (exhausted) this.exhausted++;
    const answers = req.items.map((item, i): BudgetLeaseAnswer => {
      const b = lives[i] ?? null;
      if (item.need === null) {
        const now = this.#budgets.get(`${item.owner}\u0000${item.category}`);
        return { status: "reported", budget: now === undefined ? null : this.#state(now) };
      }
      if (b === null) return { status: "none" };
      if (exhausted) return { status: fits(b, item.need) ? "withheld" : "exhausted", budget: this.#state(b) };
      return this.#grant(item, b, req.leaseMs, nowMs);
    });
    return { answers, audits: [] };
  }

  #report(item: BudgetLeaseItem): void {
    const lease = this.#leases.get(item.lease!.id);
    if (lease === undefined || lease.owner !== item.owner || lease.category !== item.category) return;
    const reported = Math.min(item.lease!.spent, lease.granted);
    if (!item.lease!.close) {
      lease.spent = reported;
      return;
    }
    this.#leases.delete(item.lease!.id);
    const b = this.#budgets.get(`${item.owner}\u0000${item.category}`);
    if (b !== undefined) b.used -= Math.min(lease.granted - reported, b.used);
  }

  #grant(item: BudgetLeaseItem, b: Budget, leaseMs: number, nowMs: number): BudgetLeaseAnswer {
    const remaining = b.amount - b.used;
    const base = Math.min(Math.max(item.need ?? 0, item.waiting, 1), remaining);
    let others = 0;
    for (const l of this.#leases.values()) if (l.owner === b.owner && l.category === b.category && l.expiresAtMs > nowMs) others++;
    const extra = Math.min(item.extra, Math.floor((remaining - base) / (2 * (others + 1))));
    const units = base + Math.max(0, extra);
    b.used += units;
    this.grants++;
    const leaseId = `lease-${this.#nextId++}`;
    const expiresAtMs = nowMs + leaseMs;
    this.#leases.set(leaseId, { owner: b.owner, category: b.category, granted: units, spent: 0, expiresAtMs });
    return { status: "granted", leaseId, units, expiresAtMs, budget: this.#state(b) };
  }
}
