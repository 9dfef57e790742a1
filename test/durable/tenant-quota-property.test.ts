// A property test: random interleavings of reserve (new objects, overwrites
// of another size and of the same size, shrinks, forced reserves as shadow
// mode sends them), commit (with and without the upload named, so late
// commits of expired reservations happen), release, remove, expiry and
// purge, with replays and settles of ids never reserved, against a simple
// model of the object and of the origin behind it. After every step the
// object must agree with the model, its counters must equal the sum of its
// owner rows and the bytes and objects the model origin holds, nothing may be
// negative, `seq` must grow with every change, and, until a late commit or a
// forced reserve records bytes past it, committed + held may never pass the
// hard quota (so no order of commits can).
//
// The model origin: every upload the object did not refuse is forwarded, and
// the edge settles it once, as the origin answered: a commit is the origin
// storing it (a 2xx), a release the origin refusing it; a remove is the origin
// deleting the object. So a dedup racing a delete or a shrink is in here.
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
  | { op: "reserve"; object: number; bytes: number; force: boolean }
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
      // Shadow mode: reserved even past the hard quota.
      force: fc.nat(5).map((n) => n === 0),
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
  /** A late commit or a forced reserve recorded bytes without a hold: the hard-quota bound no longer applies. */
  pastQuota: boolean;
  /** What the origin holds: the last upload of each object it stored, less what it deleted. */
  origin: Map<string, number>;
  /** Uploads forwarded and not yet settled by the edge (whatever the object holds for them). */
  forwarded: Map<string, Upload>;
  /** An upload the origin stored was committed without naming it after its reservation expired (the first RPC shape): not counted, by design. */
  originLost: boolean;
  /** Uploads the edge released (the origin refused them): the edge never commits them after. */
  released: Set<string>;
}

/** `live`: for commit and release, an upload the edge has not settled yet; for expire, a live reservation. */
function chooseId(m: Model, p: Pick, among: Map<string, Upload> = m.forwarded): string | undefined {
  const ids = p.live ? [...among.keys()] : m.ids;
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

function expectedReserve(m: Model, quota: QuotaLimits, u: Upload, force: boolean): string {
  const before = held(m);
  const after = held(m, u);
  const committed = { bytes: sum(m.owners.values()), objects: m.owners.size };
  let over = "";
  for (const kind of ["bytes", "objects"] as const) {
    const hard = quota[kind]?.hard;
    const growth = after[kind] - before[kind];
    if (hard !== undefined && growth > 0 && committed[kind] + before[kind] + growth > hard) {
      if (!force) return `exceeded:${kind}`;
      over = `:over:${kind}`;
      break;
    }
  }
  // Every upload not refused is recorded, a dedup too (growth 0). The answer
  // names the upload's own growth over the stored object (what the org is asked for).
  const owned = m.owners.get(u.object);
  return `reserved:${Math.max(0, u.bytes - (owned ?? 0))}:${owned === undefined ? 1 : 0}${over}`;
}

async function step(stub: DurableObjectStub<TenantQuota>, tenant: string, quota: QuotaLimits, m: Model, op: Op): Promise<void> {
  const nowMs = Date.now();
  switch (op.op) {
    case "reserve": {
      const u = { object: `o${op.object}`, bytes: op.bytes };
      const reservationId = crypto.randomUUID();
      m.ids.push(reservationId);
      m.uploads.set(reservationId, u);
      const expected = expectedReserve(m, quota, u, op.force);
      const r = await stub.reserve({ tenant, ...u, quota, reservationId, nowMs, ...(op.force ? { force: true } : {}) });
      const got = r.status === "exceeded" ? `exceeded:${r.kind}` : `reserved:${r.growthBytes}:${r.growthObjects}${r.exceeded ? `:over:${r.exceeded.kind}` : ""}`;
      expect(got).toBe(expected);
      if (r.status === "reserved") m.live.set(reservationId, u);
      if (r.status === "reserved" && r.exceeded) m.pastQuota = true;
      // Not refused: the edge forwards it.
      if (r.status !== "exceeded") m.forwarded.set(reservationId, u);
      return;
    }
    case "commit": {
      const id = chooseId(m, op);
      if (id === undefined) return;
      const u = m.uploads.get(id);
      const named = op.named && u !== undefined;
      // The edge settles an upload once: a named commit of one it released after its reservation expired would be a late commit of bytes the origin refused.
      if (named && m.released.has(id) && m.settled.get(id) === "expired") return;
      const r = await stub.commit({ reservationId: id, nowMs, quota, ...(named ? u : {}) });
      const held = m.live.get(id);
      const settled = m.settled.get(id);
      // The edge's first settle of a forwarded upload: the origin answered 2xx and stored it.
      const stored = m.forwarded.get(id);
      if (stored !== undefined) {
        m.forwarded.delete(id);
        m.origin.set(stored.object, stored.bytes);
        if (!held && !named && settled === "expired") m.originLost = true;
      }
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
      // The origin refused the upload: it stores nothing.
      if (m.forwarded.delete(id)) m.released.add(id);
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
      m.origin.delete(object);
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
      const id = chooseId(m, op, m.live);
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
      // The tenant's data goes with it; uploads it had in flight count nothing when they land.
      m.origin.clear();
      m.forwarded.clear();
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
  if (!m.originLost) expect({ bytes: counters.bytes, objects: counters.objects }, "the counters hold what the origin stores").toEqual({ bytes: sum(m.origin.values()), objects: m.origin.size });
  expect(usage.bytes).toBeGreaterThanOrEqual(0);
  expect(usage.objects).toBeGreaterThanOrEqual(0);
  if (m.pastQuota) return;
  if (quota.bytes?.hard !== undefined) expect(usage.bytes + usage.reserved_bytes).toBeLessThanOrEqual(quota.bytes.hard);
  if (quota.objects?.hard !== undefined) expect(usage.objects + usage.reserved_objects).toBeLessThanOrEqual(quota.objects.hard);
}

it("keeps usage equal to the owner rows and to what the origin holds, never negative, never above the hard quota, under any interleaving with overwrites, dedups, deletes and shrinks", async () => {
  await fc.assert(
    fc.asyncProperty(quotaArb, fc.array(opArb, { minLength: 1, maxLength: 40, size: "max" }), async (quota, ops) => {
      const tenant = `prop-${crypto.randomUUID()}`;
      const stub = env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant));
      stubs.push(stub);
      const m: Model = {
        owners: new Map(),
        live: new Map(),
        settled: new Map(),
        uploads: new Map(),
        ids: [],
        removeRefs: [],
        expired: 0,
        late: 0,
        pastQuota: false,
        origin: new Map(),
        forwarded: new Map(),
        originLost: false,
        released: new Set(),
      };
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
