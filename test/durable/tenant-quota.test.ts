// TenantQuota through real stubs: reserve, commit, release, remove, dedup,
// exceeded figures, replays, concurrency and eviction. Every test uses its own
// tenant (storage is isolated per file, not per test) and checks that the
// counters equal the sum of the owner rows after each change.
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { QuotaLimits, ReserveRequest } from "../../src/durable/quota-types";
import type { TenantQuota } from "../../src/durable/tenant-quota";
import { clearQuotaAlarms, quotaObject } from "./quota-object";


afterEach(async () => {
  await clearQuotaAlarms();
});

async function expectCountersMatchOwners(stub: DurableObjectStub<TenantQuota>): Promise<void> {
  const { counters, owners } = await runInDurableObject(stub, (_, state) => {
    const sql = state.storage.sql;
    const c = sql.exec<{ bytes: number; objects: number }>("SELECT bytes, objects FROM counters").one();
    const o = sql.exec<{ bytes: number; objects: number }>("SELECT COALESCE(SUM(bytes), 0) AS bytes, COUNT(*) AS objects FROM owners").one();
    return { counters: { bytes: c.bytes, objects: c.objects }, owners: { bytes: o.bytes, objects: o.objects } };
  });
  expect(counters).toEqual(owners);
}

function upload(tenant: string, object: string, bytes: number, quota: QuotaLimits = {}): ReserveRequest {
  return { tenant, object, bytes, quota, reservationId: crypto.randomUUID(), nowMs: Date.now() };
}

async function store(stub: DurableObjectStub<TenantQuota>, req: ReserveRequest): Promise<void> {
  const r = await stub.reserve(req);
  expect(r.status).toBe("reserved");
  const c = await stub.commit({ reservationId: req.reservationId, nowMs: Date.now(), quota: req.quota });
  expect(c.status).toBe("committed");
}

describe("reserve and commit", () => {
  it("holds a reservation, then commits it to an owner record counted once", async () => {
    const { tenant, stub } = quotaObject("commit");
    const req = upload(tenant, "a.bin", 100, { bytes: { hard: 1000 } });
    expect(await stub.reserve(req)).toEqual({
      status: "reserved",
      reservationId: req.reservationId,
      growthBytes: 100,
      growthObjects: 1,
      report: { seq: 1, bytes: 0, objects: 0, heldBytes: 100, heldObjects: 1 },
    });
    expect(await stub.usage()).toEqual({ bytes: 0, objects: 0, reserved_bytes: 100, reserved_objects: 1, reservations: 1 });
    await expectCountersMatchOwners(stub);

    const c = await stub.commit({ reservationId: req.reservationId, nowMs: Date.now(), quota: req.quota });
    expect(c).toEqual({
      status: "committed",
      bytes: 100,
      objects: 1,
      deltaBytes: 100,
      deltaObjects: 1,
      late: false,
      warnings: [],
      audit: null,
      report: { seq: 2, bytes: 100, objects: 1, heldBytes: 0, heldObjects: 0 },
    });
    expect(await stub.usage()).toEqual({ bytes: 100, objects: 1, reserved_bytes: 0, reserved_objects: 0, reservations: 0 });
    await expectCountersMatchOwners(stub);
  });

  it("treats an unset quota as unlimited", async () => {
    const { tenant, stub } = quotaObject("unlimited");
    const r = await stub.reserve(upload(tenant, "huge.bin", Number.MAX_SAFE_INTEGER));
    expect(r.status).toBe("reserved");
  });

  it("reserves nothing for an object the tenant already owns at that size (dedup), and its commit changes nothing", async () => {
    const { tenant, stub } = quotaObject("dedup");
    const quota = { bytes: { hard: 150 } };
    await store(stub, upload(tenant, "same.bin", 100, quota));
    const again = upload(tenant, "same.bin", 100, quota);
    expect(await stub.reserve(again)).toMatchObject({ status: "reserved", growthBytes: 0, growthObjects: 0 });
    expect(await stub.usage()).toEqual({ bytes: 100, objects: 1, reserved_bytes: 0, reserved_objects: 0, reservations: 1 });
    expect(await stub.commit({ reservationId: again.reservationId, nowMs: Date.now(), quota })).toMatchObject({ status: "committed", deltaBytes: 0, deltaObjects: 0 });
    expect(await stub.usage()).toEqual({ bytes: 100, objects: 1, reserved_bytes: 0, reserved_objects: 0, reservations: 0 });
    await expectCountersMatchOwners(stub);
  });

  it("returns the same reservation to a retried reserve without charging twice", async () => {
    const { tenant, stub } = quotaObject("retry");
    const req = upload(tenant, "r.bin", 100, { bytes: { hard: 150 } });
    expect((await stub.reserve(req)).status).toBe("reserved");
    expect(await stub.reserve(req)).toMatchObject({ status: "reserved", reservationId: req.reservationId, growthBytes: 100, growthObjects: 1 });
    expect((await stub.usage()).reserved_bytes).toBe(100);
  });

  it("holds the larger of two racing first uploads of one object, and counts the last commit's size once", async () => {
    const { tenant, stub } = quotaObject("race");
    const first = upload(tenant, "raced.bin", 100);
    const second = upload(tenant, "raced.bin", 150);
    expect(await stub.reserve(first)).toMatchObject({ status: "reserved", growthBytes: 100, growthObjects: 1 });
    // Only one size can end up stored: the tenant holds the larger, once (the growth named is each upload's own).
    expect(await stub.reserve(second)).toMatchObject({ status: "reserved", growthBytes: 150, growthObjects: 1 });
    expect(await stub.usage()).toMatchObject({ reserved_bytes: 150, reserved_objects: 1, reservations: 2 });
    const a = await stub.commit({ reservationId: first.reservationId, nowMs: Date.now(), quota: {} });
    expect(a).toMatchObject({ status: "committed", bytes: 100, objects: 1, deltaBytes: 100, deltaObjects: 1 });
    const b = await stub.commit({ reservationId: second.reservationId, nowMs: Date.now(), quota: {} });
    expect(b).toMatchObject({ status: "committed", bytes: 150, objects: 1, deltaBytes: 50, deltaObjects: 0 });
    expect(await stub.usage()).toEqual({ bytes: 150, objects: 1, reserved_bytes: 0, reserved_objects: 0, reservations: 0 });
    await expectCountersMatchOwners(stub);
  });
});

describe("hard quota", () => {
  it("refuses bytes with usage that includes live reservations, and the hard limit", async () => {
    const { tenant, stub } = quotaObject("hard-bytes");
    const quota = { bytes: { hard: 1000 } };
    await store(stub, upload(tenant, "committed.bin", 600, quota));
    expect((await stub.reserve(upload(tenant, "inflight.bin", 300, quota))).status).toBe("reserved");
    const r = await stub.reserve(upload(tenant, "toobig.bin", 200, quota));
    expect(r).toEqual({
      status: "exceeded",
      kind: "bytes",
      quota: 1000,
      usage: 900,
      requested: 200,
      audit: { kind: "quota_hard_exceeded", tenant, quotaKind: "bytes", usage: 900, limit: 1000, requested: 200 },
    });
    // Exactly filling the quota is allowed.
    expect((await stub.reserve(upload(tenant, "fits.bin", 100, quota))).status).toBe("reserved");
    expect(await stub.usage()).toEqual({ bytes: 600, objects: 1, reserved_bytes: 400, reserved_objects: 2, reservations: 2 });
    await expectCountersMatchOwners(stub);
  });

  it("refuses objects once committed objects plus live reservations reach the hard limit", async () => {
    const { tenant, stub } = quotaObject("hard-objects");
    const quota = { objects: { hard: 2 } };
    await store(stub, upload(tenant, "one", 1, quota));
    expect((await stub.reserve(upload(tenant, "two", 1, quota))).status).toBe("reserved");
    const r = await stub.reserve(upload(tenant, "three", 1, quota));
    expect(r).toMatchObject({ status: "exceeded", kind: "objects", quota: 2, usage: 2, requested: 1 });
  });

  it("counts a reservation only while it is live: a release makes room again", async () => {
    const { tenant, stub } = quotaObject("live");
    const quota = { bytes: { hard: 100 } };
    const held = upload(tenant, "held.bin", 100, quota);
    expect((await stub.reserve(held)).status).toBe("reserved");
    expect((await stub.reserve(upload(tenant, "more.bin", 1, quota))).status).toBe("exceeded");
    const rel = await stub.release({ reservationId: held.reservationId, nowMs: Date.now() });
    expect(rel).toMatchObject({ status: "released", bytes: 0, objects: 0, deltaBytes: 0, deltaObjects: 0, late: false, warnings: [], audit: null });
    expect(rel.report).toMatchObject({ heldBytes: 0, heldObjects: 0 });
    expect((await stub.reserve(upload(tenant, "more.bin", 100, quota))).status).toBe("reserved");
  });

  it("admits exactly 10 of 30 concurrent 100-byte reserves against a 1,000-byte quota", async () => {
    const { tenant, stub } = quotaObject("headline");
    const quota = { bytes: { hard: 1000 } };
    const reqs = Array.from({ length: 30 }, (_, i) => upload(tenant, `c${i}.bin`, 100, quota));
    const results = await Promise.all(reqs.map((r) => stub.reserve(r)));
    expect(results.filter((r) => r.status === "reserved")).toHaveLength(10);
    expect(results.filter((r) => r.status === "exceeded")).toHaveLength(20);
    expect(await stub.usage()).toEqual({ bytes: 0, objects: 0, reserved_bytes: 1000, reserved_objects: 10, reservations: 10 });

    const admitted = reqs.filter((_, i) => results[i]?.status === "reserved");
    await Promise.all(admitted.map((r) => stub.commit({ reservationId: r.reservationId, nowMs: Date.now(), quota })));
    expect(await stub.usage()).toEqual({ bytes: 1000, objects: 10, reserved_bytes: 0, reserved_objects: 0, reservations: 0 });
    await expectCountersMatchOwners(stub);
  });
});

describe("replays", () => {
  it("changes nothing on a replayed commit, release or remove", async () => {
    const { tenant, stub } = quotaObject("replay");
    const kept = upload(tenant, "kept.bin", 100);
    const dropped = upload(tenant, "dropped.bin", 50);
    await store(stub, kept);
    expect((await stub.reserve(dropped)).status).toBe("reserved");
    expect((await stub.release({ reservationId: dropped.reservationId, nowMs: Date.now() })).status).toBe("released");

    const replayCommit = await stub.commit({ reservationId: kept.reservationId, nowMs: Date.now(), quota: {} });
    expect(replayCommit).toMatchObject({ status: "replayed", bytes: 100, objects: 1, deltaBytes: 0, deltaObjects: 0, late: false, warnings: [], audit: null });
    expect((await stub.release({ reservationId: dropped.reservationId, nowMs: Date.now() })).status).toBe("replayed");
    // A release of a committed reservation must not undo the commit.
    expect((await stub.release({ reservationId: kept.reservationId, nowMs: Date.now() })).status).toBe("replayed");
    expect(await stub.usage()).toEqual({ bytes: 100, objects: 1, reserved_bytes: 0, reserved_objects: 0, reservations: 0 });

    const ref = crypto.randomUUID();
    const removed = await stub.remove({ object: "kept.bin", ref, nowMs: Date.now() });
    expect(removed).toMatchObject({ status: "removed", bytes: 0, objects: 0, deltaBytes: -100, deltaObjects: -1, late: false, warnings: [], audit: null });
    await store(stub, upload(tenant, "kept.bin", 70));
    // The same delete replayed after the object was uploaded again leaves the new one alone.
    expect((await stub.remove({ object: "kept.bin", ref, nowMs: Date.now() })).status).toBe("replayed");
    expect(await stub.usage()).toEqual({ bytes: 70, objects: 1, reserved_bytes: 0, reserved_objects: 0, reservations: 0 });
    await expectCountersMatchOwners(stub);
  });

  it("answers unknown to a commit of a released reservation and counts nothing", async () => {
    const { tenant, stub } = quotaObject("late-commit");
    const req = upload(tenant, "late.bin", 100);
    await stub.reserve(req);
    await stub.release({ reservationId: req.reservationId, nowMs: Date.now() });
    const c = await stub.commit({ reservationId: req.reservationId, nowMs: Date.now(), quota: {} });
    expect(c).toMatchObject({ status: "unknown", bytes: 0, objects: 0, deltaBytes: 0 });
    expect(await stub.commit({ reservationId: "never-made", nowMs: Date.now(), quota: {} })).toMatchObject({ status: "unknown" });
    expect(await stub.release({ reservationId: "never-made", nowMs: Date.now() })).toMatchObject({ status: "unknown" });
  });
});

describe("remove", () => {
  it("gives back the bytes and one object, and answers unknown for an object not owned", async () => {
    const { tenant, stub } = quotaObject("remove");
    const quota = { bytes: { hard: 300 } };
    await store(stub, upload(tenant, "x", 200, quota));
    await store(stub, upload(tenant, "y", 100, quota));
    expect((await stub.reserve(upload(tenant, "z", 1, quota))).status).toBe("exceeded");
    const r = await stub.remove({ object: "x", ref: crypto.randomUUID(), nowMs: Date.now() });
    expect(r).toMatchObject({ status: "removed", bytes: 100, objects: 1, deltaBytes: -200 });
    expect((await stub.reserve(upload(tenant, "z", 200, quota))).status).toBe("reserved");
    const u = await stub.remove({ object: "nothing-here", ref: crypto.randomUUID(), nowMs: Date.now() });
    expect(u).toMatchObject({ status: "unknown", bytes: 100, objects: 1, deltaBytes: 0 });
    await expectCountersMatchOwners(stub);
  });
});

describe("durability", () => {
  it("keeps owners, reservations and the ledger across eviction", async () => {
    const { tenant, stub } = quotaObject("evict");
    const quota = { bytes: { hard: 500 } };
    const kept = upload(tenant, "kept.bin", 200, quota);
    const held = upload(tenant, "held.bin", 250, quota);
    await store(stub, kept);
    await stub.reserve(held);
    await evictDurableObject(stub);

    expect(await stub.usage()).toEqual({ bytes: 200, objects: 1, reserved_bytes: 250, reserved_objects: 1, reservations: 1 });
    expect((await stub.reserve(upload(tenant, "over.bin", 51, quota))).status).toBe("exceeded");
    expect((await stub.commit({ reservationId: kept.reservationId, nowMs: Date.now(), quota })).status).toBe("replayed");
    expect((await stub.commit({ reservationId: held.reservationId, nowMs: Date.now(), quota })).status).toBe("committed");
    await evictDurableObject(stub);
    expect(await stub.usage()).toEqual({ bytes: 450, objects: 2, reserved_bytes: 0, reserved_objects: 0, reservations: 0 });
    // The audit window survived (the refusal before eviction used it up) ...
    expect(await stub.reserve(upload(tenant, "over2.bin", 51, quota))).toMatchObject({ status: "exceeded", audit: null });
    // ... and so did the tenant slug: the next window's audit names it.
    const later = { ...upload(tenant, "over3.bin", 51, quota), nowMs: Date.now() + 61_000 };
    expect(await stub.reserve(later)).toMatchObject({ status: "exceeded", audit: { kind: "quota_hard_exceeded", tenant } });
    await expectCountersMatchOwners(stub);
  });
});

// Error paths run through runInDurableObject: a rejecting call through a stub
// leaks one unhandled rejection in vitest-pool-workers even when the test
// handles it (cloudflare/workers-sdk#14736). Handlers are attached at once:
// workerd reports a rejection handled a microtask late as unhandled.
function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => null,
    (err: unknown) => err,
  );
}

describe("input", () => {
  it("rejects non-integer, negative or missing numbers with a TypeError and stays usable", async () => {
    const { tenant, stub } = quotaObject("input");
    const bad: Array<Record<string, unknown>> = [
      { bytes: -1 },
      { bytes: 1.5 },
      { bytes: Number.NaN },
      { bytes: "100" },
      { bytes: 2 ** 53 },
      { nowMs: 1.5 },
      { ttlS: 0 },
      { auditWindowS: -1 },
      { quota: { bytes: { hard: -1 } } },
      { quota: { objects: { soft: 0.5 } } },
      { quota: null },
      { object: "" },
      { reservationId: undefined },
    ];
    await runInDurableObject(stub, async (instance) => {
      for (const patch of bad) {
        const req = { ...upload(tenant, "ok.bin", 10), ...patch } as ReserveRequest;
        expect(await rejection(instance.reserve(req)), JSON.stringify(patch)).toBeInstanceOf(TypeError);
      }
      expect(() => instance.commit({ reservationId: "r", nowMs: -1, quota: {} })).toThrow(TypeError);
      expect(() => instance.release({ reservationId: "r", nowMs: 0.5 })).toThrow(TypeError);
      expect(() => instance.remove({ object: "o", ref: "", nowMs: 1 })).toThrow(TypeError);
    });
    expect(await stub.usage()).toEqual({ bytes: 0, objects: 0, reserved_bytes: 0, reserved_objects: 0, reservations: 0 });
    expect((await stub.reserve(upload(tenant, "ok.bin", 10))).status).toBe("reserved");
  });

  it("refuses a reservation id reused for a different upload, and another tenant's slug", async () => {
    const { tenant, stub } = quotaObject("reuse");
    const req = upload(tenant, "a.bin", 10);
    await stub.reserve(req);
    await stub.commit({ reservationId: req.reservationId, nowMs: Date.now(), quota: {} });
    const pending = upload(tenant, "p.bin", 10);
    await stub.reserve(pending);
    await runInDurableObject(stub, async (instance) => {
      expect(await rejection(instance.reserve({ ...pending, bytes: 11 }))).toBeInstanceOf(TypeError);
      expect(await rejection(instance.reserve(upload("someone-else", "b.bin", 10)))).toBeInstanceOf(TypeError);
      expect(await rejection(instance.reserve({ ...req, object: "c.bin" }))).toBeInstanceOf(TypeError);
    });
    expect(await stub.usage()).toEqual({ bytes: 10, objects: 1, reserved_bytes: 10, reserved_objects: 1, reservations: 1 });
  });
});
