// What a LimitLedger records for GET /global/accuracy, through its RPC
// methods in workerd: units granted and given back, asks and refusals per
// minute and limit, calls and their busiest second; the directory every
// ledger with calls registers with (never an address); and the alarm that
// keeps those minutes two hours. Each test runs on its own clock, far from
// the others' (the directory is one object for the whole suite).
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { LimitLedger } from "../../src/durable/limit-ledger";
import { ACCURACY_RETAIN_MS, MINUTE_MS, REGISTER_EVERY_MS } from "../../src/durable/ledger-accuracy";
import { askLedger, ledgerAccuracyOf, ledgerLabelOf, listLedgers } from "../../src/durable/ledger-client";
import { LeaseBook } from "../../src/engine/lease-book";
import { compileLimit } from "../../src/engine/limit";
import { eventually } from "../helpers";

const TEN = { count: 10, window_s: 1, burst: 10 };
const PER_MINUTE = { count: 600, window_s: 60, burst: 60 };
const stubs: DurableObjectStub<LimitLedger>[] = [];

afterEach(async () => {
  for (const stub of stubs.splice(0)) await runInDurableObject(stub, (_, state) => state.storage.deleteAlarm());
});

function ledger(kind = "key"): { subject: string; id: string; stub: DurableObjectStub<LimitLedger> } {
  const subject = `${kind}:${crypto.randomUUID()}`;
  const id = env.LIMIT_LEDGER.idFromName(subject);
  const stub = env.LIMIT_LEDGER.get(id);
  stubs.push(stub);
  return { subject, id: id.toString(), stub };
}

/** A clock of the test's own, on a minute boundary, far from every other test's. */
function clock(): number {
  const t = Date.now() + Math.floor(Math.random() * 1000 + 500) * 86_400_000;
  return t - (t % MINUTE_MS);
}

function ask(limit: typeof TEN, need: number, want: number, returning = 0, returningGrantedAtMs = 0) {
  return { limit, need, want, returning, returningGrantedAtMs };
}

describe("LimitLedger accuracy", () => {
  it("counts per minute and limit the units granted and given back, the asks and the refused ones, and its calls", async () => {
    const { id, stub } = ledger();
    const t = clock();
    await stub.grant({ category: "request", nowMs: t, items: [ask(TEN, 4, 4), ask(PER_MINUTE, 4, 4)] });
    await stub.grant({ category: "request", nowMs: t + 10, items: [ask(TEN, 6, 6), ask(PER_MINUTE, 6, 6)] });
    // The burst of TEN is spent: refused on it, nothing granted on either.
    await stub.grant({ category: "request", nowMs: t + 20, items: [ask(TEN, 1, 1), ask(PER_MINUTE, 1, 1)] });
    await stub.giveBack({ category: "request", nowMs: t + MINUTE_MS, returns: [{ limit: PER_MINUTE, units: 3, grantedAtMs: t + 10 }] });
    await stub.standing({ category: "request", nowMs: t + MINUTE_MS + 1, limits: [TEN] });

    const report = await ledgerAccuracyOf(env.LIMIT_LEDGER, id, t, t + 2 * MINUTE_MS);
    expect(report.calls).toBe(5);
    expect(report.firstCallMinuteMs).toBe(t);
    expect(report.peakCallsPerS).toBe(3);
    const ten = report.limits.find((l) => l.limit.window_s === 1)!;
    const perMinute = report.limits.find((l) => l.limit.window_s === 60)!;
    expect(ten).toEqual({ category: "request", limit: TEN, grantedUnits: 10, returnedUnits: 0, asks: 3, refusedAsks: 1, firstMinuteMs: t, lastMinuteMs: t, busiestMinuteMs: t, busiestMinuteUnits: 10 });
    expect(perMinute).toEqual({ category: "request", limit: PER_MINUTE, grantedUnits: 10, returnedUnits: 3, asks: 3, refusedAsks: 0, firstMinuteMs: t, lastMinuteMs: t + MINUTE_MS, busiestMinuteMs: t, busiestMinuteUnits: 10 });

    // Only the minutes asked about.
    const later = await ledgerAccuracyOf(env.LIMIT_LEDGER, id, t + 1, t + 2 * MINUTE_MS);
    expect(later.calls).toBe(2);
    expect(later.limits).toEqual([{ ...perMinute, grantedUnits: 0, asks: 0, firstMinuteMs: t + MINUTE_MS, busiestMinuteMs: t + MINUTE_MS, busiestMinuteUnits: -3 }]);
  });

  it("registers with the directory under its callers' label at most every ten minutes, busiest first, never naming an address", async () => {
    const t = clock();
    const busy = ledger("tenant");
    const quiet = ledger("tenant");
    for (let i = 0; i < 3; i++) await busy.stub.grant({ category: "request", nowMs: t + i, items: [ask(PER_MINUTE, 1, 1)], label: busy.subject });
    await quiet.stub.grant({ category: "request", nowMs: t, items: [ask(PER_MINUTE, 1, 1)], label: quiet.subject });
    await eventually(async () => (await listLedgers(env.LIMIT_LEDGER, t, 10)).seen === 2, "both ledgers registered");
    // The first grant registered each (one call each); the busy one's next two wait for the next registration.
    const byId = (a: { ledgerId: string }, b: { ledgerId: string }) => a.ledgerId.localeCompare(b.ledgerId);
    expect((await listLedgers(env.LIMIT_LEDGER, t, 10)).ledgers.sort(byId)).toEqual(
      [
        { ledgerId: busy.id, label: busy.subject, seenMs: t, calls: 1 },
        { ledgerId: quiet.id, label: quiet.subject, seenMs: t, calls: 1 },
      ].sort(byId),
    );
    await busy.stub.grant({ category: "request", nowMs: t + REGISTER_EVERY_MS, items: [ask(PER_MINUTE, 1, 1)], label: busy.subject });
    await eventually(async () => (await listLedgers(env.LIMIT_LEDGER, t, 10)).ledgers[0]?.calls === 3, "the busy ledger registered again with its three calls since");
    expect((await listLedgers(env.LIMIT_LEDGER, t, 1)).ledgers.map((l) => l.ledgerId)).toEqual([busy.id]);
    expect((await listLedgers(env.LIMIT_LEDGER, t + 1, 10)).ledgers.map((l) => l.ledgerId)).toEqual([busy.id]);

    // An address is never a label: the edge sends `ip`, and the ledger refuses one that names an address.
    expect(ledgerLabelOf("ip:203.0.113.7")).toBe("ip");
    expect(ledgerLabelOf("tenant:acme")).toBe("tenant:acme");
    const addressed = ledger("ip");
    await runInDurableObject(addressed.stub, (instance) => {
      expect(() => instance.grant({ category: "request", nowMs: t, items: [ask(TEN, 1, 1)], label: "ip:203.0.113.7" })).toThrow(/^ledger: label must not name an address/);
    });
  });

  it("sends the label with every ask from the edge", async () => {
    const t = clock();
    const { subject, id } = ledger("jwt");
    const book = new LeaseBook({ maxOvershoot: 0.02, minLeaseMs: 50, maxGroups: 4, ledgerRetryMs: 1000 });
    const group = book.group(subject, "request", t);
    const slot = book.slot(group, compileLimit({ ...PER_MINUTE, scope: "global" }), t);
    const reply = await askLedger(env.LIMIT_LEDGER, book.askFor(group, [{ slot, need: 1 }], t));
    expect(reply.status).toBe("granted");
    await eventually(async () => (await listLedgers(env.LIMIT_LEDGER, t, 10)).ledgers.some((l) => l.ledgerId === id && l.label === subject), "registered under the subject");
  });

  it("keeps the minutes two hours: the alarm deletes older ones and runs again while any are left", async () => {
    const { id, stub } = ledger();
    const t = Date.now() - (Date.now() % MINUTE_MS);
    await stub.grant({ category: "request", nowMs: t, items: [ask(PER_MINUTE, 1, 1)] });
    await runInDurableObject(stub, (_, state) => {
      // One minute from before the retention, as if written then.
      state.storage.sql.exec("INSERT INTO accuracy_minutes (minute_ms, category, limit_key, granted_units, returned_units, asks, refused_asks) VALUES (?, 'request', '600/60000/60', 5, 0, 1, 0)", t - ACCURACY_RETAIN_MS - MINUTE_MS);
      state.storage.sql.exec("INSERT INTO call_minutes (minute_ms, calls, peak_per_s) VALUES (?, 1, 1)", t - ACCURACY_RETAIN_MS - MINUTE_MS);
      return state.storage.setAlarm(Date.now());
    });
    expect((await ledgerAccuracyOf(env.LIMIT_LEDGER, id, 0, t)).calls).toBe(2);
    await runDurableObjectAlarm(stub);
    const kept = await ledgerAccuracyOf(env.LIMIT_LEDGER, id, 0, t);
    expect(kept.calls).toBe(1);
    expect(kept.limits.map((l) => l.grantedUnits)).toEqual([1]);
    expect(await runInDurableObject(stub, (_, state) => state.storage.getAlarm())).toBeGreaterThanOrEqual(t + ACCURACY_RETAIN_MS);
  });
});
