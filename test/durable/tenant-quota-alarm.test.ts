// TenantQuota's alarm: reservations nobody settled expire at `expires_at`,
// each with one `reservation_expired` audit row in D1; the alarm reschedules
// only while reservations remain, is idempotent, and survives D1 failing.
// Time passing is simulated by moving a reservation's `expires_at` into the
// past; `runDurableObjectAlarm` then runs the scheduled alarm at once.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { QuotaLimits, ReserveRequest } from "../../src/durable/quota-types";
import type { TenantQuota } from "../../src/durable/tenant-quota";
import { clearQuotaAlarms, evictTenantQuota, quotaObject } from "./quota-object";


afterEach(async () => {
  vi.restoreAllMocks();
  await clearQuotaAlarms();
});

function upload(tenant: string, object: string, bytes: number, quota: QuotaLimits = {}, ttlS = 900): ReserveRequest {
  return { tenant, object, bytes, quota, reservationId: crypto.randomUUID(), nowMs: Date.now(), ttlS };
}

async function lapse(stub: DurableObjectStub<TenantQuota>, reservationId: string): Promise<void> {
  await runInDurableObject(stub, (_, state) => {
    state.storage.sql.exec("UPDATE reservations SET expires_at = ? WHERE id = ?", Date.now() - 1, reservationId);
  });
}

function alarmAt(stub: DurableObjectStub<TenantQuota>): Promise<number | null> {
  return runInDurableObject(stub, (_, state) => state.storage.getAlarm());
}

interface AuditRow {
  kind: string;
  actor: string;
  tenant: string;
  subject: string;
  detail: string;
}

async function expiredAudits(tenant: string): Promise<AuditRow[]> {
  const rows = await env.DB.prepare("SELECT kind, actor, tenant, subject, detail FROM audit_events WHERE tenant = ? AND kind = 'reservation_expired' ORDER BY id")
    .bind(tenant)
    .all<AuditRow>();
  return rows.results;
}

describe("alarm scheduling", () => {
  it("sets the alarm at the earliest reservation expiry", async () => {
    const { tenant, stub } = quotaObject("schedule");
    const long = upload(tenant, "long.bin", 1, {}, 900);
    await stub.reserve(long);
    expect(await alarmAt(stub)).toBe(long.nowMs + 900_000);
    const short = upload(tenant, "short.bin", 1, {}, 60);
    await stub.reserve(short);
    expect(await alarmAt(stub)).toBe(short.nowMs + 60_000);
    await stub.reserve(upload(tenant, "longer.bin", 1, {}, 1200));
    expect(await alarmAt(stub)).toBe(short.nowMs + 60_000);
  });
});

describe("expiry", () => {
  it("expires a lapsed reservation with one audit row and reschedules only while reservations remain", async () => {
    const { tenant, stub } = quotaObject("expire");
    const a = upload(tenant, "a.bin", 100);
    const b = upload(tenant, "b.bin", 200);
    await stub.reserve(a);
    await stub.reserve(b);

    await lapse(stub, a.reservationId);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await stub.usage()).toEqual({ bytes: 0, objects: 0, reserved_bytes: 200, reserved_objects: 1, reservations: 1 });
    const first = await expiredAudits(tenant);
    expect(first).toHaveLength(1);
    expect(first[0]).toMatchObject({ kind: "reservation_expired", actor: "quota", tenant, subject: "a.bin" });
    expect(JSON.parse(first[0]?.detail ?? "{}")).toMatchObject({ bytes: 100, reservation_id: a.reservationId });
    expect(await alarmAt(stub)).toBe(b.nowMs + 900_000);

    await lapse(stub, b.reservationId);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await stub.usage()).toEqual({ bytes: 0, objects: 0, reserved_bytes: 0, reserved_objects: 0, reservations: 0 });
    expect((await expiredAudits(tenant)).map((r) => r.subject)).toEqual(["a.bin", "b.bin"]);
    expect(await alarmAt(stub)).toBeNull();
    expect(await runDurableObjectAlarm(stub)).toBe(false);
  });

  it("is idempotent: another run expires nothing and records nothing", async () => {
    const { tenant, stub } = quotaObject("idempotent");
    const gone = upload(tenant, "gone.bin", 10);
    const live = upload(tenant, "live.bin", 20);
    await stub.reserve(gone);
    await stub.reserve(live);
    await lapse(stub, gone.reservationId);
    await runInDurableObject(stub, async (instance) => {
      await instance.alarm();
      await instance.alarm();
    });
    expect(await expiredAudits(tenant)).toHaveLength(1);
    expect(await stub.usage()).toEqual({ bytes: 0, objects: 0, reserved_bytes: 20, reserved_objects: 1, reservations: 1 });
    expect(await alarmAt(stub)).toBe(live.nowMs + 900_000);
  });

  it("frees the room at expiry; a late commit that does not name its upload counts nothing, a late release is a replay", async () => {
    const { tenant, stub } = quotaObject("late");
    const quota = { bytes: { hard: 100 } };
    const slow = upload(tenant, "slow.bin", 100, quota);
    await stub.reserve(slow);
    expect((await stub.reserve(upload(tenant, "next.bin", 100, quota))).status).toBe("exceeded");
    await lapse(stub, slow.reservationId);
    await runDurableObjectAlarm(stub);
    expect((await stub.reserve(upload(tenant, "next.bin", 100, quota))).status).toBe("reserved");
    const late = await stub.commit({ reservationId: slow.reservationId, nowMs: Date.now(), quota });
    expect(late).toMatchObject({ status: "unknown", bytes: 0, objects: 0, deltaBytes: 0 });
    expect((await stub.release({ reservationId: slow.reservationId, nowMs: Date.now() })).status).toBe("replayed");
  });

  it("keeps reservations across eviction and still expires them", async () => {
    const { tenant, stub: first } = quotaObject("evict");
    const r = upload(tenant, "e.bin", 42);
    await first.reserve(r);
    const stub = await evictTenantQuota(tenant);
    await lapse(stub, r.reservationId);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await stub.usage()).toEqual({ bytes: 0, objects: 0, reserved_bytes: 0, reserved_objects: 0, reservations: 0 });
    expect(await expiredAudits(tenant)).toHaveLength(1);
  });

  it("still expires when D1 fails: the alarm logs the failure without failing", async () => {
    const { tenant, stub: first } = quotaObject("d1-down");
    const r = upload(tenant, "d.bin", 7);
    await first.reserve(r);
    await lapse(first, r.reservationId);
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    await runInDurableObject(first, async (instance) => {
      const failing = {
        prepare: () => ({ bind: () => ({}) }),
        batch: () => Promise.reject(new Error("D1_ERROR: database unavailable")),
      };
      // Swap the binding for this instance only; eviction below restores it.
      (instance as unknown as { env: { DB: unknown } }).env = { ...env, DB: failing };
      await instance.alarm();
    });
    const stub = await evictTenantQuota(tenant);
    expect(await stub.usage()).toEqual({ bytes: 0, objects: 0, reserved_bytes: 0, reserved_objects: 0, reservations: 0 });
    expect(await expiredAudits(tenant)).toHaveLength(0);
    const line = logged.mock.calls.map((c) => String(c[0])).find((l) => l.includes("quota_audit_write_failed"));
    expect(line).toBeDefined();
    expect(JSON.parse(line ?? "{}")).toMatchObject({ tenant, expired: 1 });
  });
});
