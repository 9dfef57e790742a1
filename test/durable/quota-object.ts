// A fresh TenantQuota or OrgQuota per test (storage is isolated per file, not
// per test), and the cleanup that clears their alarms: alarms outlive
// isolated storage.
import { abortAllDurableObjects, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { OrgQuota } from "../../src/durable/org-quota";
import type { QuotaNamespaces } from "../../src/durable/quota-client";
import type { TenantQuota } from "../../src/durable/tenant-quota";

/** The objects handed out, by namespace and name: a stub is broken once its object is aborted, so cleanup takes fresh ones. */
const handedOut: Array<{ readonly ns: DurableObjectNamespace<TenantQuota> | DurableObjectNamespace<OrgQuota>; readonly name: string }> = [];

/** The real namespaces, as the edge passes them to quota-client. */
export const namespaces: QuotaNamespaces = { tenant: env.TENANT_QUOTA, org: env.ORG_QUOTA };

export function quotaObject(label: string): { tenant: string; stub: DurableObjectStub<TenantQuota> } {
  const tenant = `${label}-${crypto.randomUUID().slice(0, 8)}`;
  const stub = env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant));
  handedOut.push({ ns: env.TENANT_QUOTA, name: tenant });
  return { tenant, stub };
}

export function orgObject(label: string): { org: string; stub: DurableObjectStub<OrgQuota> } {
  const org = `${label}-${crypto.randomUUID().slice(0, 8)}`;
  const stub = env.ORG_QUOTA.get(env.ORG_QUOTA.idFromName(org));
  handedOut.push({ ns: env.ORG_QUOTA, name: org });
  return { org, stub };
}

/** For afterEach: deletes the alarm of every object quotaObject() or orgObject() handed out. */
export async function clearQuotaAlarms(): Promise<void> {
  for (const { ns, name } of handedOut.splice(0)) {
    const stub = ns.get(ns.idFromName(name)) as DurableObjectStub<TenantQuota>;
    await runInDurableObject(stub, (_, state) => state.storage.deleteAlarm());
  }
}

/**
 * Drops the instance (the in-memory state) of every object in this file and
 * returns a fresh stub of the tenant's object, which the next call constructs
 * again from its SQLite storage. Stubs taken before are broken afterwards.
 */
export async function evictTenantQuota(tenant: string): Promise<DurableObjectStub<TenantQuota>> {
  await abortAllDurableObjects();
  return env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant));
}
