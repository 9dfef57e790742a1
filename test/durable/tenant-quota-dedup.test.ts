// A re-upload of an object at the size the tenant already stores (a dedup)
// costs no quota, but it is an upload in flight like any other: the object
// records it as a reservation that holds nothing, and its commit after the
// origin's 2xx leaves the object recorded at the uploaded size whatever
// landed meanwhile. A delete or a shrink that commits first is charged back
// at that commit, so a dedup racing them cannot leave bytes at the origin
// that no counter holds (issue 23 item 2). Also a forced reservation (shadow
// mode): recorded even past the hard quota, naming the quota it passes.
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

/** The commit the edge sends after an origin 2xx: it names the upload. */
function commit(stub: Stub, req: ReserveRequest) {
  return stub.commit({ reservationId: req.reservationId, nowMs: Date.now(), quota: req.quota, object: req.object, bytes: req.bytes });
}

function remove(stub: Stub, object: string) {
  return stub.remove({ object, ref: crypto.randomUUID(), nowMs: Date.now() });
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

describe("a same-size re-upload (dedup)", () => {
  it("is recorded as a reservation that costs nothing, even at the hard quota, and commits with no change", async () => {
    const { tenant, stub } = quotaObject("dedup-free");
    const quota = { bytes: { hard: 800 }, objects: { hard: 1 } };
    await store(stub, upload(tenant, "x", 800, quota));
    const again = upload(tenant, "x", 800, quota);
    expect(await stub.reserve(again)).toMatchObject({ status: "reserved", reservationId: again.reservationId, growthBytes: 0, growthObjects: 0 });
    expect(await stub.usage()).toEqual({ bytes: 800, objects: 1, reserved_bytes: 0, reserved_objects: 0, reservations: 1 });
    expect(await commit(stub, again)).toMatchObject({ status: "committed", bytes: 800, objects: 1, deltaBytes: 0, deltaObjects: 0 });
    expect(await stub.usage()).toEqual({ bytes: 800, objects: 1, reserved_bytes: 0, reserved_objects: 0, reservations: 0 });
  });

  it("counts the object again when a delete of it lands while the re-upload is in flight", async () => {
    const { tenant, stub } = quotaObject("dedup-delete");
    const quota = { bytes: { hard: 1000 } };
    await store(stub, upload(tenant, "x", 800, quota));
    const slow = upload(tenant, "x", 800, quota);
    await stub.reserve(slow);
    expect(await remove(stub, "x")).toMatchObject({ status: "removed", deltaBytes: -800, deltaObjects: -1 });
    expect(await stub.usage()).toMatchObject({ bytes: 0, objects: 0 });
    // The slow body completes; the origin holds x at 800 bytes again, and so must the counters.
    expect(await commit(stub, slow)).toMatchObject({ status: "committed", bytes: 800, objects: 1, deltaBytes: 800, deltaObjects: 1 });
    expect(await stub.usage()).toEqual({ bytes: 800, objects: 1, reserved_bytes: 0, reserved_objects: 0, reservations: 0 });
    await expectCountersMatchOwners(stub);
  });

  it("keeps the deleted object's room held for the re-upload in flight, so nothing else can take it first", async () => {
    const { tenant, stub } = quotaObject("dedup-held");
    const quota = { bytes: { hard: 1000 }, objects: { hard: 1 } };
    await store(stub, upload(tenant, "x", 800, quota));
    const slow = upload(tenant, "x", 800, quota);
    await stub.reserve(slow);
    await remove(stub, "x");
    expect(await stub.usage()).toEqual({ bytes: 0, objects: 0, reserved_bytes: 800, reserved_objects: 1, reservations: 1 });
    expect(await stub.reserve(upload(tenant, "y", 300, quota))).toMatchObject({ status: "exceeded", kind: "bytes", usage: 800, requested: 300 });
    await commit(stub, slow);
    expect(await stub.usage()).toMatchObject({ bytes: 800, objects: 1, reserved_bytes: 0 });
  });

  it("records the uploaded size when a shrink of the object commits while the re-upload is in flight", async () => {
    const { tenant, stub } = quotaObject("dedup-shrink");
    const quota = { bytes: { hard: 1000 } };
    await store(stub, upload(tenant, "x", 800, quota));
    const slow = upload(tenant, "x", 800, quota);
    await stub.reserve(slow);
    await store(stub, upload(tenant, "x", 300, quota));
    expect(await stub.usage()).toMatchObject({ bytes: 300, reserved_bytes: 500 });
    expect(await commit(stub, slow)).toMatchObject({ status: "committed", bytes: 800, deltaBytes: 500, deltaObjects: 0 });
    await expectCountersMatchOwners(stub);
  });

  it("never lets the race store past the hard quota, however often it is repeated", async () => {
    const { tenant, stub } = quotaObject("dedup-repeat");
    const quota = { bytes: { hard: 1000 } };
    // What the origin holds after each request it answered 2xx.
    const origin = new Map<string, number>();
    for (let round = 0; round < 5; round++) {
      const object = `a${round}`;
      const first = upload(tenant, object, 800, quota);
      if ((await stub.reserve(first)).status !== "reserved") continue;
      await commit(stub, first);
      origin.set(object, 800);
      const slow = upload(tenant, object, 800, quota);
      const reserved = await stub.reserve(slow);
      expect(reserved.status).not.toBe("exceeded");
      await remove(stub, object);
      origin.delete(object);
      // The slow body completes: the origin stores it; the edge commits what it reserved.
      origin.set(object, 800);
      await commit(stub, slow);
    }
    const stored = [...origin.values()].reduce((a, b) => a + b, 0);
    const usage = await stub.usage();
    expect(usage.bytes).toBe(stored);
    expect(usage.objects).toBe(origin.size);
    expect(stored).toBeLessThanOrEqual(1000);
  });
});

describe("a forced reservation (shadow mode)", () => {
  it("is recorded past the hard quota, names the quota it passes, and commits the upload's bytes", async () => {
    const { tenant, stub } = quotaObject("forced");
    const quota = { bytes: { hard: 1000 } };
    await store(stub, upload(tenant, "a", 600, quota));
    const over = { ...upload(tenant, "b", 600, quota), force: true };
    const r = await stub.reserve(over);
    expect(r).toMatchObject({ status: "reserved", growthBytes: 600, growthObjects: 1, exceeded: { kind: "bytes", quota: 1000, usage: 600, requested: 600 } });
    expect(await stub.usage()).toMatchObject({ bytes: 600, reserved_bytes: 600, reservations: 1 });
    expect(await commit(stub, over)).toMatchObject({ status: "committed", bytes: 1200, objects: 2, deltaBytes: 600 });
    await expectCountersMatchOwners(stub);
  });

  it("answers as an ordinary reservation when it fits", async () => {
    const { tenant, stub } = quotaObject("forced-fits");
    const r = await stub.reserve({ ...upload(tenant, "a", 100, { bytes: { hard: 1000 } }), force: true });
    expect(r.status).toBe("reserved");
    expect(r).not.toHaveProperty("exceeded");
  });
});
