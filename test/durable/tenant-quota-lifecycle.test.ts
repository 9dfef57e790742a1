// TenantQuota's purge (issue 10 item 4), late commits (item 15), and the
// migration that decodes names the first version stored raw (item 12).
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { QuotaLimits, ReserveRequest } from "../../src/durable/quota-types";
import type { TenantQuota } from "../../src/durable/tenant-quota";
import { migrate } from "../../src/durable/sql-migrations";
import { MIGRATIONS } from "../../src/durable/tenant-quota-sql";
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

async function expire(stub: Stub, reservationId: string): Promise<void> {
  await runInDurableObject(stub, (_, state) => {
    state.storage.sql.exec("UPDATE reservations SET expires_at = ? WHERE id = ?", Date.now() - 1, reservationId);
  });
  expect(await runDurableObjectAlarm(stub)).toBe(true);
}

async function audits(tenant: string, kind: string): Promise<Array<{ subject: string; detail: string }>> {
  const rows = await env.DB.prepare("SELECT subject, detail FROM audit_events WHERE tenant = ? AND kind = ? ORDER BY id").bind(tenant, kind).all<{ subject: string; detail: string }>();
  return rows.results;
}

describe("purge", () => {
  it("empties the object so the tenant created again under the same slug starts at zero", async () => {
    const { tenant, stub } = quotaObject("purge");
    const quota = { bytes: { hard: 1000 } };
    await store(stub, upload(tenant, "a", 600, quota));
    const inFlight = upload(tenant, "b", 300, quota);
    await stub.reserve(inFlight);
    const seqBefore = (await stub.report()).seq;
    // The refusal opens an audit window; the purge must close it.
    expect(await stub.reserve(upload(tenant, "c", 600, quota))).toMatchObject({ status: "exceeded", audit: { kind: "quota_hard_exceeded" } });

    expect(await stub.purge()).toEqual({ bytes: 600, objects: 1 });
    expect(await stub.usage()).toEqual({ bytes: 0, objects: 0, reserved_bytes: 0, reserved_objects: 0, reservations: 0 });
    const left = await runInDurableObject(stub, async (_, state) => ({
      alarm: await state.storage.getAlarm(),
      meta: state.storage.sql.exec("SELECT * FROM meta").toArray().length,
      windows: state.storage.sql.exec("SELECT * FROM audit_windows").toArray().length,
      owners: state.storage.sql.exec("SELECT * FROM owners").toArray().length,
      ledger: state.storage.sql.exec<{ outcome: string }>("SELECT outcome FROM ledger").toArray().map((r) => r.outcome),
    }));
    expect(left).toEqual({ alarm: null, meta: 0, windows: 0, owners: 0, ledger: ["purged"] });
    expect((await stub.report()).seq).toBeGreaterThan(seqBefore);

    // The first 600-byte upload of the new tenant fits, and its refusal audits again.
    await store(stub, upload(tenant, "a", 600, quota));
    expect(await stub.reserve(upload(tenant, "c", 600, quota))).toMatchObject({ status: "exceeded", audit: { kind: "quota_hard_exceeded", tenant } });
    // The upload in flight at the purge is not counted in the new tenant, even named.
    expect(await commit(stub, inFlight)).toMatchObject({ status: "unknown", deltaBytes: 0 });
    expect(await stub.usage()).toMatchObject({ bytes: 600, objects: 1 });
    // Idempotent.
    expect(await stub.purge()).toEqual({ bytes: 600, objects: 1 });
    expect(await stub.purge()).toEqual({ bytes: 0, objects: 0 });
  });
});

describe("late commits", () => {
  it("records an upload whose reservation expired, audits reservation_late_commit, and a replay changes nothing", async () => {
    const { tenant, stub } = quotaObject("late");
    const quota = { bytes: { hard: 1000 } };
    const slow = upload(tenant, "slow.bin", 400, quota);
    await stub.reserve(slow);
    await expire(stub, slow.reservationId);
    expect(await stub.usage()).toMatchObject({ bytes: 0, reserved_bytes: 0 });

    const late = await commit(stub, slow);
    expect(late).toMatchObject({ status: "committed", late: true, bytes: 400, objects: 1, deltaBytes: 400, deltaObjects: 1 });
    expect(await commit(stub, slow)).toMatchObject({ status: "replayed", late: false, bytes: 400, deltaBytes: 0 });
    expect((await stub.release({ reservationId: slow.reservationId, nowMs: Date.now() })).status).toBe("replayed");
    expect(await stub.usage()).toMatchObject({ bytes: 400, objects: 1 });

    const rows = await audits(tenant, "reservation_late_commit");
    expect(rows).toHaveLength(1);
    expect(rows[0]?.subject).toBe("slow.bin");
    expect(JSON.parse(rows[0]?.detail ?? "{}")).toEqual({ bytes: 400, delta_bytes: 400, reservation_id: slow.reservationId });
  });

  it("records a late commit past the hard quota: the origin stored it", async () => {
    const { tenant, stub } = quotaObject("late-over");
    const quota = { bytes: { hard: 1000 } };
    const slow = upload(tenant, "slow.bin", 700, quota);
    await stub.reserve(slow);
    await expire(stub, slow.reservationId);
    await store(stub, upload(tenant, "quick.bin", 600, quota));
    expect(await commit(stub, slow)).toMatchObject({ status: "committed", late: true, bytes: 1300 });
    expect(await stub.reserve(upload(tenant, "more", 1, quota))).toMatchObject({ status: "exceeded", usage: 1300 });
    // A shrink is still let through, and gives bytes back.
    const shrink = upload(tenant, "slow.bin", 100, quota);
    expect((await stub.reserve(shrink)).status).toBe("reserved");
    expect(await commit(stub, shrink)).toMatchObject({ bytes: 700, deltaBytes: -600 });
  });

  it("moves an owned object to the late upload's size", async () => {
    const { tenant, stub } = quotaObject("late-overwrite");
    await store(stub, upload(tenant, "x", 100));
    const slow = upload(tenant, "x", 250);
    await stub.reserve(slow);
    await expire(stub, slow.reservationId);
    expect(await commit(stub, slow)).toMatchObject({ status: "committed", late: true, bytes: 250, objects: 1, deltaBytes: 150, deltaObjects: 0 });
  });

  it("counts nothing for a commit that does not name its upload, or was released, or never made", async () => {
    const { tenant, stub } = quotaObject("late-unknown");
    const slow = upload(tenant, "slow.bin", 10);
    await stub.reserve(slow);
    await expire(stub, slow.reservationId);
    expect(await stub.commit({ reservationId: slow.reservationId, nowMs: Date.now(), quota: {} })).toMatchObject({ status: "unknown" });
    const released = upload(tenant, "r.bin", 10);
    await stub.reserve(released);
    await stub.release({ reservationId: released.reservationId, nowMs: Date.now() });
    expect(await commit(stub, released)).toMatchObject({ status: "unknown" });
    expect(await commit(stub, upload(tenant, "never.bin", 10))).toMatchObject({ status: "unknown" });
    expect(await stub.usage()).toMatchObject({ bytes: 0, objects: 0 });
    // Still recordable later, named.
    expect(await commit(stub, slow)).toMatchObject({ status: "committed", late: true });
  });
});

describe("migration 2", () => {
  it("decodes object names stored raw, merging two spellings of one object", async () => {
    const { stub } = quotaObject("migrate");
    await stub.usage();
    await runInDurableObject(stub, (_, state) => {
      const sql = state.storage.sql;
      // Rebuild a first-version database: raw names, and the same object under two spellings.
      for (const table of ["owners", "reservations", "counters", "ledger", "audit_windows", "meta", "schema_migrations"]) sql.exec(`DROP TABLE ${table}`);
      migrate(state.storage, MIGRATIONS.slice(0, 1));
      sql.exec("INSERT INTO owners (object, bytes, created_at) VALUES ('a%20b', 10, 1), ('%61', 20, 1), ('a', 30, 1), ('100%25', 40, 1), ('bad%zz', 50, 1)");
      sql.exec("UPDATE counters SET bytes = 150, objects = 5");
      sql.exec("INSERT INTO reservations (id, object, bytes, expires_at) VALUES ('r1', 'c%C3%A9', 5, 9999999999999)");
      migrate(state.storage, MIGRATIONS);
    });
    const rows = await runInDurableObject(stub, (_, state) => ({
      owners: state.storage.sql.exec<{ object: string; bytes: number }>("SELECT object, bytes FROM owners ORDER BY object").toArray(),
      reservations: state.storage.sql.exec<{ object: string }>("SELECT object FROM reservations").toArray(),
    }));
    expect(rows.owners).toEqual([
      { object: "100%", bytes: 40 },
      { object: "a", bytes: 30 },
      { object: "a b", bytes: 10 },
      { object: "bad%zz", bytes: 50 },
    ]);
    expect(rows.reservations).toEqual([{ object: "cé" }]);
    expect(await stub.usage()).toMatchObject({ bytes: 130, objects: 4 });
    expect(await stub.reindex()).toMatchObject({ drift: { bytes: 0, objects: 0 } });
  });
});
