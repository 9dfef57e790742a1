// A property test: random interleavings of reserve (new objects, overwrites
// of another size and of the same size), commit (with and without the upload
// named, so late commits of expired reservations happen), release, remove,
// expiry and purge, with replays and settles of ids never reserved, against a
// simple model. After every step the object must agree with the model, its
// counters must equal the sum of its owner rows, nothing may be negative,
// `seq` must grow with every change, and, until a late commit records bytes
// past it, committed + held may never pass the hard quota (so no order of
// commits can).
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
  | ({ op: "commit"; named: boolean } & Pick)
  | ({ op: "release" } & Pick)
  | { op: "remove"; object: number; replay: number | null }
  | ({ op: "expire" } & Pick)
  | { op: "purge" };

const OBJECTS = 3;

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 16,
    arbitrary: fc.record({
      op: fc.constant("reserve" as const),
      object: fc.nat(OBJECTS - 1),
      // A few sizes repeat often, so same-size overwrites (dedup) happen.
      bytes: fc.oneof(fc.constantFrom(0, 100, 250), fc.integer({ min: 0, max: 400 })),
    }),
  },
  { weight: 12, arbitrary: fc.record({ op: fc.constant("commit" as const), named: fc.boolean(), pick: fc.nat(), live: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant("release" as const), pick: fc.nat(), live: fc.boolean() }) },
  { weight: 8, arbitrary: fc.record({ op: fc.constant("remove" as const), object: fc.nat(OBJECTS - 1), replay: fc.option(fc.nat(), { freq: 4 }) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant("expire" as const), pick: fc.nat(), live: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ op: "purge" as const }) },
);

const quotaArb: fc.Arbitrary<QuotaLimits> = fc.record(
  {
    bytes: fc.record({ hard: fc.integer({ min: 0, max: 1200 }) }),
    objects: fc.record({ hard: fc.integer({ min: 0, max: 5 }) }),
  },
  { requiredKeys: [] },
  // fast-check builds null-prototype objects, which RPC cannot serialise.
).map((q): QuotaLimits => JSON.parse(JSON.stringify(q)) as QuotaLimits);

type Upload = { object: string; bytes: number };

interface Model {
  owners: Map<string, number>;
  live: Map<string, Upload>;
  settled: Map<string, "committed" | "released" | "expired" | "purged">;
  /** The upload of every id sent to reserve (whatever the answer): what a commit may name. */
  uploads: Map<string, Upload>;
  ids: string[];
  removeRefs: string[];
  expired: number;
  late: number;
  /** A late commit recorded bytes without a hold: the hard-quota bound no longer applies. */
  pastQuota: boolean;
}

function chooseId(m: Model, p: Pick): string | undefined {
  const ids = p.live ? [...m.live.keys()] : m.ids;
  return ids[p.pick % Math.max(1, ids.length)];
}

const sum = (values: Iterable<number>): number => [...values].reduce((a, b) => a + b, 0);

/** What live reservations hold, per the model: per object, the largest in flight over the stored size, and unstored names. */
function held(m: Model, extra?: Upload): { bytes: number; objects: number } {
  const top = new Map<string, number>();
  for (const l of [...m.live.values(), ...(extra ? [extra] : [])]) top.set(l.object, Math.max(top.get(l.object) ?? 0, l.bytes));
  let bytes = 0;
  let objects = 0;
  for (const [object, max] of top) {
    const owned = m.owners.get(object);
    bytes += Math.max(0, max - (owned ?? 0));
    if (owned === undefined) objects += 1;
  }
  return { bytes, objects };
}

function expectedReserve(m: Model, quota: QuotaLimits, u: Upload): string {
  const inFlight = [...m.live.values()].some((l) => l.object === u.object);
  if (m.owners.get(u.object) === u.bytes && !inFlight) return "dedup";
  const before = held(m);
  const after = held(m, u);
  const committed = { bytes: sum(m.owners.values()), objects: m.owners.size };
  for (const kind of ["bytes", "objects"] as const) {
    const hard = quota[kind]?.hard;
    const growth = after[kind] - before[kind];
    if (hard !== undefined && growth > 0 && committed[kind] + before[kind] + growth > hard) return `exceeded:${kind}`;
  }
  // The answer names the upload's own growth over the stored object (what the org is asked for).
  const owned = m.owners.get(u.object);
  return `reserved:${Math.max(0, u.bytes - (owned ?? 0))}:${owned === undefined ? 1 : 0}`;
}

async function step(stub: DurableObjectStub<TenantQuota>, tenant: string, quota: QuotaLimits, m: Model, op: Op): Promise<void> {
  const nowMs = Date.now();
  switch (op.op) {
    case "reserve": {
      const u = { object: `o${op.object}`, bytes: op.bytes };
      const reservationId = crypto.randomUUID();
      m.ids.push(reservationId);
      m.uploads.set(reservationId, u);
      const expected = expectedReserve(m, quota, u);
      const r = await stub.reserve({ tenant, ...u, quota, reservationId, nowMs });
      const got = r.status === "exceeded" ? `exceeded:${r.kind}` : r.status === "reserved" ? `reserved:${r.growthBytes}:${r.growthObjects}` : r.status;
      expect(got).toBe(expected);
      if (r.status === "reserved") m.live.set(reservationId, u);
      return;
    }
    case "commit": {
      const id = chooseId(m, op);
      if (id === undefined) return;
      const u = m.uploads.get(id);
      const named = op.named && u !== undefined;
      const r = await stub.commit({ reservationId: id, nowMs, quota, ...(named ? u : {}) });
      const held = m.live.get(id);
      const settled = m.settled.get(id);
      if (held || (named && settled === "expired")) {
        const upload = held ?? u!;
        const before = m.owners.get(upload.object);
        m.live.delete(id);
        m.owners.set(upload.object, upload.bytes);
        m.settled.set(id, "committed");
        if (!held) {
          m.late += 1;
          m.pastQuota = true;
        }
        expect(r).toMatchObject({ status: "committed", late: !held, deltaBytes: upload.bytes - (before ?? 0), deltaObjects: before === undefined ? 1 : 0 });
      } else if (settled === "committed") {
        expect(r.status).toBe("replayed");
      } else {
        // Released, purged, never reserved, or expired and not named.
        expect(r.status).toBe("unknown");
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
        expect(r).toMatchObject({ status: "removed", deltaBytes: -bytes, deltaObjects: -1 });
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
    case "purge": {
      const r = await stub.purge();
      expect(r).toEqual({ bytes: sum(m.owners.values()), objects: m.owners.size });
      for (const id of m.live.keys()) m.settled.set(id, "purged");
      // The ledger is emptied: settled ids other than those in flight are forgotten.
      for (const [id, outcome] of [...m.settled]) if (outcome !== "purged") m.settled.delete(id);
      m.owners.clear();
      m.live.clear();
      m.removeRefs.length = 0;
      m.pastQuota = false;
      return;
    }
  }
}

async function check(stub: DurableObjectStub<TenantQuota>, quota: QuotaLimits, m: Model, lastSeq: { value: number; state: string }): Promise<void> {
  // One call for all of it: the RPC methods' answers and the raw rows.
  const { usage, report, counters, owners } = await runInDurableObject(stub, (instance, state) => {
    const sql = state.storage.sql;
    const c = sql.exec<{ bytes: number; objects: number }>("SELECT bytes, objects FROM counters").one();
    const o = sql.exec<{ bytes: number; objects: number }>("SELECT COALESCE(SUM(bytes), 0) AS bytes, COUNT(*) AS objects FROM owners").one();
    return { usage: instance.usage(), report: instance.report(), counters: { bytes: c.bytes, objects: c.objects }, owners: { bytes: o.bytes, objects: o.objects } };
  });
  const h = held(m);
  expect(usage).toEqual({
    bytes: sum(m.owners.values()),
    objects: m.owners.size,
    reserved_bytes: h.bytes,
    reserved_objects: h.objects,
    reservations: m.live.size,
  });
  expect(report).toMatchObject({ bytes: usage.bytes, objects: usage.objects, heldBytes: h.bytes, heldObjects: h.objects });
  // seq grows with every change, and only then.
  const state = JSON.stringify([[...m.owners].sort(), [...m.live.keys()].sort()]);
  if (state !== lastSeq.state) expect(report.seq).toBeGreaterThan(lastSeq.value);
  else expect(report.seq).toBeGreaterThanOrEqual(lastSeq.value);
  lastSeq.value = report.seq;
  lastSeq.state = state;
  expect(counters).toEqual(owners);
  expect(usage.bytes).toBeGreaterThanOrEqual(0);
  expect(usage.objects).toBeGreaterThanOrEqual(0);
  if (m.pastQuota) return;
  if (quota.bytes?.hard !== undefined) expect(usage.bytes + usage.reserved_bytes).toBeLessThanOrEqual(quota.bytes.hard);
  if (quota.objects?.hard !== undefined) expect(usage.objects + usage.reserved_objects).toBeLessThanOrEqual(quota.objects.hard);
}

it("keeps usage equal to the owner rows, never negative, never above the hard quota, under any interleaving with overwrites", async () => {
  await fc.assert(
    fc.asyncProperty(quotaArb, fc.array(opArb, { minLength: 1, maxLength: 40, size: "max" }), async (quota, ops) => {
      const tenant = `prop-${crypto.randomUUID()}`;
      const stub = env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant));
      stubs.push(stub);
      const m: Model = { owners: new Map(), live: new Map(), settled: new Map(), uploads: new Map(), ids: [], removeRefs: [], expired: 0, late: 0, pastQuota: false };
      const lastSeq = { value: 0, state: "[[],[]]" };
      for (const op of ops) {
        await step(stub, tenant, quota, m, op);
        await check(stub, quota, m, lastSeq);
      }
      const audits = await env.DB.prepare("SELECT kind, COUNT(*) AS n FROM audit_events WHERE tenant = ? GROUP BY kind").bind(tenant).all<{ kind: string; n: number }>();
      const byKind = Object.fromEntries(audits.results.map((r) => [r.kind, r.n]));
      expect(byKind.reservation_expired ?? 0).toBe(m.expired);
      expect(byKind.reservation_late_commit ?? 0).toBe(m.late);
    }),
    { numRuns: 60 },
  );
}, 120_000);
