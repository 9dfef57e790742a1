// TenantQuota's soft-quota warnings, once-per-window audits, and reindex of a
// deliberately corrupted counter.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { QuotaLimits, ReserveRequest, SettleResult } from "../../src/durable/quota-types";
import type { TenantQuota } from "../../src/durable/tenant-quota";
import { clearQuotaAlarms, quotaObject } from "./quota-object";


afterEach(async () => {
  await clearQuotaAlarms();
});

const T0 = Date.now();

function upload(tenant: string, object: string, bytes: number, quota: QuotaLimits, nowMs = T0): ReserveRequest {
  return { tenant, object, bytes, quota, reservationId: crypto.randomUUID(), nowMs };
}

async function store(stub: DurableObjectStub<TenantQuota>, req: ReserveRequest, auditWindowS?: number): Promise<SettleResult> {
  expect((await stub.reserve(req)).status).toBe("reserved");
  const commit = { reservationId: req.reservationId, nowMs: req.nowMs, quota: req.quota };
  return stub.commit(auditWindowS === undefined ? commit : { ...commit, auditWindowS });
}

function setCounters(stub: DurableObjectStub<TenantQuota>, bytes: number, objects: number): Promise<void> {
  return runInDurableObject(stub, (_, state) => {
    state.storage.sql.exec("UPDATE counters SET bytes = ?, objects = ?", bytes, objects);
  });
}

describe("soft quota", () => {
  it("warns at the soft quota against the hard one, with one audit per window", async () => {
    const { tenant, stub } = quotaObject("soft");
    const quota = { bytes: { soft: 900, hard: 1000 } };
    expect(await store(stub, upload(tenant, "a", 899, quota))).toMatchObject({ warnings: [], audit: null });

    const at = await store(stub, upload(tenant, "b", 1, quota));
    expect(at.warnings).toEqual([{ kind: "bytes", usage: 900, limit: 1000 }]);
    expect(at.audit).toEqual({ kind: "quota_soft_exceeded", tenant, quotaKind: "bytes", usage: 900, limit: 900 });

    const again = await store(stub, upload(tenant, "c", 50, quota, T0 + 59_999));
    expect(again.warnings).toEqual([{ kind: "bytes", usage: 950, limit: 1000 }]);
    expect(again.audit).toBeNull();

    const nextWindow = await store(stub, upload(tenant, "d", 10, quota, T0 + 60_000));
    expect(nextWindow.audit).toMatchObject({ kind: "quota_soft_exceeded", usage: 960 });
  });

  it("shows usage against the soft quota when no hard quota is set, per kind", async () => {
    const { tenant, stub } = quotaObject("soft-only");
    const quota = { bytes: { soft: 100 }, objects: { soft: 2, hard: 5 } };
    await store(stub, upload(tenant, "a", 60, quota));
    const r = await store(stub, upload(tenant, "b", 60, quota));
    expect(r.warnings).toEqual([
      { kind: "bytes", usage: 120, limit: 100 },
      { kind: "objects", usage: 2, limit: 5 },
    ]);
    // One audit per commit: bytes takes it; objects' window is still open for the next one.
    expect(r.audit).toMatchObject({ quotaKind: "bytes" });
    const next = await store(stub, upload(tenant, "c", 1, quota));
    expect(next.audit).toMatchObject({ kind: "quota_soft_exceeded", quotaKind: "objects", usage: 3, limit: 2 });
  });

  it("carries the warnings on a replayed commit but no second audit", async () => {
    const { tenant, stub } = quotaObject("soft-replay");
    const quota = { bytes: { soft: 10, hard: 20 } };
    const req = upload(tenant, "a", 15, quota);
    expect((await store(stub, req)).audit).not.toBeNull();
    const replay = await stub.commit({ reservationId: req.reservationId, nowMs: T0 + 120_000, quota });
    expect(replay).toMatchObject({ status: "replayed", bytes: 15, objects: 1, deltaBytes: 0, warnings: [{ kind: "bytes", usage: 15, limit: 20 }], audit: null });
  });

  it("audits every commit when the window is 0", async () => {
    const { tenant, stub } = quotaObject("soft-window-0");
    const quota = { objects: { soft: 1 } };
    expect((await store(stub, upload(tenant, "a", 1, quota), 0)).audit).not.toBeNull();
    expect((await store(stub, upload(tenant, "b", 1, quota), 0)).audit).not.toBeNull();
  });
});

describe("hard refusal audits", () => {
  it("hands out one quota_hard_exceeded per kind per window", async () => {
    const { tenant, stub } = quotaObject("hard-audit");
    const quota = { bytes: { hard: 100 }, objects: { hard: 1 } };
    const refuse = (object: string, bytes: number, nowMs: number) => stub.reserve(upload(tenant, object, bytes, quota, nowMs));

    expect(await refuse("big", 101, T0)).toMatchObject({ status: "exceeded", kind: "bytes", audit: { kind: "quota_hard_exceeded", quotaKind: "bytes" } });
    expect(await refuse("big", 101, T0 + 30_000)).toMatchObject({ status: "exceeded", kind: "bytes", audit: null });
    await store(stub, upload(tenant, "one", 1, quota));
    expect(await refuse("two", 1, T0 + 30_000)).toMatchObject({
      status: "exceeded",
      kind: "objects",
      quota: 1,
      usage: 1,
      requested: 1,
      audit: { kind: "quota_hard_exceeded", tenant, quotaKind: "objects", usage: 1, limit: 1, requested: 1 },
    });
    expect(await refuse("big", 200, T0 + 60_000)).toMatchObject({ kind: "bytes", audit: { quotaKind: "bytes", usage: 1, requested: 200 } });
  });
});

describe("reindex", () => {
  it("reports and fixes the drift of a corrupted counter", async () => {
    const { tenant, stub } = quotaObject("reindex");
    await store(stub, upload(tenant, "a", 300, {}));
    await store(stub, upload(tenant, "b", 200, {}));
    await setCounters(stub, 12_345, 7);

    expect(await stub.reindex()).toEqual({
      before: { bytes: 12_345, objects: 7 },
      after: { bytes: 500, objects: 2 },
      drift: { bytes: -11_845, objects: -5 },
    });
    expect(await stub.usage()).toMatchObject({ bytes: 500, objects: 2 });
    expect(await stub.reindex()).toEqual({ before: { bytes: 500, objects: 2 }, after: { bytes: 500, objects: 2 }, drift: { bytes: 0, objects: 0 } });
  });

  it("recounts instead of going negative when a remove meets counters corrupted too low", async () => {
    const { tenant, stub } = quotaObject("reindex-low");
    await store(stub, upload(tenant, "a", 300, {}));
    await store(stub, upload(tenant, "b", 200, {}));
    await setCounters(stub, 0, 0);
    const r = await stub.remove({ object: "a", ref: crypto.randomUUID(), nowMs: T0 });
    expect(r).toMatchObject({ status: "removed", bytes: 200, objects: 1, deltaBytes: -300 });
    expect(await stub.reindex()).toMatchObject({ drift: { bytes: 0, objects: 0 } });
  });
});
