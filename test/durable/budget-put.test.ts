// A budget written again: the same period kind keeps this period's spend, a
// new kind starts at 0, and a reservation taken before the change refunds
// no more than the budget holds (used never goes below 0).
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { unique } from "../helpers";

/** 2026-03-01, a Sunday: its day and its month start at the same instant, 00:00 UTC. */
const MARCH_1_NOON = Date.parse("2026-03-01T12:00:00Z");

function tenantObject() {
  const tenant = unique("budget-put");
  return { owner: `tenant:${tenant}`, stub: env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant)) };
}

describe("a budget put again", () => {
  it("keeps this period's spend under the same period kind and starts a new kind at 0", async () => {
    const { owner, stub } = tenantObject();
    await stub.budgetPut({ owner, category: "request", amount: 100, period: "month", nowMs: MARCH_1_NOON });
    expect((await stub.budgetReserve({ reservationId: crypto.randomUUID(), spends: [{ owner, category: "request", units: 10 }], nowMs: MARCH_1_NOON })).status).toBe("reserved");
    await stub.budgetPut({ owner, category: "request", amount: 50, period: "month", nowMs: MARCH_1_NOON });
    expect(await stub.budgetList(owner, MARCH_1_NOON)).toEqual([expect.objectContaining({ period: "month", amount: 50, used: 10 })]);
    await stub.budgetPut({ owner, category: "request", amount: 50, period: "day", nowMs: MARCH_1_NOON });
    expect(await stub.budgetList(owner, MARCH_1_NOON)).toEqual([expect.objectContaining({ period: "day", amount: 50, used: 0, remaining: 50 })]);
  });

  it("refunds a reservation taken before the change no further than 0", async () => {
    const { owner, stub } = tenantObject();
    await stub.budgetPut({ owner, category: "request", amount: 100, period: "month", nowMs: MARCH_1_NOON });
    const reservationId = crypto.randomUUID();
    expect((await stub.budgetReserve({ reservationId, spends: [{ owner, category: "request", units: 10 }], nowMs: MARCH_1_NOON })).status).toBe("reserved");
    // A day budget from now: a new kind starts at 0, in a period that began when the month's did.
    await stub.budgetPut({ owner, category: "request", amount: 100, period: "day", nowMs: MARCH_1_NOON });
    await stub.budgetSettle({ reservationId, actual: [{ category: "request", units: 0 }], nowMs: MARCH_1_NOON });
    expect(await stub.budgetList(owner, MARCH_1_NOON)).toEqual([expect.objectContaining({ used: 0, remaining: 100 })]);
  });
});
