// LimitLedger through its RPC methods, in workerd with real SQLite storage:
// grants charged at grant time, all or nothing across a call's limits, exact
// refusals, give-backs credited less the time since the grant, settlements,
// the standing explain reads, reset, input checks, and the cleanup alarm.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { CLEANUP_GRACE_MS, type LimitLedger } from "../../src/durable/limit-ledger";
import { ledgerStandingOf, resetLedger } from "../../src/durable/ledger-client";
import { compileLimit } from "../../src/engine/limit";

const TEN = { count: 10, window_s: 1, burst: 10 };
const HOURLY = { count: 100, window_s: 3600, burst: 100 };
const stubs: DurableObjectStub<LimitLedger>[] = [];

afterEach(async () => {
  for (const stub of stubs.splice(0)) await runInDurableObject(stub, (_, state) => state.storage.deleteAlarm());
});

function ledger(): { subject: string; stub: DurableObjectStub<LimitLedger> } {
  const subject = `key:${crypto.randomUUID()}`;
  const stub = env.LIMIT_LEDGER.get(env.LIMIT_LEDGER.idFromName(subject));
  stubs.push(stub);
  return { subject, stub };
}

function ask(limit: typeof TEN, need: number, want: number, returning = 0, returningGrantedAtMs = 0) {
  return { limit, need, want, returning, returningGrantedAtMs };
}

describe("LimitLedger", () => {
  it("grants leases charged at grant time, shrinking them near the limit, and refuses with the exact delay", async () => {
    const { stub } = ledger();
    const t = Date.now();
    expect(await stub.grant({ category: "request", nowMs: t, items: [ask(TEN, 1, 4)] })).toEqual({ status: "granted", grants: [{ units: 4, remaining: 6, resetMs: 400 }] });
    expect(await stub.grant({ category: "request", nowMs: t, items: [ask(TEN, 1, 10)] })).toEqual({ status: "granted", grants: [{ units: 3, remaining: 3, resetMs: 700 }] });
    expect(await stub.grant({ category: "request", nowMs: t, items: [ask(TEN, 3, 3)] })).toMatchObject({ status: "granted", grants: [{ units: 3, remaining: 0 }] });
    expect(await stub.grant({ category: "request", nowMs: t + 50, items: [ask(TEN, 2, 2)] })).toEqual({ status: "denied", index: 0, retryAfterMs: 150, remaining: 0, resetMs: 950 });
    expect(await stub.grant({ category: "request", nowMs: t + 200, items: [ask(TEN, 2, 2)] })).toMatchObject({ status: "granted", grants: [{ units: 2 }] });
  });

  it("grants every limit of a call or none: a refusal by one charges no other", async () => {
    const { stub } = ledger();
    const t = Date.now();
    await stub.grant({ category: "request", nowMs: t, items: [ask(HOURLY, 100, 100)] });
    expect(await stub.grant({ category: "request", nowMs: t, items: [ask(TEN, 5, 5), ask(HOURLY, 1, 1)] })).toMatchObject({ status: "denied", index: 1 });
    expect(await stub.standing({ category: "request", nowMs: t, limits: [TEN] })).toEqual([{ remaining: 10, resetMs: 0 }]);
    // Another category is another state.
    expect(await stub.grant({ category: "upload", nowMs: t, items: [ask(HOURLY, 1, 1)] })).toMatchObject({ status: "granted" });
  });

  it("credits given-back units less the time since their grant, with the next ask or alone", async () => {
    const { stub } = ledger();
    const t = Date.now();
    await stub.grant({ category: "request", nowMs: t, items: [ask(TEN, 10, 10)] });
    // 6 units unspent are 600 ms of this limit; 100 ms went by: 500 ms back.
    expect(await stub.giveBack({ category: "request", nowMs: t + 100, returns: [{ limit: TEN, units: 6, grantedAtMs: t }] })).toEqual({ creditedUnits: [500] });
    expect(await stub.standing({ category: "request", nowMs: t + 100, limits: [TEN] })).toEqual([{ remaining: 6, resetMs: 400 }]);
    // Given back with an ask: credited first, then the ask fits.
    const u = Date.now() + 10_000;
    await stub.grant({ category: "request", nowMs: u, items: [ask(TEN, 10, 10)] });
    expect(await stub.grant({ category: "request", nowMs: u + 300, items: [ask(TEN, 5, 5, 10, u)] })).toMatchObject({ status: "granted", grants: [{ units: 5 }] });
  });

  it("settles response-priced debts and refunds, and answers the standing explain reads", async () => {
    const { subject, stub } = ledger();
    const t = Date.now();
    expect(await stub.settle({ category: "tokens", nowMs: t, kind: "debt", units: 25, limits: [TEN] })).toEqual([{ remaining: 0, resetMs: 2500 }]);
    expect(await stub.settle({ category: "tokens", nowMs: t, kind: "refund", units: 20, limits: [TEN] })).toEqual([{ remaining: 5, resetMs: 500 }]);
    const limit = compileLimit(TEN, "global");
    const isolateOnly = compileLimit({ count: 5, window_s: 1 });
    expect(await ledgerStandingOf(env.LIMIT_LEDGER, subject, "tokens", [limit, isolateOnly], t)).toEqual([{ limit, remaining: 5, resetMs: 500 }]);
  });

  it("forgets every state on reset", async () => {
    const { subject, stub } = ledger();
    const t = Date.now();
    await stub.grant({ category: "request", nowMs: t, items: [ask(TEN, 10, 10)] });
    await stub.grant({ category: "upload", nowMs: t, items: [ask(HOURLY, 3, 3)] });
    expect(await resetLedger(env.LIMIT_LEDGER, subject)).toEqual({ states: 2 });
    expect(await stub.grant({ category: "request", nowMs: t, items: [ask(TEN, 10, 10)] })).toMatchObject({ status: "granted", grants: [{ units: 10 }] });
    expect((await stub.stats()).states).toBe(1);
  });

  it("refuses malformed calls with a TypeError naming the field, changing nothing", async () => {
    const { stub } = ledger();
    const t = Date.now();
    const bad: unknown[] = [
      { category: "request", nowMs: t, items: [] },
      { category: "request", nowMs: t, items: [ask(TEN, 0, 1)] },
      { category: "request", nowMs: t, items: [ask({ count: 0, window_s: 1, burst: 1 }, 1, 1)] },
      { category: "request", nowMs: -1, items: [ask(TEN, 1, 1)] },
      { category: "request", nowMs: t, items: [ask(TEN, 1, 1), ask(TEN, 1, 1)] },
      { category: "", nowMs: t, items: [ask(TEN, 1, 1)] },
    ];
    // Called on the instance: a call that throws over RPC is also logged as uncaught by workerd.
    await runInDurableObject(stub, (instance) => {
      for (const req of bad) expect(() => instance.grant(req as never), JSON.stringify(req)).toThrow(/^ledger: /);
      expect(() => instance.settle({ category: "request", nowMs: t, kind: "credit" as never, units: 1, limits: [TEN] })).toThrow(/^ledger: kind/);
      expect(() => instance.giveBack({ category: "request", nowMs: t, returns: [{ limit: TEN, units: 10_000_000, grantedAtMs: t }] })).toThrow(/^ledger: returns\[0\]\.units/);
    });
    expect((await stub.stats()).states).toBe(0);
  });

  it("deletes states earned back longer than the grace ago when its alarm runs, and sets the alarm only while states remain", async () => {
    const { stub } = ledger();
    const t = Date.now();
    await stub.grant({ category: "request", nowMs: t, items: [ask(TEN, 2, 2)] });
    await stub.grant({ category: "upload", nowMs: t + 10 * CLEANUP_GRACE_MS, items: [ask(TEN, 2, 2)] });
    const alarm = await runInDurableObject(stub, (_, state) => state.storage.getAlarm());
    expect(alarm).toBeGreaterThanOrEqual(t + 11 * CLEANUP_GRACE_MS);
    // The first state was earned back 200 ms after t: the alarm run now keeps it (within the grace)...
    await runInDurableObject(stub, (_, state) => state.storage.setAlarm(Date.now()));
    await runDurableObjectAlarm(stub);
    expect((await stub.stats()).states).toBe(2);
    // ...and deletes it once it is older than the grace (moved back in time here).
    await runInDurableObject(stub, (_, state) => {
      state.storage.sql.exec("UPDATE gcra_states SET tat_ceil_ms = ?, seen_ms = ? WHERE category = 'request'", t - CLEANUP_GRACE_MS - 1, t - CLEANUP_GRACE_MS - 1);
      return state.storage.setAlarm(Date.now());
    });
    await runDurableObjectAlarm(stub);
    expect((await stub.stats()).states).toBe(1);
    expect(await runInDurableObject(stub, (_, state) => state.storage.getAlarm())).toBeGreaterThan(Date.now());
  });
});
