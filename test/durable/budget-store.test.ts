// Budgets in the quota objects through real stubs: all-or-nothing reserves,
// exactness under concurrent reserves, settlement (refund and debt), rollover
// on the clock the calls carry, credits and top-ups, thresholds audited once
// per period, and the same store in OrgQuota.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { BudgetReserveRequest } from "../../src/durable/budget-types";
import { unique } from "../helpers";

function tenantObject(prefix: string) {
  const tenant = unique(prefix);
  return { tenant, owner: `tenant:${tenant}`, stub: env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant)) };
}

const MARCH_15 = Date.parse("2026-03-15T12:00:00Z");

function reserve(owner: string, category: string, units: number, nowMs = MARCH_15, extra: Partial<BudgetReserveRequest> = {}): BudgetReserveRequest {
  return { reservationId: crypto.randomUUID(), spends: [{ owner, category, units }], nowMs, ...extra };
}

describe("budget reserves", () => {
  it("admits exactly the amount out of 64 concurrent reserves of 1 against 20", async () => {
    const { owner, stub } = tenantObject("exact");
    await stub.budgetPut({ owner, category: "request", amount: 20, period: "month", nowMs: MARCH_15 });
    const results = await Promise.all(Array.from({ length: 64 }, () => stub.budgetReserve(reserve(owner, "request", 1))));
    expect(results.filter((r) => r.status === "reserved")).toHaveLength(20);
    expect(results.filter((r) => r.status === "exhausted")).toHaveLength(44);
    const [state] = await stub.budgetList(owner, MARCH_15);
    expect(state).toMatchObject({ used: 20, remaining: 0, amount: 20 });
  });

  it("reserves all or nothing across the budgets of one object", async () => {
    const { owner, stub } = tenantObject("all-or-nothing");
    const key = `key:${unique("k")}`;
    await stub.budgetPut({ owner, category: "tokens", amount: 100, period: "day", nowMs: MARCH_15 });
    await stub.budgetPut({ owner: key, category: "tokens", amount: 10, period: "day", nowMs: MARCH_15 });
    const refused = await stub.budgetReserve({ reservationId: crypto.randomUUID(), spends: [{ owner, category: "tokens", units: 11 }, { owner: key, category: "tokens", units: 11 }], nowMs: MARCH_15 });
    expect(refused).toMatchObject({ status: "exhausted", budget: { owner: key, category: "tokens", amount: 10, used: 0, period: "day" } });
    const states = await stub.budgetList(null, MARCH_15);
    expect(states.map((s) => s.used)).toEqual([0, 0]);
  });

  it("answers reserved with no budgets for spends that have none here", async () => {
    const { owner, stub } = tenantObject("none");
    const r = await stub.budgetReserve(reserve(owner, "request", 1));
    expect(r).toEqual({ status: "reserved", budgets: [], exhausted: null, audits: [] });
  });

  it("records a forced reserve past the amount and names the budget that would have refused", async () => {
    const { owner, stub } = tenantObject("force");
    await stub.budgetPut({ owner, category: "request", amount: 1, period: "month", nowMs: MARCH_15 });
    await stub.budgetReserve(reserve(owner, "request", 1));
    const forced = await stub.budgetReserve(reserve(owner, "request", 1, MARCH_15, { force: true }));
    expect(forced).toMatchObject({ status: "reserved", exhausted: { owner, used: 1, amount: 1 } });
    expect((await stub.budgetList(owner, MARCH_15))[0]!.used).toBe(2);
  });

  it("treats a retried reserve as the same reservation", async () => {
    const { owner, stub } = tenantObject("retry");
    await stub.budgetPut({ owner, category: "request", amount: 5, period: "month", nowMs: MARCH_15 });
    const req = reserve(owner, "request", 2);
    await stub.budgetReserve(req);
    await stub.budgetReserve(req);
    expect((await stub.budgetList(owner, MARCH_15))[0]!.used).toBe(2);
  });
});

describe("budget settlement", () => {
  it("refunds below the reserve and charges debt above it, once", async () => {
    const { owner, stub } = tenantObject("settle");
    await stub.budgetPut({ owner, category: "tokens", amount: 1000, period: "month", nowMs: MARCH_15 });
    const a = reserve(owner, "tokens", 500);
    const b = reserve(owner, "tokens", 500);
    await stub.budgetReserve(a);
    await stub.budgetReserve(b);
    expect(await stub.budgetReserve(reserve(owner, "tokens", 1))).toMatchObject({ status: "exhausted" });
    expect(await stub.budgetSettle({ reservationId: a.reservationId, actual: [{ category: "tokens", units: 120 }], nowMs: MARCH_15 })).toMatchObject({ status: "settled", refunded: 380, debt: 0 });
    expect((await stub.budgetList(owner, MARCH_15))[0]!.used).toBe(620);
    expect(await stub.budgetSettle({ reservationId: b.reservationId, actual: [{ category: "tokens", units: 900 }], nowMs: MARCH_15 })).toMatchObject({ status: "settled", debt: 400 });
    // The debt passes the amount: the only excess a budget allows.
    expect((await stub.budgetList(owner, MARCH_15))[0]).toMatchObject({ used: 1020, remaining: 0 });
    expect(await stub.budgetSettle({ reservationId: b.reservationId, actual: [{ category: "tokens", units: 10 }], nowMs: MARCH_15 })).toMatchObject({ status: "unknown", debt: 0, refunded: 0 });
    expect((await stub.budgetList(owner, MARCH_15))[0]!.used).toBe(1020);
    expect(await stub.budgetReserve(reserve(owner, "tokens", 1))).toMatchObject({ status: "exhausted" });
  });

  it("keeps the reserve of a category the settlement does not name, and answers unknown for a reservation it never made", async () => {
    const { owner, stub } = tenantObject("settle-keep");
    await stub.budgetPut({ owner, category: "tokens", amount: 100, period: "month", nowMs: MARCH_15 });
    const a = reserve(owner, "tokens", 10);
    await stub.budgetReserve(a);
    expect(await stub.budgetSettle({ reservationId: a.reservationId, actual: [], nowMs: MARCH_15 })).toMatchObject({ status: "settled", debt: 0, refunded: 0 });
    expect((await stub.budgetList(owner, MARCH_15))[0]!.used).toBe(10);
    expect(await stub.budgetSettle({ reservationId: crypto.randomUUID(), actual: [], nowMs: MARCH_15 })).toMatchObject({ status: "unknown" });
  });

  it("gives no refund to a period that has ended, and charges a late debt to the new one", async () => {
    const { owner, stub } = tenantObject("settle-roll");
    const lastDay = Date.parse("2026-03-31T23:59:59Z");
    const april = Date.parse("2026-04-01T00:00:00Z");
    await stub.budgetPut({ owner, category: "tokens", amount: 100, period: "month", nowMs: lastDay });
    const a = reserve(owner, "tokens", 50, lastDay);
    const b = reserve(owner, "tokens", 10, lastDay);
    await stub.budgetReserve(a);
    await stub.budgetReserve(b);
    // April spends 20 before March's reserves settle: March's refund must not come out of April.
    await stub.budgetReserve(reserve(owner, "tokens", 20, april));
    await stub.budgetSettle({ reservationId: a.reservationId, actual: [{ category: "tokens", units: 0 }], nowMs: april });
    expect((await stub.budgetList(owner, april))[0]!.used).toBe(20);
    await stub.budgetSettle({ reservationId: b.reservationId, actual: [{ category: "tokens", units: 15 }], nowMs: april });
    expect((await stub.budgetList(owner, april))[0]).toMatchObject({ used: 25, periodStartMs: april });
  });
});

describe("reservation rows", () => {
  it("deletes a reservation's rows when it settles, so the table holds only what is unsettled however many requests pass", async () => {
    const { owner, stub } = tenantObject("rows");
    const key = `key:${unique("k")}`;
    for (const o of [owner, key]) await stub.budgetPut({ owner: o, category: "tokens", amount: 1_000_000, period: "month", nowMs: MARCH_15 });
    const rows = () => runInDurableObject(stub, (_, state) => state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM budget_reservations`).one().n);
    const open = [reserve(owner, "tokens", 5), reserve(owner, "tokens", 5)];
    for (const r of open) await stub.budgetReserve(r);
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 100; i++) {
        // Each request reserves from the key's budget and its tenant's: two rows until it settles.
        const r: BudgetReserveRequest = { reservationId: crypto.randomUUID(), spends: [{ owner, category: "tokens", units: 10 }, { owner: key, category: "tokens", units: 10 }], nowMs: MARCH_15 };
        await stub.budgetReserve(r);
        await stub.budgetSettle({ reservationId: r.reservationId, actual: [{ category: "tokens", units: 7 }], nowMs: MARCH_15 });
      }
      expect(await rows()).toBe(open.length);
    }
    expect((await stub.budgetList(owner, MARCH_15))[0]!.used).toBe(300 * 7 + 10);
    for (const r of open) await stub.budgetSettle({ reservationId: r.reservationId, actual: [], nowMs: MARCH_15 });
    expect(await rows()).toBe(0);
  });
});

describe("budget periods in the object", () => {
  it("starts a month budget again at 0 on the 1st at 00:00 UTC, not a millisecond before", async () => {
    const { owner, stub } = tenantObject("month");
    const april = Date.parse("2026-04-01T00:00:00Z");
    await stub.budgetPut({ owner, category: "request", amount: 2, period: "month", nowMs: MARCH_15 });
    await stub.budgetReserve(reserve(owner, "request", 2));
    const before = await stub.budgetReserve(reserve(owner, "request", 1, april - 1));
    expect(before).toMatchObject({ status: "exhausted", budget: { resetsAtMs: april } });
    expect(await stub.budgetReserve(reserve(owner, "request", 2, april))).toMatchObject({ status: "reserved", budgets: [{ used: 2, periodStartMs: april }] });
  });

  it("starts a week budget again on Monday at 00:00 UTC", async () => {
    const { owner, stub } = tenantObject("week");
    const sunday = Date.parse("2026-03-15T23:59:59.999Z");
    const monday = sunday + 1;
    await stub.budgetPut({ owner, category: "request", amount: 1, period: "week", nowMs: sunday });
    await stub.budgetReserve(reserve(owner, "request", 1, sunday));
    expect(await stub.budgetReserve(reserve(owner, "request", 1, sunday))).toMatchObject({ status: "exhausted", budget: { resetsAtMs: monday } });
    expect(await stub.budgetReserve(reserve(owner, "request", 1, monday))).toMatchObject({ status: "reserved" });
  });
});

describe("credits", () => {
  it("never resets credits, adds top-ups to the amount, and refuses a top-up of a periodic budget", async () => {
    const { owner, stub } = tenantObject("credits");
    await stub.budgetPut({ owner, category: "request", amount: 2, period: "none", nowMs: MARCH_15 });
    await stub.budgetReserve(reserve(owner, "request", 2));
    const nextYear = Date.parse("2027-06-01T00:00:00Z");
    expect(await stub.budgetReserve(reserve(owner, "request", 1, nextYear))).toMatchObject({ status: "exhausted", budget: { period: "none", resetsAtMs: null } });
    expect(await stub.budgetTopUp({ owner, category: "request", amount: 3, nowMs: nextYear })).toMatchObject({ status: "topped_up", budget: { amount: 5, used: 2, remaining: 3 } });
    expect(await stub.budgetReserve(reserve(owner, "request", 3, nextYear))).toMatchObject({ status: "reserved" });
    await stub.budgetPut({ owner, category: "tokens", amount: 5, period: "day", nowMs: MARCH_15 });
    expect(await stub.budgetTopUp({ owner, category: "tokens", amount: 3, nowMs: MARCH_15 })).toMatchObject({ status: "periodic" });
    expect(await stub.budgetTopUp({ owner, category: "nothing", amount: 3, nowMs: MARCH_15 })).toEqual({ status: "not_found" });
  });
});

describe("top-ups by idempotency key", () => {
  it("adds a key's top-up once per owner for 24 h, answering a repeat with the first answer, and refuses the key for another amount", async () => {
    const { owner, stub } = tenantObject("idem");
    const key = `key:${unique("k")}`;
    for (const o of [owner, key]) await stub.budgetPut({ owner: o, category: "request", amount: 10, period: "none", nowMs: MARCH_15 });
    const first = await stub.budgetTopUp({ owner, category: "request", amount: 5, nowMs: MARCH_15, idempotencyKey: "ik-1" });
    expect(first).toMatchObject({ status: "topped_up", replayed: false, budget: { amount: 15 } });
    const repeat = await stub.budgetTopUp({ owner, category: "request", amount: 5, nowMs: MARCH_15 + 60_000, idempotencyKey: "ik-1" });
    expect(repeat).toEqual({ ...first, replayed: true });
    expect(await stub.budgetTopUp({ owner, category: "request", amount: 6, nowMs: MARCH_15, idempotencyKey: "ik-1" })).toEqual({ status: "key_reused" });
    // The same key of another owner is that owner's own.
    expect(await stub.budgetTopUp({ owner: key, category: "request", amount: 5, nowMs: MARCH_15, idempotencyKey: "ik-1" })).toMatchObject({ replayed: false, budget: { owner: key, amount: 15 } });
    const dayLater = MARCH_15 + 24 * 3600 * 1000 + 1;
    expect(await stub.budgetTopUp({ owner, category: "request", amount: 5, nowMs: dayLater, idempotencyKey: "ik-1" })).toMatchObject({ replayed: false, budget: { amount: 20 } });
  });
});

describe("thresholds", () => {
  it("hands out each threshold's audit once per budget and period", async () => {
    const { owner, stub } = tenantObject("thresholds");
    await stub.budgetPut({ owner, category: "request", amount: 10, period: "month", nowMs: MARCH_15 });
    const audits: { threshold: number; used: number }[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await stub.budgetReserve(reserve(owner, "request", 1));
      if (r.status === "reserved") audits.push(...r.audits.map((a) => ({ threshold: a.threshold, used: a.used })));
    }
    expect(audits).toEqual([
      { threshold: 0.8, used: 8 },
      { threshold: 1, used: 10 },
    ]);
    const april = Date.parse("2026-04-02T00:00:00Z");
    const next = await stub.budgetReserve(reserve(owner, "request", 9, april));
    expect(next.status === "reserved" && next.audits.map((a) => a.threshold)).toEqual([0.8]);
  });
});

describe("owners", () => {
  it("deletes one budget, one owner's, or every budget of the object", async () => {
    const { owner, stub } = tenantObject("purge");
    const key = `key:${unique("k")}`;
    await stub.budgetPut({ owner, category: "request", amount: 1, period: "day", nowMs: MARCH_15 });
    await stub.budgetPut({ owner, category: "tokens", amount: 1, period: "day", nowMs: MARCH_15 });
    await stub.budgetPut({ owner: key, category: "request", amount: 1, period: "day", nowMs: MARCH_15 });
    expect(await stub.budgetDelete(owner, "tokens")).toBe(true);
    expect(await stub.budgetDelete(owner, "tokens")).toBe(false);
    expect(await stub.budgetPurge(key)).toBe(1);
    expect((await stub.budgetList(null, MARCH_15)).map((s) => `${s.owner}/${s.category}`)).toEqual([`${owner}/request`]);
    expect(await stub.budgetPurge(null)).toBe(1);
    expect(await stub.budgetList(null, MARCH_15)).toEqual([]);
  });

  it("settles a reservation made before a budget was deleted and put again against nothing: no refund from, no debt into the new one", async () => {
    const { owner, stub } = tenantObject("recreate");
    await stub.budgetPut({ owner, category: "tokens", amount: 100, period: "month", nowMs: MARCH_15 });
    const indebted = reserve(owner, "tokens", 0);
    const refunded = reserve(owner, "tokens", 100);
    await stub.budgetReserve(indebted);
    await stub.budgetReserve(refunded);
    expect(await stub.budgetDelete(owner, "tokens")).toBe(true);
    await stub.budgetPut({ owner, category: "tokens", amount: 100, period: "month", nowMs: MARCH_15 });
    await stub.budgetReserve(reserve(owner, "tokens", 100));
    expect((await stub.budgetList(owner, MARCH_15))[0]!.used).toBe(100);
    expect(await stub.budgetSettle({ reservationId: refunded.reservationId, actual: [{ category: "tokens", units: 0 }], nowMs: MARCH_15 })).toMatchObject({ refunded: 0, debt: 0 });
    expect(await stub.budgetSettle({ reservationId: indebted.reservationId, actual: [{ category: "tokens", units: 40 }], nowMs: MARCH_15 })).toMatchObject({ refunded: 0, debt: 0 });
    expect((await stub.budgetList(owner, MARCH_15))[0]).toMatchObject({ used: 100, remaining: 0 });
  });

  it("holds org budgets in the org's object the same way", async () => {
    const org = unique("org");
    const stub = env.ORG_QUOTA.get(env.ORG_QUOTA.idFromName(org));
    const owner = `org:${org}`;
    await stub.budgetPut({ owner, category: "request", amount: 3, period: "month", nowMs: MARCH_15 });
    const results = await Promise.all(Array.from({ length: 10 }, () => stub.budgetReserve(reserve(owner, "request", 1))));
    expect(results.filter((r) => r.status === "reserved")).toHaveLength(3);
  });

  it("refuses a spend that is not a whole number", async () => {
    const { owner, stub } = tenantObject("bad");
    await runInDurableObject(stub, (instance) => {
      expect(() => instance.budgetReserve(reserve(owner, "request", 1.5))).toThrow(/^budget: units/);
      expect(() => instance.budgetPut({ owner, category: "request", amount: 2 ** 53 + 2, period: "day", nowMs: MARCH_15 })).toThrow(/^budget: amount/);
      expect(() => instance.budgetPut({ owner, category: "request", amount: 1, period: "year" as never, nowMs: MARCH_15 })).toThrow(/^budget: period/);
    });
  });
});
