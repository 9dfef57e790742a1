import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { getKey, insertKey } from "../../src/db/keys";
import { putTenant } from "../../src/db/tenants";
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

describe("UsageTracker", () => {
  it("flushes at most once per interval, counting every use, with the latest time and address", async () => {
    const tenant = unique("ut");
    const id = await keyOf(tenant);
    const tracker = new UsageTracker();
    const t0 = Date.UTC(2031, 4, 10);
    const { waitUntil, settle } = collector();
    tracker.recordKeyUse(id, "192.0.2.1", t0, MAX_PENDING, INTERVAL_MS);
    expect(tracker.maybeFlush(() => db, t0, INTERVAL_MS, waitUntil)).toBe(false);
    tracker.recordKeyUse(id, "192.0.2.2", t0 + 10, MAX_PENDING, INTERVAL_MS);
    expect(tracker.maybeFlush(() => db, t0 + INTERVAL_MS - 1, INTERVAL_MS, waitUntil)).toBe(false);
    expect(tracker.maybeFlush(() => db, t0 + INTERVAL_MS, INTERVAL_MS, waitUntil)).toBe(true);
    await settle();
    expect(await getKey(db, id)).toMatchObject({ useCount: 2, lastUsedAt: t0 + 10, lastUsedFrom: "192.0.2.2" });

    tracker.recordKeyUse(id, "192.0.2.3", t0 + INTERVAL_MS + 5, MAX_PENDING, INTERVAL_MS);
    expect(tracker.maybeFlush(() => db, t0 + INTERVAL_MS + 5, INTERVAL_MS, waitUntil)).toBe(false);
    expect(tracker.maybeFlush(() => db, t0 + 2 * INTERVAL_MS, INTERVAL_MS, waitUntil)).toBe(true);
    await settle();
    expect(await getKey(db, id)).toMatchObject({ useCount: 3, lastUsedFrom: "192.0.2.3" });
    expect(tracker.stats).toMatchObject({ pending: 0, dropped: 0, flushes: 2, failedFlushes: 0 });
  });

  it("drops and counts uses of new keys when full, still counting keys already pending", () => {
    const tracker = new UsageTracker();
    tracker.recordKeyUse("k1", "a", 0, 2, INTERVAL_MS);
    tracker.recordKeyUse("k2", "a", 0, 2, INTERVAL_MS);
    tracker.recordKeyUse("k3", "a", 0, 2, INTERVAL_MS);
    tracker.recordKeyUse("k3", "a", 0, 2, INTERVAL_MS);
    tracker.recordKeyUse("k1", "a", 0, 2, INTERVAL_MS);
    expect(tracker.stats).toMatchObject({ pending: 2, dropped: 2 });
  });

  it("puts the figures back when a flush fails, and writes them with the next one", async () => {
    const tenant = unique("retry");
    const id = await keyOf(tenant);
    const tracker = new UsageTracker();
    const t0 = Date.UTC(2031, 5, 1);
    const { waitUntil, settle } = collector();
    tracker.recordKeyUse(id, "192.0.2.9", t0, MAX_PENDING, INTERVAL_MS);
    const down = database(failingDb());
    expect(tracker.maybeFlush(() => down, t0 + INTERVAL_MS, INTERVAL_MS, waitUntil)).toBe(true);
    await settle();
    expect(tracker.stats).toMatchObject({ failedFlushes: 1, pending: 1 });
    tracker.recordKeyUse(id, "192.0.2.9", t0 + INTERVAL_MS + 1, MAX_PENDING, INTERVAL_MS);
    expect(tracker.maybeFlush(() => db, t0 + 2 * INTERVAL_MS, INTERVAL_MS, waitUntil)).toBe(true);
    await settle();
    expect(await getKey(db, id)).toMatchObject({ useCount: 2 });
  });

  it("stays within max_pending when a failed flush's keys are put back (issue 10 item 14)", async () => {
    const tracker = new UsageTracker();
    const { waitUntil, settle } = collector();
    const t0 = Date.UTC(2031, 6, 1);
    // Two keys pending, then a flush that fails.
    tracker.recordKeyUse("old-1", "a", t0, 2, INTERVAL_MS);
    tracker.recordKeyUse("old-2", "a", t0, 2, INTERVAL_MS);
    let release!: () => void;
    const slowFailure = new Promise<void>((resolve) => (release = resolve));
    const failing = { batch: async () => { await slowFailure; throw new Error("D1 down"); } } as unknown as ReturnType<typeof database>;
    expect(tracker.maybeFlush(() => failing, t0 + INTERVAL_MS, INTERVAL_MS, waitUntil)).toBe(true);
    // While it is being written, two new keys fill the accumulator again.
    tracker.recordKeyUse("new-1", "a", t0 + INTERVAL_MS, 2, INTERVAL_MS);
    tracker.recordKeyUse("new-2", "a", t0 + INTERVAL_MS, 2, INTERVAL_MS);
    release();
    await settle();
    // The failed keys do not push it past its bound: they are dropped and counted.
    expect(tracker.stats).toMatchObject({ pending: 2, dropped: 2, failedFlushes: 1 });
  });
});
