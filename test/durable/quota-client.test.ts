// quota-client: the edge's calls as tagged outcomes. Names the store cannot
// hold are refused before any call; an object that fails is `unavailable`
// (never a throw), after one retry when the runtime marks the error
// retryable and not overloaded; an org that cannot be asked leaves nothing
// held at the tenant.
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { OrgQuota } from "../../src/durable/org-quota";
import { type QuotaNamespaces, removeObject, reserveUpload, settleUpload, warningHeaderValue } from "../../src/durable/quota-client";
import type { TenantQuota } from "../../src/durable/tenant-quota";
import { clearQuotaAlarms, namespaces, orgObject, quotaObject } from "./quota-object";

afterEach(async () => {
  vi.restoreAllMocks();
  await clearQuotaAlarms();
});

type Failure = { method: string; times: number; error: () => unknown };

/** A namespace whose stubs record every call and throw `error` on the first `times` calls of `method`. */
function faulty<T extends Rpc.DurableObjectBranded>(real: DurableObjectNamespace<T>, failure: Failure | null, calls: string[]): DurableObjectNamespace<T> {
  let failed = 0;
  return {
    idFromName: (name: string) => real.idFromName(name),
    get: (id: DurableObjectId) => {
      const stub = real.get(id) as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
      return new Proxy(
        {},
        {
          get: (_, method: string) =>
            async (...args: unknown[]) => {
              calls.push(method);
              if (failure !== null && method === failure.method && failed < failure.times) {
                failed++;
                throw failure.error();
              }
              return stub[method]!(...args);
            },
        },
      );
    },
  } as unknown as DurableObjectNamespace<T>;
}

function withFaults(tenantFailure: Failure | null, orgFailure: Failure | null = null): { ns: QuotaNamespaces; calls: string[] } {
  const calls: string[] = [];
  return {
    ns: {
      tenant: faulty<TenantQuota>(env.TENANT_QUOTA, tenantFailure, calls),
      org: faulty<OrgQuota>(env.ORG_QUOTA, orgFailure, calls),
    },
    calls,
  };
}

const retryable = () => Object.assign(new Error("Network connection lost."), { retryable: true });
const overloaded = () => Object.assign(new Error("Durable Object is overloaded."), { retryable: true, overloaded: true });
const broken = () => new Error("Durable Object reset because its code was updated.");

function silenceErrors() {
  return vi.spyOn(console, "error").mockImplementation(() => {});
}

describe("object names", () => {
  it("answers invalid for a name the store cannot hold, before any call", async () => {
    const { tenant } = quotaObject("invalid");
    const { ns, calls } = withFaults(null);
    expect(await reserveUpload(ns, { tenant, quota: {}, org: null, rawObject: "a".repeat(1025), bytes: 1, nowMs: Date.now() })).toEqual({
      kind: "invalid",
      reason: "the object name is longer than 1024 bytes",
    });
    expect(await removeObject(ns, { tenant, org: null, rawObject: "%E0%80", nowMs: Date.now() })).toEqual({
      kind: "invalid",
      reason: "the object name is not valid percent-encoded UTF-8",
    });
    expect(calls).toEqual([]);
  });

  it("stores one spelling per object: an upload and a delete spelled differently meet", async () => {
    const { tenant, stub } = quotaObject("spelling");
    const r = await reserveUpload(namespaces, { tenant, quota: {}, org: null, rawObject: "caf%C3%A9", bytes: 10, nowMs: Date.now() });
    if (r.kind !== "reserved") throw new Error("expected a reservation");
    expect(r.ticket.object).toBe("café");
    await settleUpload(namespaces, r.ticket, { ok: true, nowMs: Date.now() });
    const again = await reserveUpload(namespaces, { tenant, quota: {}, org: null, rawObject: "caf%c3%a9", bytes: 10, nowMs: Date.now() });
    if (again.kind !== "reserved") throw new Error("expected a reservation");
    expect(again.ticket.object).toBe("café");
    expect(await settleUpload(namespaces, again.ticket, { ok: true, nowMs: Date.now() })).toMatchObject({ kind: "committed", deltaBytes: 0 });
    expect(await removeObject(namespaces, { tenant, org: null, rawObject: "caf%c3%a9", nowMs: Date.now() })).toEqual({ kind: "removed", deltaBytes: -10 });
    expect(await stub.usage()).toMatchObject({ bytes: 0, objects: 0 });
  });
});

describe("failures", () => {
  it("retries once a retryable error, and not an overloaded or other one", async () => {
    const { tenant } = quotaObject("retry");
    const once = withFaults({ method: "reserve", times: 1, error: retryable });
    expect((await reserveUpload(once.ns, { tenant, quota: {}, org: null, rawObject: "a", bytes: 1, nowMs: Date.now() })).kind).toBe("reserved");
    expect(once.calls).toEqual(["reserve", "reserve"]);

    const logged = silenceErrors();
    for (const error of [overloaded, broken]) {
      const f = withFaults({ method: "reserve", times: 1, error });
      expect(await reserveUpload(f.ns, { tenant, quota: {}, org: null, rawObject: "b", bytes: 1, nowMs: Date.now() })).toEqual({ kind: "unavailable", scope: "tenant" });
      expect(f.calls).toEqual(["reserve"]);
    }
    const twice = withFaults({ method: "reserve", times: 2, error: retryable });
    expect(await reserveUpload(twice.ns, { tenant, quota: {}, org: null, rawObject: "c", bytes: 1, nowMs: Date.now() })).toEqual({ kind: "unavailable", scope: "tenant" });
    expect(twice.calls).toEqual(["reserve", "reserve"]);
    expect(logged.mock.calls.map((c) => JSON.parse(String(c[0])).event)).toEqual(["quota_reserve_failed", "quota_reserve_failed", "quota_reserve_failed"]);
  });

  it("releases the tenant reservation when the org cannot be asked", async () => {
    const { tenant, stub } = quotaObject("org-down");
    const { org } = orgObject("down");
    silenceErrors();
    const { ns, calls } = withFaults(null, { method: "admit", times: 2, error: retryable });
    const r = await reserveUpload(ns, { tenant, quota: {}, org: { slug: org, quota: { bytes: { hard: 100 } } }, rawObject: "a", bytes: 10, nowMs: Date.now() });
    expect(r).toEqual({ kind: "unavailable", scope: "org" });
    expect(calls).toEqual(["reserve", "admit", "admit", "release", "report"]);
    expect(await stub.usage()).toMatchObject({ reserved_bytes: 0, reservations: 0 });
  });

  it("keeps a forced (shadow-mode) upload held at the tenant when the org cannot be asked, and counts it at both once it commits", async () => {
    const { tenant, stub } = quotaObject("org-down-forced");
    const { org, stub: orgStub } = orgObject("down-forced");
    const ref = { slug: org, quota: { bytes: { hard: 100 } } };
    silenceErrors();
    const { ns, calls } = withFaults(null, { method: "admit", times: 2, error: retryable });
    const r = await reserveUpload(ns, { tenant, quota: {}, org: ref, rawObject: "a", bytes: 10, nowMs: Date.now(), force: true });
    if (r.kind !== "unavailable" || r.ticket === undefined) throw new Error(`expected unavailable with a ticket, got ${JSON.stringify(r)}`);
    expect(r.scope).toBe("org");
    expect(calls).toEqual(["reserve", "admit", "admit"]);
    expect(await stub.usage()).toMatchObject({ reserved_bytes: 10, reservations: 1 });
    expect(await settleUpload(ns, r.ticket, { ok: true, nowMs: Date.now() })).toMatchObject({ kind: "committed", deltaBytes: 10 });
    expect(await orgStub.usage()).toMatchObject({ bytes: 10, reserved_bytes: 0 });
  });

  it("answers unavailable when the commit fails, and still committed when only the org's report fails", async () => {
    const { tenant, stub } = quotaObject("settle");
    const { org, stub: orgStub } = orgObject("settle");
    const ref = { slug: org, quota: { bytes: { soft: 1, hard: 100 } } };
    const logged = silenceErrors();
    const commitDown = withFaults({ method: "commit", times: 2, error: broken });
    const r = await reserveUpload(commitDown.ns, { tenant, quota: {}, org: ref, rawObject: "a", bytes: 10, nowMs: Date.now() });
    if (r.kind !== "reserved") throw new Error("expected a reservation");
    expect(await settleUpload(commitDown.ns, r.ticket, { ok: true, nowMs: Date.now() })).toEqual({ kind: "unavailable", deltaBytes: 0, late: false, warnings: [], audits: [] });
    expect(await stub.usage()).toMatchObject({ bytes: 0, reserved_bytes: 10 });

    const reportDown = withFaults(null, { method: "report", times: 2, error: broken });
    const settled = await settleUpload(reportDown.ns, r.ticket, { ok: true, nowMs: Date.now() });
    expect(settled).toEqual({ kind: "committed", deltaBytes: 10, late: false, warnings: [], audits: [] });
    // The org keeps the older figures (the upload's room still held) until it hears again.
    expect(await orgStub.usage()).toMatchObject({ bytes: 0, reserved_bytes: 10 });
    expect(logged.mock.calls.map((c) => JSON.parse(String(c[0])).event)).toEqual(["quota_commit_failed", "org_quota_report_failed"]);
  });
});

describe("warningHeaderValue", () => {
  it("joins the tenant's and the org's warnings, and is null without any", () => {
    expect(warningHeaderValue([])).toBeNull();
    expect(
      warningHeaderValue([
        { kind: "bytes", usage: 950, limit: 1000 },
        { kind: "objects", usage: 9, limit: 10 },
        { kind: "bytes", usage: 1900, limit: 2000, org: "acme" },
      ]),
    ).toBe("bytes 950/1000, objects 9/10, org:acme bytes 1900/2000");
  });
});
