import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type Db, database } from "../../src/db/client";
import { createUsageMeter } from "../../src/db/usage-meter";
import { monthlyUsage } from "../../src/db/usage-monthly";
import { unique } from "../helpers";
import { failingDb } from "../integration/admin-helpers";

const db = database(env.DB);
const INTERVAL_MS = 60_000;
const MAX_PENDING = 1_000;

function collector() {
  const work: Promise<unknown>[] = [];
  return { waitUntil: (p: Promise<unknown>) => void work.push(p), settle: () => Promise.all(work), get started() { return work.length; } };
}

/** A D1 binding whose batch fails `failures` times, then passes through. */
function flakyBatchDb(failures: number): D1Database {
  let left = failures;
  return new Proxy(env.DB, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop);
      if (prop === "batch" && left > 0) {
        return async () => {
          left -= 1;
          throw new Error("D1_ERROR: simulated batch failure");
        };
      }
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe("usage meter", () => {
  it("writes each tenant's monthly requests, bytes in and net bytes stored, split at the UTC month boundary", async () => {
    const a = unique("meter-a");
    const b = unique("meter-b");
    const meter = createUsageMeter();
    const lastMs = Date.UTC(2032, 0, 31, 23, 59, 59, 999);
    const firstMs = Date.UTC(2032, 1, 1);
    for (let i = 0; i < 5; i++) meter.add(a, "requests", 1, lastMs, MAX_PENDING);
    meter.add(a, "bytes_in", 1_000, lastMs, MAX_PENDING);
    meter.add(a, "bytes_in", 24, lastMs - 1, MAX_PENDING);
    meter.add(a, "bytes_stored", 4_096, lastMs, MAX_PENDING);
    for (let i = 0; i < 3; i++) meter.add(a, "requests", 1, firstMs, MAX_PENDING);
    meter.add(a, "bytes_stored", -1_000, firstMs, MAX_PENDING);
    meter.add(b, "requests", 1, firstMs + 5, MAX_PENDING);
    meter.add(b, "bytes_stored", 500, firstMs + 5, MAX_PENDING);
    meter.add(b, "bytes_stored", -500, firstMs + 6, MAX_PENDING);
    // A caller bug (a fraction, NaN, no time) is ignored, not written, and does not throw.
    meter.add(b, "bytes_in", 0.5, firstMs, MAX_PENDING);
    meter.add(b, "bytes_in", Number.NaN, firstMs, MAX_PENDING);
    meter.add(b, "bytes_in", 1, Number.NaN, MAX_PENDING);
    meter.add(b, "bytes_in", 1, 1e16, MAX_PENDING);

    await meter.flushNow(db, firstMs + 10);

    expect(await monthlyUsage(db, a, "2032-01", "requests")).toBe(5);
    expect(await monthlyUsage(db, a, "2032-01", "bytes_in")).toBe(1_024);
    expect(await monthlyUsage(db, a, "2032-01", "bytes_stored")).toBe(4_096);
    expect(await monthlyUsage(db, a, "2032-02", "requests")).toBe(3);
    expect(await monthlyUsage(db, a, "2032-02", "bytes_stored")).toBe(-1_000);
    expect(await monthlyUsage(db, b, "2032-02", "requests")).toBe(1);
    expect(await monthlyUsage(db, b, "2032-02", "bytes_stored")).toBe(0);
    expect(await monthlyUsage(db, b, "2032-02", "bytes_in")).toBe(0);
    expect(meter.stats).toMatchObject({ pending: 0, dropped: 0, flushes: 1, failedFlushes: 0 });

    // A later flush adds to the rows instead of replacing them.
    meter.add(a, "requests", 2, lastMs, MAX_PENDING);
    meter.add(a, "bytes_stored", -96, lastMs, MAX_PENDING);
    await meter.flushNow(db, firstMs + 20);
    expect(await monthlyUsage(db, a, "2032-01", "requests")).toBe(7);
    expect(await monthlyUsage(db, a, "2032-01", "bytes_stored")).toBe(4_000);
  });

  it("flushes at most once per interval, one interval after the first add, and not at all when idle", async () => {
    const tenant = unique("meter-interval");
    const meter = createUsageMeter();
    const t0 = Date.UTC(2032, 2, 10);
    const c = collector();
    expect(meter.maybeFlush(() => db, t0, INTERVAL_MS, c.waitUntil)).toBe(false);
    meter.add(tenant, "requests", 1, t0, MAX_PENDING);
    expect(meter.maybeFlush(() => db, t0 + INTERVAL_MS - 1, INTERVAL_MS, c.waitUntil)).toBe(false);
    expect(meter.maybeFlush(() => db, t0 + INTERVAL_MS, INTERVAL_MS, c.waitUntil)).toBe(true);
    await c.settle();
    expect(await monthlyUsage(db, tenant, "2032-03", "requests")).toBe(1);

    // A second call within the interval writes nothing, even with deltas pending.
    meter.add(tenant, "requests", 1, t0 + INTERVAL_MS + 1, MAX_PENDING);
    expect(meter.maybeFlush(() => db, t0 + INTERVAL_MS + 1, INTERVAL_MS, c.waitUntil)).toBe(false);
    expect(meter.maybeFlush(() => db, t0 + 2 * INTERVAL_MS - 1, INTERVAL_MS, c.waitUntil)).toBe(false);
    expect(c.started).toBe(1);
    expect(await monthlyUsage(db, tenant, "2032-03", "requests")).toBe(1);
    expect(meter.maybeFlush(() => db, t0 + 2 * INTERVAL_MS, INTERVAL_MS, c.waitUntil)).toBe(true);
    await c.settle();
    expect(await monthlyUsage(db, tenant, "2032-03", "requests")).toBe(2);
    expect(meter.stats).toMatchObject({ pending: 0, flushes: 2 });
  });

  it("asks for the db only when a flush starts, and swallows a waitUntil that throws", async () => {
    const tenant = unique("meter-lazy");
    const meter = createUsageMeter();
    const t0 = Date.UTC(2032, 3, 1);
    let asked = 0;
    const handle = (): Db => {
      asked += 1;
      return db;
    };
    meter.add(tenant, "requests", 1, t0, MAX_PENDING);
    meter.maybeFlush(handle, t0 + 1, INTERVAL_MS, () => undefined);
    expect(asked).toBe(0);
    let work: Promise<unknown> | undefined;
    const started = meter.maybeFlush(handle, t0 + INTERVAL_MS, INTERVAL_MS, (p) => {
      work = p;
      throw new Error("no execution context");
    });
    expect(started).toBe(true);
    await work;
    expect(asked).toBe(1);
    expect(await monthlyUsage(db, tenant, "2032-04", "requests")).toBe(1);
  });

  it("loses nothing when two isolates flush the same rows at the same time", async () => {
    const tenants = [unique("meter-iso-a"), unique("meter-iso-b")];
    const one = createUsageMeter();
    const two = createUsageMeter();
    const t0 = Date.UTC(2032, 4, 15);
    for (let i = 0; i < 40; i++) {
      for (const tenant of tenants) {
        one.add(tenant, "requests", 1, t0 + i, MAX_PENDING);
        two.add(tenant, "requests", 1, t0 + i, MAX_PENDING);
        one.add(tenant, "bytes_in", 10, t0 + i, MAX_PENDING);
        two.add(tenant, "bytes_in", 7, t0 + i, MAX_PENDING);
      }
    }
    // Many tenants in one flush span several INSERTs of one batch.
    const many = Array.from({ length: 60 }, (_, i) => unique(`meter-many${i}`));
    for (const tenant of many) {
      one.add(tenant, "bytes_stored", 3, t0, MAX_PENDING);
      two.add(tenant, "bytes_stored", -1, t0, MAX_PENDING);
    }
    const c = collector();
    expect(one.maybeFlush(() => db, t0 + INTERVAL_MS, INTERVAL_MS, c.waitUntil)).toBe(true);
    expect(two.maybeFlush(() => db, t0 + INTERVAL_MS, INTERVAL_MS, c.waitUntil)).toBe(true);
    await Promise.all([c.settle(), one.flushNow(db, t0 + INTERVAL_MS), two.flushNow(db, t0 + INTERVAL_MS)]);
    for (const tenant of tenants) {
      expect(await monthlyUsage(db, tenant, "2032-05", "requests")).toBe(80);
      expect(await monthlyUsage(db, tenant, "2032-05", "bytes_in")).toBe(40 * 17);
    }
    for (const tenant of many) expect(await monthlyUsage(db, tenant, "2032-05", "bytes_stored")).toBe(2);
  });

  it("keeps the deltas of a failed flush, with those added meanwhile, for the next one", async () => {
    const tenant = unique("meter-retry");
    const meter = createUsageMeter();
    const t0 = Date.UTC(2032, 5, 1);
    const c = collector();
    meter.add(tenant, "requests", 1, t0, MAX_PENDING);
    meter.add(tenant, "bytes_stored", -300, t0, MAX_PENDING);
    const broken = database(flakyBatchDb(1));
    expect(meter.maybeFlush(() => broken, t0 + INTERVAL_MS, INTERVAL_MS, c.waitUntil)).toBe(true);
    meter.add(tenant, "requests", 1, t0 + INTERVAL_MS + 1, MAX_PENDING);
    await c.settle();
    expect(meter.stats).toMatchObject({ failedFlushes: 1, pending: 2, dropped: 0 });
    expect(await monthlyUsage(db, tenant, "2032-06", "requests")).toBe(0);

    // The retry waits for the interval too, then writes everything once.
    expect(meter.maybeFlush(() => broken, t0 + INTERVAL_MS + 2, INTERVAL_MS, c.waitUntil)).toBe(false);
    expect(meter.maybeFlush(() => broken, t0 + 2 * INTERVAL_MS, INTERVAL_MS, c.waitUntil)).toBe(true);
    await c.settle();
    expect(await monthlyUsage(db, tenant, "2032-06", "requests")).toBe(2);
    expect(await monthlyUsage(db, tenant, "2032-06", "bytes_stored")).toBe(-300);
    expect(meter.stats).toMatchObject({ failedFlushes: 1, flushes: 1, pending: 0 });
  });

  it("survives a db that fails every call, and a db handle that throws", async () => {
    const tenant = unique("meter-down");
    const meter = createUsageMeter();
    const t0 = Date.UTC(2032, 6, 1);
    meter.add(tenant, "requests", 4, t0, MAX_PENDING);
    await meter.flushNow(database(failingDb()), t0);
    const c = collector();
    expect(
      meter.maybeFlush(
        () => {
          throw new Error("no binding");
        },
        t0 + INTERVAL_MS,
        INTERVAL_MS,
        c.waitUntil,
      ),
    ).toBe(true);
    await c.settle();
    expect(meter.stats).toMatchObject({ failedFlushes: 2, pending: 1, dropped: 0 });
    await meter.flushNow(db, t0 + INTERVAL_MS);
    expect(await monthlyUsage(db, tenant, "2032-07", "requests")).toBe(4);
  });

  it("drops and counts deltas for new entries when full, still adding to pending ones", async () => {
    const meter = createUsageMeter();
    const tenant = unique("meter-full");
    const t0 = Date.UTC(2032, 7, 1);
    meter.add(tenant, "requests", 1, t0, 2);
    meter.add(tenant, "bytes_in", 100, t0, 2);
    meter.add(tenant, "bytes_stored", 5, t0, 2);
    meter.add(unique("meter-full-other"), "requests", 1, t0, 2);
    meter.add(tenant, "requests", 1, t0, 2);
    meter.add(tenant, "bytes_in", 100, t0, 2);
    expect(meter.droppedCount()).toBe(2);
    expect(meter.stats.pending).toBe(2);
    await meter.flushNow(db, t0);
    expect(await monthlyUsage(db, tenant, "2032-08", "requests")).toBe(2);
    expect(await monthlyUsage(db, tenant, "2032-08", "bytes_in")).toBe(200);
    expect(await monthlyUsage(db, tenant, "2032-08", "bytes_stored")).toBe(0);
  });

  it("puts a failed flush back within the bound, counting the adds it cannot keep", async () => {
    const meter = createUsageMeter();
    const tenant = unique("meter-refill");
    const t0 = Date.UTC(2032, 8, 1);
    const c = collector();
    meter.add(tenant, "requests", 1, t0, 2);
    meter.add(tenant, "requests", 1, t0, 2);
    meter.add(tenant, "bytes_in", 9, t0, 2);
    // Fails asynchronously, as D1 does, so the adds below land while the write is out.
    const broken = database(flakyBatchDb(1));
    expect(meter.maybeFlush(() => broken, t0 + INTERVAL_MS, INTERVAL_MS, c.waitUntil)).toBe(true);
    // While the write is out, two new entries fill the fresh map.
    meter.add(tenant, "bytes_stored", 1, t0 + INTERVAL_MS, 2);
    meter.add(tenant, "requests", 1, t0 + INTERVAL_MS, 2);
    await c.settle();
    // `requests` merged into its pending entry; `bytes_in` had no room.
    expect(meter.stats).toMatchObject({ pending: 2, dropped: 1, failedFlushes: 1 });
    await meter.flushNow(db, t0 + INTERVAL_MS);
    expect(await monthlyUsage(db, tenant, "2032-09", "requests")).toBe(3);
    expect(await monthlyUsage(db, tenant, "2032-09", "bytes_stored")).toBe(1);
    expect(await monthlyUsage(db, tenant, "2032-09", "bytes_in")).toBe(0);
  });
});
