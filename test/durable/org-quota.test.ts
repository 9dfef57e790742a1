// Org quotas (issue 17, docs/design.md) through quota-client, as the edge calls
// them: an upload must fit both the tenant's and the org's hard quotas, a
// refusal by the org names it, soft warnings gain an `org:` part, and the
// org's figures follow its members through joins, leaves, reports in any
// order, expiries, late commits and purges.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import type { OrgQuota } from "../../src/durable/org-quota";
import { type OrgQuotaRef, removeObject, reserveUpload, settleUpload, warningHeaderValue } from "../../src/durable/quota-client";
import type { QuotaLimits } from "../../src/durable/quota-types";
import type { TenantQuota } from "../../src/durable/tenant-quota";
import { clearQuotaAlarms, namespaces, orgObject, quotaObject } from "./quota-object";

afterEach(async () => {
  await clearQuotaAlarms();
});

async function put(tenant: string, quota: QuotaLimits, org: OrgQuotaRef | null, rawObject: string, bytes: number, ok = true) {
  const reserved = await reserveUpload(namespaces, { tenant, quota, org, rawObject, bytes, nowMs: Date.now() });
  if (reserved.kind !== "reserved") return { reserved, settled: null };
  return { reserved, settled: await settleUpload(namespaces, reserved.ticket, { ok, nowMs: Date.now() }) };
}

async function expectOrgEqualsMembers(org: DurableObjectStub<OrgQuota>, tenants: Array<DurableObjectStub<TenantQuota>>): Promise<void> {
  const usages = await Promise.all(tenants.map((t) => t.usage()));
  const o = await org.usage();
  expect({ bytes: o.bytes, objects: o.objects, reserved_bytes: o.reserved_bytes }).toEqual({
    bytes: usages.reduce((a, u) => a + u.bytes, 0),
    objects: usages.reduce((a, u) => a + u.objects, 0),
    reserved_bytes: usages.reduce((a, u) => a + u.reserved_bytes, 0),
  });
}

describe("quotas at both levels", () => {
  it("refuses by the org once its tenants together would pass its hard quota, naming the org, and frees the tenant's reservation", async () => {
    const { org, stub: orgStub } = orgObject("both");
    const ref = { slug: org, quota: { bytes: { hard: 1500 } } };
    const a = quotaObject("a");
    const b = quotaObject("b");
    const tenantQuota = { bytes: { hard: 1000 } };
    expect((await put(a.tenant, tenantQuota, ref, "x", 800)).settled).toMatchObject({ kind: "committed", deltaBytes: 800 });

    const refused = await put(b.tenant, tenantQuota, ref, "y", 800);
    expect(refused.reserved).toEqual({
      kind: "exceeded",
      scope: "org",
      org,
      quotaKind: "bytes",
      quota: 1500,
      usage: 800,
      requested: 800,
      audit: { kind: "quota_hard_exceeded", tenant: b.tenant, org, quotaKind: "bytes", usage: 800, limit: 1500, requested: 800 },
    });
    expect(await b.stub.usage()).toMatchObject({ bytes: 0, reserved_bytes: 0, reservations: 0 });
    expect(await orgStub.usage()).toMatchObject({ bytes: 800, reserved_bytes: 0, members: 2 });

    expect((await put(b.tenant, tenantQuota, ref, "y", 700)).settled).toMatchObject({ kind: "committed" });
    // The tenant's own quota is the stricter one here: refused by the tenant, the org is not asked.
    const tenantRefusal = await put(a.tenant, tenantQuota, ref, "z", 201);
    expect(tenantRefusal.reserved).toMatchObject({ kind: "exceeded", scope: "tenant", quota: 1000, usage: 800, requested: 201 });
    expect(tenantRefusal.reserved).not.toHaveProperty("org");
    await expectOrgEqualsMembers(orgStub, [a.stub, b.stub]);
  });

  it("counts objects at the org, and only the growth of an overwrite", async () => {
    const { org, stub: orgStub } = orgObject("objects");
    const ref = { slug: org, quota: { bytes: { hard: 1000 }, objects: { hard: 2 } } };
    const a = quotaObject("a");
    const b = quotaObject("b");
    await put(a.tenant, {}, ref, "one", 100);
    await put(b.tenant, {}, ref, "two", 100);
    expect((await put(b.tenant, {}, ref, "three", 1)).reserved).toMatchObject({ kind: "exceeded", scope: "org", quotaKind: "objects", usage: 2, requested: 1 });
    // Re-uploading "one" with 1,200 bytes needs 1,100 more: over the org's 1,000.
    expect((await put(a.tenant, {}, ref, "one", 1200)).reserved).toMatchObject({ kind: "exceeded", scope: "org", quotaKind: "bytes", usage: 200, requested: 1100 });
    expect((await put(a.tenant, {}, ref, "one", 900)).settled).toMatchObject({ kind: "committed", deltaBytes: 800 });
    // A shrink asks the org for nothing and gives bytes back at settle.
    expect((await put(a.tenant, {}, ref, "one", 50)).settled).toMatchObject({ kind: "committed", deltaBytes: -850 });
    expect(await orgStub.usage()).toMatchObject({ bytes: 150, objects: 2 });
    await expectOrgEqualsMembers(orgStub, [a.stub, b.stub]);
  });

  it("warns with the org part and hands out one org audit per window", async () => {
    const { org } = orgObject("warn");
    const ref = { slug: org, quota: { bytes: { soft: 1000, hard: 2000 } } };
    const a = quotaObject("a");
    const b = quotaObject("b");
    const tenantQuota = { bytes: { soft: 500, hard: 1000 } };
    expect((await put(a.tenant, tenantQuota, ref, "x", 500)).settled).toMatchObject({ warnings: [{ kind: "bytes", usage: 500, limit: 1000 }] });
    const second = (await put(b.tenant, tenantQuota, ref, "y", 600)).settled;
    expect(second?.warnings).toEqual([
      { kind: "bytes", usage: 600, limit: 1000 },
      { kind: "bytes", usage: 1100, limit: 2000, org },
    ]);
    expect(warningHeaderValue(second?.warnings ?? [])).toBe(`bytes 600/1000, org:${org} bytes 1100/2000`);
    expect(second?.audits).toEqual([
      { kind: "quota_soft_exceeded", tenant: b.tenant, quotaKind: "bytes", usage: 600, limit: 500 },
      { kind: "quota_soft_exceeded", tenant: b.tenant, org, quotaKind: "bytes", usage: 1100, limit: 1000 },
    ]);
    const third = (await put(a.tenant, tenantQuota, ref, "z", 10)).settled;
    expect(third?.warnings.at(-1)).toEqual({ kind: "bytes", usage: 1110, limit: 2000, org });
    expect(third?.audits.filter((x) => x.org !== undefined)).toEqual([]);
  });
});

describe("uploads of one object in flight", () => {
  it("asks the org for an upload another in-flight upload covers at the tenant, since the org may refuse that one", async () => {
    const { org, stub: orgStub } = orgObject("cover");
    const quota = { bytes: { hard: 1000 } };
    const ref = { slug: org, quota };
    const a = quotaObject("a");
    const b = quotaObject("b");
    await put(b.tenant, {}, ref, "y", 500);
    await put(a.tenant, {}, ref, "x", 100);
    const nowMs = Date.now();
    const upload = (bytes: number) => ({ tenant: a.tenant, object: "x", bytes, quota: {}, reservationId: crypto.randomUUID(), nowMs });
    const big = upload(1000);
    const small = upload(450);
    const j = await a.stub.reserve(big);
    const k = await a.stub.reserve(small);
    if (j.status !== "reserved" || k.status !== "reserved") throw new Error("expected reservations");
    // At the tenant the smaller one adds nothing to what is held; its own growth is still 350.
    expect(k).toMatchObject({ growthBytes: 350, growthObjects: 0, report: { heldBytes: 900 } });
    const admit = (r: typeof j) => orgStub.admit({ org, tenant: a.tenant, report: r.report, growthBytes: r.growthBytes, growthObjects: r.growthObjects, quota, nowMs });
    expect(await admit(j)).toMatchObject({ status: "exceeded", usage: 600, requested: 900 });
    // While the refused one still holds room at the tenant, the org counts it.
    expect(await admit(k)).toMatchObject({ status: "exceeded" });
    const released = await a.stub.release({ reservationId: big.reservationId, nowMs });
    expect(await orgStub.report({ org, tenant: a.tenant, report: released.report, quota, nowMs })).toMatchObject({ status: "applied" });
    expect(await admit(k)).toEqual({ status: "admitted" });
    expect(await orgStub.usage()).toMatchObject({ bytes: 600, reserved_bytes: 350 });
    const committed = await a.stub.commit({ reservationId: small.reservationId, nowMs, quota: {}, object: "x", bytes: 450 });
    await orgStub.report({ org, tenant: a.tenant, report: committed.report, quota, nowMs });
    expect(await orgStub.usage()).toMatchObject({ bytes: 950, reserved_bytes: 0 });
  });
});

describe("a same-size re-upload (dedup) racing a delete (issue 23 item 2)", () => {
  it("counts the object again at the tenant and the org when the re-upload commits after the delete, and holds its room meanwhile", async () => {
    const { org, stub: orgStub } = orgObject("dedup");
    const ref = { slug: org, quota: { bytes: { hard: 1000 } } };
    const a = quotaObject("a");
    const b = quotaObject("b");
    await put(a.tenant, {}, ref, "x", 800);
    const slow = await reserveUpload(namespaces, { tenant: a.tenant, quota: {}, org: ref, rawObject: "x", bytes: 800, nowMs: Date.now() });
    expect(await removeObject(namespaces, { tenant: a.tenant, org: ref, rawObject: "x", nowMs: Date.now() })).toEqual({ kind: "removed", deltaBytes: -800 });
    // The freed bytes still back the re-upload in flight: another tenant cannot take them first.
    expect((await put(b.tenant, {}, ref, "y", 300)).reserved).toMatchObject({ kind: "exceeded", scope: "org", usage: 800, requested: 300 });
    // The slow body completes and the origin stores x again.
    if (slow.kind === "reserved") expect(await settleUpload(namespaces, slow.ticket, { ok: true, nowMs: Date.now() })).toMatchObject({ kind: "committed", deltaBytes: 800 });
    expect(await a.stub.usage()).toMatchObject({ bytes: 800, objects: 1, reservations: 0 });
    expect(await orgStub.usage()).toMatchObject({ bytes: 800, objects: 1, reserved_bytes: 0 });
    await expectOrgEqualsMembers(orgStub, [a.stub, b.stub]);
  });
});

describe("forced uploads (shadow mode, issue 23 item 7)", () => {
  it("keeps the tenant's reservation past the org's hard quota, names the org's quota, and counts the commit at both", async () => {
    const { org, stub: orgStub } = orgObject("forced");
    const ref = { slug: org, quota: { bytes: { hard: 1000 } } };
    const a = quotaObject("a");
    const b = quotaObject("b");
    await put(a.tenant, {}, ref, "x", 600);
    const over = await reserveUpload(namespaces, { tenant: b.tenant, quota: {}, org: ref, rawObject: "y", bytes: 600, nowMs: Date.now(), force: true });
    if (over.kind !== "reserved") throw new Error(`expected a reservation, got ${over.kind}`);
    expect(over.exceeded).toMatchObject({ scope: "org", org, quotaKind: "bytes", quota: 1000, usage: 600, requested: 600 });
    // The org counts it while it is in flight.
    expect(await orgStub.usage()).toMatchObject({ bytes: 600, reserved_bytes: 600 });
    expect(await settleUpload(namespaces, over.ticket, { ok: true, nowMs: Date.now() })).toMatchObject({ kind: "committed", deltaBytes: 600 });
    expect(await orgStub.usage()).toMatchObject({ bytes: 1200, objects: 2, reserved_bytes: 0 });
    await expectOrgEqualsMembers(orgStub, [a.stub, b.stub]);
  });

  it("names the tenant's quota first when both are passed", async () => {
    const { org } = orgObject("forced-both");
    const ref = { slug: org, quota: { bytes: { hard: 500 } } };
    const a = quotaObject("a");
    const over = await reserveUpload(namespaces, { tenant: a.tenant, quota: { bytes: { hard: 100 } }, org: ref, rawObject: "z", bytes: 600, nowMs: Date.now(), force: true });
    expect(over).toMatchObject({ kind: "reserved", exceeded: { scope: "tenant", quota: 100, requested: 600 } });
  });
});

describe("membership", () => {
  it("counts a joining tenant's existing usage at once, drops it on leave, and refuses its stale reports until it joins again", async () => {
    const { org, stub: orgStub } = orgObject("members");
    const ref = { slug: org, quota: { bytes: { hard: 1000 } } };
    const a = quotaObject("a");
    await put(a.tenant, {}, null, "before", 700);
    expect(await orgStub.setMember(a.tenant)).toEqual({ tenant: a.tenant, member: true, bytes: 700, objects: 1, heldBytes: 0, heldObjects: 0 });
    expect(await orgStub.usage()).toMatchObject({ bytes: 700, objects: 1, members: 1 });
    expect((await put(a.tenant, {}, ref, "after", 400)).reserved).toMatchObject({ kind: "exceeded", scope: "org", usage: 700 });

    expect(await orgStub.dropMember(a.tenant)).toMatchObject({ member: false, bytes: 0 });
    expect(await orgStub.usage()).toMatchObject({ bytes: 0, members: 0 });
    // An isolate that has not seen the change yet still names the org: the org no longer counts it.
    expect((await put(a.tenant, {}, ref, "after", 400)).settled).toMatchObject({ kind: "committed", warnings: [] });
    expect(await orgStub.usage()).toMatchObject({ bytes: 0, members: 0 });

    expect(await orgStub.setMember(a.tenant)).toMatchObject({ member: true, bytes: 1100, objects: 2 });
    expect(await orgStub.setMember(a.tenant)).toMatchObject({ member: true, bytes: 1100 });
    expect(await orgStub.usage()).toMatchObject({ bytes: 1100, members: 1 });
  });

  it("takes in a tenant it has never seen from its first report, with all its usage", async () => {
    const { org, stub: orgStub } = orgObject("auto");
    const ref = { slug: org, quota: { bytes: { hard: 1000 } } };
    const a = quotaObject("a");
    await put(a.tenant, {}, null, "old", 900);
    // The org learns of the 900 bytes with this upload's report, and refuses it.
    expect((await put(a.tenant, {}, ref, "new", 200)).reserved).toMatchObject({ kind: "exceeded", scope: "org", usage: 900, requested: 200 });
    expect(await orgStub.usage()).toMatchObject({ bytes: 900, reserved_bytes: 0, members: 1 });
  });

  it("keeps the newest report whatever order reports arrive in", async () => {
    const { org, stub: orgStub } = orgObject("order");
    const a = quotaObject("a");
    const report = (seq: number, bytes: number) => ({ seq, bytes, objects: 1, heldBytes: 0, heldObjects: 0 });
    const send = (seq: number, bytes: number) => orgStub.report({ org, tenant: a.tenant, report: report(seq, bytes), quota: {}, nowMs: Date.now() });
    expect(await send(5, 500)).toMatchObject({ status: "applied", bytes: 500 });
    expect(await send(3, 300)).toMatchObject({ status: "stale", bytes: 500 });
    expect(await send(5, 999)).toMatchObject({ status: "stale", bytes: 500 });
    expect(await send(6, 100)).toMatchObject({ status: "applied", bytes: 100 });
  });
});

describe("lifecycle", () => {
  it("stops holding room at the org for a tenant upload that expired, once the org pulls", async () => {
    const { org, stub: orgStub } = orgObject("pull");
    const ref = { slug: org, quota: { bytes: { hard: 1000 } } };
    const a = quotaObject("a");
    const reserved = await reserveUpload(namespaces, { tenant: a.tenant, quota: {}, org: ref, rawObject: "lost", bytes: 600, nowMs: Date.now() });
    expect(reserved.kind).toBe("reserved");
    expect(await orgStub.usage()).toMatchObject({ reserved_bytes: 600 });
    // The isolate died: nobody settles. The tenant's alarm expires the reservation ...
    await runInDurableObject(a.stub, (_, state) => state.storage.sql.exec("UPDATE reservations SET expires_at = 0"));
    expect(await runDurableObjectAlarm(a.stub)).toBe(true);
    expect(await orgStub.usage()).toMatchObject({ reserved_bytes: 600 });
    // ... and the org's alarm, due reservation_ttl_s after the report it kept, pulls the tenant's figures.
    await runInDurableObject(orgStub, (_, state) => state.storage.sql.exec("UPDATE members SET pull_at = 1"));
    expect(await runDurableObjectAlarm(orgStub)).toBe(true);
    expect(await orgStub.usage()).toMatchObject({ bytes: 0, reserved_bytes: 0 });
    expect(await runInDurableObject(orgStub, (_, state) => state.storage.getAlarm())).toBeNull();
  });

  it("counts a late commit at the org too, even past its hard quota", async () => {
    const { org, stub: orgStub } = orgObject("late");
    const ref = { slug: org, quota: { bytes: { hard: 1000 } } };
    const a = quotaObject("a");
    const b = quotaObject("b");
    const slow = await reserveUpload(namespaces, { tenant: a.tenant, quota: {}, org: ref, rawObject: "slow", bytes: 700, nowMs: Date.now() });
    if (slow.kind !== "reserved") throw new Error("expected a reservation");
    await runInDurableObject(a.stub, (_, state) => state.storage.sql.exec("UPDATE reservations SET expires_at = 0"));
    await runDurableObjectAlarm(a.stub);
    // Until the org pulls, the expired upload still holds its room there.
    expect((await put(b.tenant, {}, ref, "quick", 600)).reserved).toMatchObject({ kind: "exceeded", scope: "org", usage: 700 });
    await runInDurableObject(orgStub, (_, state) => state.storage.sql.exec("UPDATE members SET pull_at = 1"));
    await runDurableObjectAlarm(orgStub);
    expect((await put(b.tenant, {}, ref, "quick", 600)).settled).toMatchObject({ kind: "committed" });
    const late = await settleUpload(namespaces, slow.ticket, { ok: true, nowMs: Date.now() });
    expect(late).toMatchObject({ kind: "committed", late: true, deltaBytes: 700 });
    expect(await orgStub.usage()).toMatchObject({ bytes: 1300 });
    await expectOrgEqualsMembers(orgStub, [a.stub, b.stub]);
  });

  it("gives bytes back at the org on a delete, and empties on purge", async () => {
    const { org, stub: orgStub } = orgObject("purge");
    const ref = { slug: org, quota: { bytes: { hard: 1000 } } };
    const a = quotaObject("a");
    await put(a.tenant, {}, ref, "a%20b", 300);
    await put(a.tenant, {}, ref, "c", 200);
    expect(await removeObject(namespaces, { tenant: a.tenant, org: ref, rawObject: "a b".replace(" ", "%20"), nowMs: Date.now() })).toEqual({ kind: "removed", deltaBytes: -300 });
    expect(await orgStub.usage()).toMatchObject({ bytes: 200, objects: 1 });
    expect(await orgStub.purge()).toEqual({ bytes: 200, objects: 1 });
    expect(await orgStub.usage()).toEqual({ bytes: 0, objects: 0, reserved_bytes: 0, reserved_objects: 0, members: 0 });
    // Purging the tenant and dropping it is what deleting a tenant does; created again, it starts at zero.
    expect(await a.stub.purge()).toEqual({ bytes: 200, objects: 1 });
    expect(await orgStub.setMember(a.tenant)).toMatchObject({ bytes: 0, objects: 0 });
  });
});
