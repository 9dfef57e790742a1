// A fresh TenantQuota or OrgQuota per test (storage is isolated per file, not
// per test), and the cleanup that clears their alarms: alarms outlive
// isolated storage.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { OrgQuota } from "../../src/durable/org-quota";
import type { QuotaNamespaces } from "../../src/durable/quota-client";
import type { TenantQuota } from "../../src/durable/tenant-quota";

const stubs: Array<DurableObjectStub<TenantQuota> | DurableObjectStub<OrgQuota>> = [];

/** The real namespaces, as the edge passes them to quota-client. */
export const namespaces: QuotaNamespaces = { tenant: env.TENANT_QUOTA, org: env.ORG_QUOTA };

export function quotaObject(label: string): { tenant: string; stub: DurableObjectStub<TenantQuota> } {
  const tenant = `${label}-${crypto.randomUUID().slice(0, 8)}`;
  const stub = env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant));
  stubs.push(stub);
  return { tenant, stub };
}

export function orgObject(label: string): { org: string; stub: DurableObjectStub<OrgQuota> } {
  const org = `${label}-${crypto.randomUUID().slice(0, 8)}`;
  const stub = env.ORG_QUOTA.get(env.ORG_QUOTA.idFromName(org));
  stubs.push(stub);
  return { org, stub };
}

/** For afterEach: deletes the alarm of every object quotaObject() or orgObject() handed out. */
export async function clearQuotaAlarms(): Promise<void> {
  for (const stub of stubs.splice(0)) await runInDurableObject(stub as DurableObjectStub<TenantQuota>, (_, state) => state.storage.deleteAlarm());
}
