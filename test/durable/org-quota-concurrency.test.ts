// The org quota is exact under concurrency (issue 17): many uploads at once,
// spread over several tenants of one org, through quota-client as the edge
// runs them (tenant reserve → org admit → commit or release → report), with
// random sizes, overwrites of the same names, random origin outcomes and
// deletes mixed in (in one run, sizes from two values, so same-size
// re-uploads race deletes). The org's committed bytes and objects never pass its hard
// quota, however the calls interleave, and once everything has settled they
// equal the sum of its tenants' counters.
import { afterEach, expect, it } from "vitest";
import { type OrgQuotaRef, removeObject, reserveUpload, settleUpload } from "../../src/durable/quota-client";
import { mulberry32 as random } from "../prng";
import { clearQuotaAlarms, namespaces, orgObject, quotaObject } from "./quota-object";

afterEach(async () => {
  await clearQuotaAlarms();
});

const TENANTS = 6;
const OPERATIONS = 160;
const NAMES_PER_TENANT = 5;
const ORG_HARD_BYTES = 6000;
const ORG_HARD_OBJECTS = 20;

// The last run draws sizes from two values only, so same-size re-uploads
// (dedups) race deletes and overwrites of their objects all the time.
for (const [seed, sizes] of [[17, null], [4242, null], [99, [100, 300]]] as const) {
  it(`never lets ${OPERATIONS} concurrent uploads over ${TENANTS} tenants pass the org's hard quota, and ends equal to the tenants' sum (seed ${seed}${sizes === null ? "" : `, sizes ${sizes.join(" and ")}`})`, async () => {
    const next = random(seed);
    const { org, stub: orgStub } = orgObject("race");
    const ref: OrgQuotaRef = { slug: org, quota: { bytes: { hard: ORG_HARD_BYTES }, objects: { hard: ORG_HARD_OBJECTS } } };
    const tenants = Array.from({ length: TENANTS }, (_, i) => quotaObject(`t${i}`));
    // Some tenants are stricter than their share of the org, some looser.
    const tenantQuota = (i: number) => ({ bytes: { hard: i % 2 === 0 ? 1500 : 4000 } });

    const samples: Array<{ bytes: number; objects: number }> = [];
    const outcomes = { committed: 0, released: 0, tenantRefused: 0, orgRefused: 0, removed: 0 };
    const operations = Array.from({ length: OPERATIONS }, () => ({
      tenant: Math.floor(next() * TENANTS),
      name: `n${Math.floor(next() * NAMES_PER_TENANT)}`,
      bytes: sizes === null ? 1 + Math.floor(next() * 1200) : sizes[Math.floor(next() * sizes.length)]!,
      ok: next() < 0.85,
      remove: next() < 0.12,
    }));

    await Promise.all(
      operations.map(async (op) => {
        const t = tenants[op.tenant]!;
        if (op.remove) {
          const r = await removeObject(namespaces, { tenant: t.tenant, org: ref, rawObject: op.name, nowMs: Date.now() });
          if (r.kind === "removed") outcomes.removed++;
        } else {
          const reserved = await reserveUpload(namespaces, { tenant: t.tenant, quota: tenantQuota(op.tenant), org: ref, rawObject: op.name, bytes: op.bytes, nowMs: Date.now() });
          if (reserved.kind === "exceeded") outcomes[reserved.scope === "org" ? "orgRefused" : "tenantRefused"]++;
          else if (reserved.kind === "reserved") {
            // The origin takes a moment; other calls interleave meanwhile.
            await new Promise((resolve) => setTimeout(resolve, Math.floor(op.bytes / 100)));
            const settled = await settleUpload(namespaces, reserved.ticket, { ok: op.ok, nowMs: Date.now() });
            expect(settled.kind).toBe(op.ok ? "committed" : "released");
            outcomes[op.ok ? "committed" : "released"]++;
          } else throw new Error(`unexpected ${reserved.kind}`);
        }
        const u = await orgStub.usage();
        samples.push({ bytes: u.bytes, objects: u.objects });
      }),
    );

    expect(samples).toHaveLength(OPERATIONS);
    for (const s of samples) {
      expect(s.bytes).toBeLessThanOrEqual(ORG_HARD_BYTES);
      expect(s.objects).toBeLessThanOrEqual(ORG_HARD_OBJECTS);
    }
    // The run contended for the org's quota, and got through both ways.
    expect(outcomes.orgRefused).toBeGreaterThan(0);
    expect(outcomes.committed).toBeGreaterThan(5);

    const usages = await Promise.all(tenants.map((t) => t.stub.usage()));
    const sum = { bytes: usages.reduce((a, u) => a + u.bytes, 0), objects: usages.reduce((a, u) => a + u.objects, 0) };
    const final = await orgStub.usage();
    expect(final).toEqual({ bytes: sum.bytes, objects: sum.objects, reserved_bytes: 0, reserved_objects: 0, members: TENANTS });
    expect(sum.bytes).toBeLessThanOrEqual(ORG_HARD_BYTES);
    expect(sum.objects).toBeLessThanOrEqual(ORG_HARD_OBJECTS);
    for (const u of usages) expect(u).toMatchObject({ reserved_bytes: 0, reservations: 0 });
  }, 120_000);
}
