// Key usage (src/identity/usage-tracker.ts) is written with metering: every
// flush of the meter it rides (src/db/usage-meter.ts) writes the keys' use
// too, in the interval, on a quiet isolate's idle write and on flushNow.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { getKey, insertKey } from "../../src/db/keys";
import { putTenant } from "../../src/db/tenants";
import { createUsageMeter } from "../../src/db/usage-meter";
import { UsageTracker } from "../../src/identity/usage-tracker";
import { unique } from "../helpers";
import { failingDb } from "../integration/admin-helpers";

const db = database(env.DB);
const INTERVAL_MS = 60_000;
const MAX_PENDING = 100;

async function keyOf(tenant: string): Promise<string> {
  const id = `${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  await db.batch([
    putTenant(db, { slug: tenant, limits: "{}", quota: "{}", createdAt: 1, updatedAt: 1 }),
    insertKey(db, { id, tenant, name: "n", digest: unique("d"), prefix: "p", createdAt: 1, expiresAt: null, limits: null }),
  ]);
  return id;
}

function collector() {
  const work: Promise<unknown>[] = [];
  return { waitUntil: (p: Promise<unknown>) => void work.push(p), settle: () => Promise.all(work) };
}

/** A tracker riding a meter of its own, as a runtime wires them. */
function wired() {
  const keys = new UsageTracker();
  return { keys, meter: createUsageMeter(keys) };
}

describe("key usage, written with metering", () => {
  it("is written by the meter's interval flush, every use counted, with the latest time and address", async () => {
    const tenant = unique("ut");
    const id = await keyOf(tenant);
    const { keys, meter } = wired();
    const t0 = Date.UTC(2031, 4, 10);
    const { waitUntil, settle } = collector();
    keys.recordKeyUse(id, "192.0.2.1", t0, MAX_PENDING);
    meter.add(tenant, "requests", 1, t0, MAX_PENDING);
    keys.recordKeyUse(id, "192.0.2.2", t0 + 10, MAX_PENDING);
    meter.add(tenant, "requests", 1, t0 + 10, MAX_PENDING);
    expect(meter.maybeFlush(() => db, t0 + INTERVAL_MS - 1, INTERVAL_MS, waitUntil)).toBe(false);
    expect(await getKey(db, id)).toMatchObject({ useCount: 0, lastUsedAt: null });
    expect(meter.maybeFlush(() => db, t0 + INTERVAL_MS, INTERVAL_MS, waitUntil)).toBe(true);
    await settle();
    expect(await getKey(db, id)).toMatchObject({ useCount: 2, lastUsedAt: t0 + 10, lastUsedFrom: "192.0.2.2" });

    keys.recordKeyUse(id, "192.0.2.3", t0 + INTERVAL_MS + 5, MAX_PENDING);
    meter.add(tenant, "requests", 1, t0 + INTERVAL_MS + 5, MAX_PENDING);
    expect(meter.maybeFlush(() => db, t0 + 2 * INTERVAL_MS, INTERVAL_MS, waitUntil)).toBe(true);
    await settle();
    expect(await getKey(db, id)).toMatchObject({ useCount: 3, lastUsedFrom: "192.0.2.3" });
    expect(keys.stats).toMatchObject({ pending: 0, dropped: 0, flushes: 2, failedFlushes: 0 });
  });

  it("is written by a quiet isolate's idle write, long before the interval, and by flushNow", async () => {
    const tenant = unique("ut-idle");
    const id = await keyOf(tenant);
    const { keys, meter } = wired();
    const t0 = Date.UTC(2031, 4, 11);
    const { waitUntil, settle } = collector();
    keys.recordKeyUse(id, "192.0.2.4", t0, MAX_PENDING);
    meter.add(tenant, "requests", 1, t0, MAX_PENDING);
    meter.flushIdle(() => db, t0, waitUntil);
    await settle();
    expect(await getKey(db, id)).toMatchObject({ useCount: 1, lastUsedAt: t0, lastUsedFrom: "192.0.2.4" });

    keys.recordKeyUse(id, "192.0.2.5", t0 + 1, MAX_PENDING);
    await meter.flushNow(db, t0 + 1);
    expect(await getKey(db, id)).toMatchObject({ useCount: 2, lastUsedFrom: "192.0.2.5" });
  });

  it("counts as pending for the meter, so a meter with nothing of its own still writes it", async () => {
    const tenant = unique("ut-alone");
    const id = await keyOf(tenant);
    const { keys, meter } = wired();
    expect(meter.hasPending).toBe(false);
    keys.recordKeyUse(id, "192.0.2.6", Date.UTC(2031, 4, 12), MAX_PENDING);
    expect(meter.hasPending).toBe(true);
    await meter.flushNow(db, Date.UTC(2031, 4, 12));
    expect(await getKey(db, id)).toMatchObject({ useCount: 1 });
    expect(meter.hasPending).toBe(false);
  });

  it("drops and counts uses of new keys when full, still counting keys already pending", () => {
    const tracker = new UsageTracker();
    tracker.recordKeyUse("k1", "a", 0, 2);
    tracker.recordKeyUse("k2", "a", 0, 2);
    tracker.recordKeyUse("k3", "a", 0, 2);
    tracker.recordKeyUse("k3", "a", 0, 2);
    tracker.recordKeyUse("k1", "a", 0, 2);
    expect(tracker.stats).toMatchObject({ pending: 2, dropped: 2 });
  });

  it("puts the figures back when a flush fails, and writes them with the next one", async () => {
    const tenant = unique("retry");
    const id = await keyOf(tenant);
    const { keys, meter } = wired();
    const t0 = Date.UTC(2031, 5, 1);
    keys.recordKeyUse(id, "192.0.2.9", t0, MAX_PENDING);
    meter.add(tenant, "requests", 1, t0, MAX_PENDING);
    await meter.flushNow(database(failingDb()), t0);
    expect(keys.stats).toMatchObject({ failedFlushes: 1, pending: 1 });
    keys.recordKeyUse(id, "192.0.2.9", t0 + 1, MAX_PENDING);
    await meter.flushNow(db, t0 + 1);
    expect(await getKey(db, id)).toMatchObject({ useCount: 2 });
  });

  it("stays within max_pending when a failed flush's keys are put back (issue 10 item 14)", async () => {
    const tracker = new UsageTracker();
    // Two keys pending, then a flush that fails.
    tracker.recordKeyUse("old-1", "a", 0, 2);
    tracker.recordKeyUse("old-2", "a", 0, 2);
    let release!: () => void;
    const slowFailure = new Promise<void>((resolve) => (release = resolve));
    const failing = { batch: async () => { await slowFailure; throw new Error("D1 down"); } } as unknown as ReturnType<typeof database>;
    const flushed = tracker.flush(() => failing);
    // While it is being written, two new keys fill the accumulator again.
    tracker.recordKeyUse("new-1", "a", 1, 2);
    tracker.recordKeyUse("new-2", "a", 1, 2);
    release();
    await flushed;
    // The failed keys do not push it past its bound: they are dropped and counted.
    expect(tracker.stats).toMatchObject({ pending: 2, dropped: 2, failedFlushes: 1 });
  });
});
