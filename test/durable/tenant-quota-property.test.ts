// A property test: random interleavings of reserve, commit, release, remove
// and expiry (including replays and settles of ids never reserved) against a
// simple model. After every step the object must agree with the model, its
// counters must equal the sum of its owner rows, nothing may be negative, and
// neither committed usage nor committed + reserved may pass the hard quota.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { afterEach, expect, it } from "vitest";
import type { QuotaLimits } from "../../src/durable/quota-types";
import type { TenantQuota } from "../../src/durable/tenant-quota";

const stubs: DurableObjectStub<TenantQuota>[] = [];

afterEach(async () => {
  for (const stub of stubs.splice(0)) await runInDurableObject(stub, (_, state) => state.storage.deleteAlarm());
});

/** `live`: pick among the live reservations; otherwise among every id ever used (replays, unknowns). */
type Pick = { pick: number; live: boolean };
type Op =
  | { op: "reserve"; object: number; bytes: number }
  | ({ op: "commit" } & Pick)
  | ({ op: "release" } & Pick)
  | { op: "remove"; object: number; replay: number | null }
  | ({ op: "expire" } & Pick);

const OBJECTS = 3;

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant("reserve" as const), object: fc.nat(OBJECTS - 1), bytes: fc.integer({ min: 0, max: 400 }) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("commit" as const), pick: fc.nat(), live: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("release" as const), pick: fc.nat(), live: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("remove" as const), object: fc.nat(OBJECTS - 1), replay: fc.option(fc.nat(), { freq: 4 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("expire" as const), pick: fc.nat(), live: fc.boolean() }) },
);

const quotaArb: fc.Arbitrary<QuotaLimits> = fc.record(
  {
    bytes: fc.record({ hard: fc.integer({ min: 0, max: 1200 }) }),
    objects: fc.record({ hard: fc.integer({ min: 0, max: 5 }) }),
  },
  { requiredKeys: [] },
  // fast-check builds null-prototype objects, which RPC cannot serialise.
).map((q): QuotaLimits => JSON.parse(JSON.stringify(q)) as QuotaLimits);

interface Model {
  owners: Map<string, number>;
  live: Map<string, { object: string; bytes: number }>;
  settled: Map<string, "committed" | "dedup" | "released" | "expired">;
  ids: string[];
  removeRefs: string[];
  expired: number;
}

function chooseId(m: Model, p: Pick): string | undefined {
  const ids = p.live ? [...m.live.keys()] : m.ids;
  return ids[p.pick % Math.max(1, ids.length)];
}

const sum = (values: Iterable<number>): number => [...values].reduce((a, b) => a + b, 0);

async function step(stub: DurableObjectStub<TenantQuota>, tenant: string, quota: QuotaLimits, m: Model, op: Op): Promise<void> {
  const nowMs = Date.now();
  switch (op.op) {
    case "reserve": {
      const object = `o${op.object}`;
      const reservationId = crypto.randomUUID();
      m.ids.push(reservationId);
      const r = await stub.reserve({ tenant, object, bytes: op.bytes, quota, reservationId, nowMs });
      const pendingBytes = sum([...m.live.values()].map((l) => l.bytes));
      const committedBytes = sum(m.owners.values());
      let expected: string = "reserved";
      if (m.owners.has(object)) expected = "dedup";
      else if (quota.bytes?.hard !== undefined && committedBytes + pendingBytes + op.bytes > quota.bytes.hard) expected = "exceeded:bytes";
      else if (quota.objects?.hard !== undefined && m.owners.size + m.live.size + 1 > quota.objects.hard) expected = "exceeded:objects";
      expect(r.status === "exceeded" ? `exceeded:${r.kind}` : r.status).toBe(expected);
      if (r.status === "reserved") m.live.set(reservationId, { object, bytes: op.bytes });
      return;
    }
    case "commit": {
      const id = chooseId(m, op);
      if (id === undefined) return;
      const r = await stub.commit({ reservationId: id, nowMs, quota });
      const held = m.live.get(id);
      if (held) {
        m.live.delete(id);
        if (m.owners.has(held.object)) {
          m.settled.set(id, "dedup");
          expect(r).toMatchObject({ status: "committed", deltaBytes: 0 });
        } else {
          m.owners.set(held.object, held.bytes);
          m.settled.set(id, "committed");
          expect(r).toMatchObject({ status: "committed", deltaBytes: held.bytes });
        }
      } else {
        const s = m.settled.get(id);
        expect(r.status).toBe(s === "committed" || s === "dedup" ? "replayed" : "unknown");
      }
      return;
    }
    case "release": {
      const id = chooseId(m, op);
      if (id === undefined) return;
      const r = await stub.release({ reservationId: id, nowMs });
      if (m.live.delete(id)) {
        m.settled.set(id, "released");
        expect(r.status).toBe("released");
      } else {
        expect(r.status).toBe(m.settled.has(id) ? "replayed" : "unknown");
      }
      return;
    }
    case "remove": {
      const object = `o${op.object}`;
      const replayed = op.replay === null ? undefined : m.removeRefs[op.replay % Math.max(1, m.removeRefs.length)];
      const ref = replayed ?? crypto.randomUUID();
      const r = await stub.remove({ object, ref, nowMs });
      if (replayed !== undefined) {
        expect(r.status).toBe("replayed");
        return;
      }
      m.removeRefs.push(ref);
      const bytes = m.owners.get(object);
      if (bytes === undefined) {
        expect(r.status).toBe("unknown");
      } else {
        m.owners.delete(object);
        expect(r).toMatchObject({ status: "removed", deltaBytes: -bytes });
      }
      return;
    }
    case "expire": {
      const id = chooseId(m, op);
      if (id !== undefined && m.live.has(id)) {
        await runInDurableObject(stub, (_, state) => {
          state.storage.sql.exec("UPDATE reservations SET expires_at = ? WHERE id = ?", nowMs - 1, id);
        });
        // While reservations remain an alarm is always scheduled.
        expect(await runDurableObjectAlarm(stub)).toBe(true);
        m.live.delete(id);
        m.settled.set(id, "expired");
        m.expired += 1;
      } else {
        // Nothing lapsed: running the alarm changes nothing.
        await runInDurableObject(stub, (instance) => instance.alarm());
      }
      return;
    }
  }
}

async function check(stub: DurableObjectStub<TenantQuota>, quota: QuotaLimits, m: Model): Promise<void> {
  const usage = await stub.usage();
  const pending = [...m.live.values()];
  expect(usage).toEqual({
    bytes: sum(m.owners.values()),
    objects: m.owners.size,
    reserved_bytes: sum(pending.map((l) => l.bytes)),
    reservations: pending.length,
  });
  const rows = await runInDurableObject(stub, (_, state) => {
    const sql = state.storage.sql;
    const c = sql.exec<{ bytes: number; objects: number }>("SELECT bytes, objects FROM counters").one();
    const o = sql.exec<{ bytes: number; objects: number }>("SELECT COALESCE(SUM(bytes), 0) AS bytes, COUNT(*) AS objects FROM owners").one();
    return { counters: { bytes: c.bytes, objects: c.objects }, owners: { bytes: o.bytes, objects: o.objects } };
  });
  expect(rows.counters).toEqual(rows.owners);
  expect(usage.bytes).toBeGreaterThanOrEqual(0);
  expect(usage.objects).toBeGreaterThanOrEqual(0);
  if (quota.bytes?.hard !== undefined) expect(usage.bytes + usage.reserved_bytes).toBeLessThanOrEqual(quota.bytes.hard);
  if (quota.objects?.hard !== undefined) expect(usage.objects + usage.reservations).toBeLessThanOrEqual(quota.objects.hard);
}

it("keeps usage equal to the owner rows, never negative, never above the hard quota, under any interleaving", async () => {
  await fc.assert(
    fc.asyncProperty(quotaArb, fc.array(opArb, { minLength: 1, maxLength: 40, size: "max" }), async (quota, ops) => {
      const tenant = `prop-${crypto.randomUUID()}`;
      const stub = env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant));
      stubs.push(stub);
      const m: Model = { owners: new Map(), live: new Map(), settled: new Map(), ids: [], removeRefs: [], expired: 0 };
      for (const op of ops) {
        await step(stub, tenant, quota, m, op);
        await check(stub, quota, m);
      }
      const audits = await env.DB.prepare("SELECT COUNT(*) AS n FROM audit_events WHERE tenant = ? AND kind = 'reservation_expired'").bind(tenant).first<{ n: number }>();
      expect(audits?.n).toBe(m.expired);
    }),
    { numRuns: 60 },
  );
}, 120_000);
