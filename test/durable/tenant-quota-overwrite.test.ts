// Overwrites (issue 10 item 3): the same size is a dedup that reserves nothing,
// another size reserves only its growth, and the commit moves the owner
// record and the counters to the new size. Races: two overwrites of one
// object in flight, an overwrite racing a remove, a shrink racing a growth.
// After each, the counters equal the owner rows and no order of commits can
// pass the hard quota.
import { runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import type { QuotaLimits, ReserveRequest } from "../../src/durable/quota-types";
import type { TenantQuota } from "../../src/durable/tenant-quota";
import { clearQuotaAlarms, quotaObject } from "./quota-object";

afterEach(async () => {
  await clearQuotaAlarms();
});

type Stub = DurableObjectStub<TenantQuota>;

function upload(tenant: string, object: string, bytes: number, quota: QuotaLimits = {}): ReserveRequest {
  return { tenant, object, bytes, quota, reservationId: crypto.randomUUID(), nowMs: Date.now() };
}

function commit(stub: Stub, req: ReserveRequest) {
  return stub.commit({ reservationId: req.reservationId, nowMs: Date.now(), quota: req.quota, object: req.object, bytes: req.bytes });
}

async function store(stub: Stub, req: ReserveRequest): Promise<void> {
  expect((await stub.reserve(req)).status).toBe("reserved");
  expect((await commit(stub, req)).status).toBe("committed");
}

async function expectCountersMatchOwners(stub: Stub): Promise<void> {
  const { counters, owners } = await runInDurableObject(stub, (_, state) => {
    const sql = state.storage.sql;
    const c = sql.exec<{ bytes: number; objects: number }>("SELECT bytes, objects FROM counters").one();
    const o = sql.exec<{ bytes: number; objects: number }>("SELECT COALESCE(SUM(bytes), 0) AS bytes, COUNT(*) AS objects FROM owners").one();
    return { counters: { bytes: c.bytes, objects: c.objects }, owners: { bytes: o.bytes, objects: o.objects } };
  });
  expect(counters).toEqual(owners);
}

describe("overwriting an owned object", () => {
  it("refuses re-uploading a 100-byte object with 1,200 bytes under a 1,000-byte hard quota (growth 1,100)", async () => {
    const { tenant, stub } = quotaObject("grow-refused");
    const quota = { bytes: { hard: 1000 } };
    await store(stub, upload(tenant, "x", 100, quota));
    const r = await stub.reserve(upload(tenant, "x", 1200, quota));
    expect(r).toMatchObject({ status: "exceeded", kind: "bytes", quota: 1000, usage: 100, requested: 1100 });
    expect(await stub.usage()).toMatchObject({ bytes: 100, objects: 1, reserved_bytes: 0 });
  });

  it("reserves only the growth, and the commit moves the record and the counter to the new size", async () => {
    const { tenant, stub } = quotaObject("grow");
    const quota = { bytes: { hard: 1000 }, objects: { hard: 1 } };
    await store(stub, upload(tenant, "x", 100, quota));
    // 900 more bytes fit exactly; no new object is needed, so objects: 1 of 1 is no obstacle.
    const grow = upload(tenant, "x", 1000, quota);
    expect(await stub.reserve(grow)).toMatchObject({ status: "reserved", growthBytes: 900, growthObjects: 0 });
    expect(await stub.usage()).toMatchObject({ bytes: 100, objects: 1, reserved_bytes: 900, reserved_objects: 0 });
    expect(await commit(stub, grow)).toMatchObject({ status: "committed", bytes: 1000, objects: 1, deltaBytes: 900, deltaObjects: 0 });
    await expectCountersMatchOwners(stub);
  });

  it("gives bytes back on a shrink, and is never refused for one even over a lowered quota", async () => {
    const { tenant, stub } = quotaObject("shrink");
    await store(stub, upload(tenant, "x", 800));
    const lowered = { bytes: { hard: 500 } };
    const shrink = upload(tenant, "x", 300, lowered);
    expect(await stub.reserve(shrink)).toMatchObject({ status: "reserved", growthBytes: 0, growthObjects: 0 });
    expect(await commit(stub, shrink)).toMatchObject({ status: "committed", bytes: 300, deltaBytes: -500, deltaObjects: 0 });
    expect(await stub.usage()).toMatchObject({ bytes: 300, objects: 1, reserved_bytes: 0 });
    await expectCountersMatchOwners(stub);
  });

  it("reserves a same-size upload with growth 0, also while another upload of it is in flight", async () => {
    const { tenant, stub } = quotaObject("same-size");
    const quota = { bytes: { hard: 1000 } };
    await store(stub, upload(tenant, "x", 100, quota));
    const dedup = upload(tenant, "x", 100, quota);
    expect(await stub.reserve(dedup)).toMatchObject({ status: "reserved", growthBytes: 0, growthObjects: 0 });
    await commit(stub, dedup);
    const bigger = upload(tenant, "x", 400, quota);
    expect(await stub.reserve(bigger)).toMatchObject({ status: "reserved", growthBytes: 300 });
    // Whichever commits last sets the size, so this one has to commit too.
    const same = upload(tenant, "x", 100, quota);
    expect(await stub.reserve(same)).toMatchObject({ status: "reserved", growthBytes: 0, growthObjects: 0 });
    await commit(stub, bigger);
    expect(await commit(stub, same)).toMatchObject({ status: "committed", bytes: 100, deltaBytes: -300 });
    await expectCountersMatchOwners(stub);
  });
});

describe("races on one object", () => {
  it("holds only the larger of two overwrites in flight, and the last commit's size counts", async () => {
    const { tenant, stub } = quotaObject("two-overwrites");
    const quota = { bytes: { hard: 1000 } };
    await store(stub, upload(tenant, "x", 100, quota));
    const a = upload(tenant, "x", 700, quota);
    const b = upload(tenant, "x", 900, quota);
    expect(await stub.reserve(a)).toMatchObject({ status: "reserved", growthBytes: 600 });
    expect(await stub.reserve(b)).toMatchObject({ status: "reserved", growthBytes: 800 });
    // The tenant holds 800, not 600 + 800: only one of the two sizes can end up stored.
    expect(await stub.usage()).toMatchObject({ bytes: 100, reserved_bytes: 800 });
    // 100 + 800 held: a 101-byte new object would pass 1,000 in some commit order.
    expect(await stub.reserve(upload(tenant, "y", 101, quota))).toMatchObject({ status: "exceeded", usage: 900, requested: 101 });
    expect(await commit(stub, b)).toMatchObject({ bytes: 900, deltaBytes: 800 });
    expect(await commit(stub, a)).toMatchObject({ bytes: 700, deltaBytes: -200 });
    expect(await stub.usage()).toMatchObject({ bytes: 700, objects: 1, reserved_bytes: 0, reservations: 0 });
    await expectCountersMatchOwners(stub);
  });

  it("keeps the room of an overwrite in flight when the object is removed meanwhile, so nothing can take it", async () => {
    const { tenant, stub } = quotaObject("overwrite-remove");
    const quota = { bytes: { hard: 1000 }, objects: { hard: 1 } };
    await store(stub, upload(tenant, "x", 500, quota));
    const grow = upload(tenant, "x", 800, quota);
    expect(await stub.reserve(grow)).toMatchObject({ status: "reserved", growthBytes: 300, growthObjects: 0 });
    expect(await stub.remove({ object: "x", ref: crypto.randomUUID(), nowMs: Date.now() })).toMatchObject({ status: "removed", deltaBytes: -500, deltaObjects: -1 });
    // The 500 bytes and the object freed now back the upload in flight (x may be stored again at 800).
    expect(await stub.usage()).toMatchObject({ bytes: 0, objects: 0, reserved_bytes: 800, reserved_objects: 1 });
    expect(await stub.reserve(upload(tenant, "y", 201, quota))).toMatchObject({ status: "exceeded" });
    expect(await commit(stub, grow)).toMatchObject({ status: "committed", bytes: 800, objects: 1, deltaBytes: 800, deltaObjects: 1 });
    await expectCountersMatchOwners(stub);
  });

  it("keeps the room of a growth in flight when a shrink of the same object commits first", async () => {
    const { tenant, stub } = quotaObject("shrink-grow");
    const quota = { bytes: { hard: 1000 } };
    await store(stub, upload(tenant, "x", 500, quota));
    const grow = upload(tenant, "x", 900, quota);
    const shrink = upload(tenant, "x", 100, quota);
    await stub.reserve(grow);
    await stub.reserve(shrink);
    expect(await commit(stub, shrink)).toMatchObject({ bytes: 100, deltaBytes: -400 });
    expect(await stub.usage()).toMatchObject({ bytes: 100, reserved_bytes: 800 });
    // Only 100 bytes are free: the freed 400 still back the growth in flight.
    expect(await stub.reserve(upload(tenant, "y", 101, quota))).toMatchObject({ status: "exceeded", usage: 900 });
    expect(await commit(stub, grow)).toMatchObject({ bytes: 900, deltaBytes: 800 });
    await expectCountersMatchOwners(stub);
  });

  it("never passes the quota whatever order 20 concurrent overwrites of 4 objects commit in", async () => {
    const { tenant, stub } = quotaObject("many");
    const quota = { bytes: { hard: 2000 } };
    for (const o of ["a", "b", "c", "d"]) await store(stub, upload(tenant, o, 100, quota));
    const reqs = Array.from({ length: 20 }, (_, i) => upload(tenant, ["a", "b", "c", "d"][i % 4]!, 50 + ((i * 137) % 900), quota));
    const results = await Promise.all(reqs.map((r) => stub.reserve(r)));
    const admitted = reqs.filter((_, i) => results[i]?.status === "reserved");
    expect(admitted.length).toBeGreaterThan(0);
    expect(results.some((r) => r.status === "exceeded")).toBe(true);
    // Commit in reverse order of reservation, checking the bound after each.
    for (const r of admitted.reverse()) {
      await commit(stub, r);
      const u = await stub.usage();
      expect(u.bytes + u.reserved_bytes).toBeLessThanOrEqual(2000);
    }
    await expectCountersMatchOwners(stub);
  });
});
