// The LimitLedger Durable Object as the simulation runs it: the same input
// checks (ledger-types.ts) and the same exact moves (ledger-gcra.ts
// answerAsk, giveBack) that src/durable/limit-ledger.ts makes inside its
// transaction, on states held in a Map instead of SQLite, behind a SimObject
// (deployment.ts) that adds the distance and the queue. Each simulated
// isolate gets its own namespace, so the object knows how far away the
// caller is.
import type { LedgerNamespace } from "../../src/durable/ledger-client";
import {
  giveBackInput,
  grantInput,
  type LedgerFigures,
  type LedgerGiveBackRequest,
  type LedgerGrantRequest,
  type LedgerGrantResult,
  type LedgerSettleRequest,
  limitKeyOf,
} from "../../src/durable/ledger-types";
import { answerAsk, EMPTY_STATE, type GcraState, giveBack } from "../../src/engine/ledger-gcra";
import type { Limit } from "../../src/engine/limit";
import type { SimObject } from "./deployment";

interface Row {
  state: GcraState;
  seenMs: number;
}

export class LedgerModel {
  readonly #rows = new Map<string, Row>();
  readonly #object: SimObject;
  grants = 0;
  grantedUnits = 0;
  denials = 0;
  giveBacks = 0;

  constructor(object: SimObject) {
    this.#object = object;
  }

  /** The namespace an isolate `rttMs` from the object binds: every subject lands on this one object. */
  namespaceFor(rttMs: number): LedgerNamespace {
    const stub = {
      grant: (req: LedgerGrantRequest): Promise<LedgerGrantResult> => this.#object.call(rttMs, () => this.#grant(req)),
      giveBack: (req: LedgerGiveBackRequest): Promise<{ creditedUnits: number[] }> => this.#object.call(rttMs, () => this.#giveBack(req)),
      settle: (_req: LedgerSettleRequest): Promise<LedgerFigures[]> => Promise.reject(new Error("settle is not simulated")),
    };
    return { idFromName: (name: string) => name, get: () => stub } as unknown as LedgerNamespace;
  }

  #row(category: string, limit: Limit): Row {
    return this.#rows.get(`${category}\u0000${limitKeyOf(limit)}`) ?? { state: EMPTY_STATE, seenMs: 0 };
  }

  #write(category: string, limit: Limit, state: GcraState, nowMs: number): void {
    const key = `${category}\u0000${limitKeyOf(limit)}`;
    const seenMs = Math.max(this.#rows.get(key)?.seenMs ?? 0, Math.floor(nowMs));
    this.#rows.set(key, { state, seenMs });
  }

  #grant(req: LedgerGrantRequest): LedgerGrantResult {
    const { category, nowMs, items } = grantInput(req);
    const asks = items.map((item) => ({ ...item, ...this.#row(category, item.limit) }));
    const outcome = answerAsk(asks, nowMs);
    items.forEach((item, k) => {
      if (outcome.granted || item.returning > 0) this.#write(category, item.limit, outcome.states[k]!, nowMs);
    });
    if (!outcome.granted) {
      this.denials++;
      return { status: "denied", index: outcome.index, retryAfterMs: outcome.retryAfterMs, ...outcome.standing };
    }
    this.grants++;
    for (const g of outcome.grants) this.grantedUnits += g.units;
    return { status: "granted", grants: outcome.grants.map((g) => ({ units: g.units, ...g.standing })) };
  }

  #giveBack(req: LedgerGiveBackRequest): { creditedUnits: number[] } {
    this.giveBacks++;
    const { category, nowMs, returns } = giveBackInput(req);
    return {
      creditedUnits: returns.map((r) => {
        const row = this.#row(category, r.limit);
        const back = giveBack(r.limit, row.state, r.units, r.grantedAtMs, nowMs, row.seenMs);
        if (back.creditedUnits > 0) this.#write(category, r.limit, back.state, nowMs);
        return back.creditedUnits;
      }),
    };
  }
}
