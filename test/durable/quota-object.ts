// A fresh TenantQuota per test (storage is isolated per file, not per test),
// and the cleanup that clears their alarms: alarms outlive isolated storage.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { TenantQuota } from "../../src/durable/tenant-quota";

const stubs: DurableObjectStub<TenantQuota>[] = [];

export function quotaObject(label: string): { tenant: string; stub: DurableObjectStub<TenantQuota> } {
  const tenant = `${label}-${crypto.randomUUID().slice(0, 8)}`;
  const stub = env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant));
  stubs.push(stub);
  return { tenant, stub };
}

/** For afterEach: deletes the alarm of every object quotaObject() handed out. */
export async function clearQuotaAlarms(): Promise<void> {
  for (const stub of stubs.splice(0)) await runInDurableObject(stub, (_, state) => state.storage.deleteAlarm());
}
