// Emptying a deleted tenant's quota object (DESIGN §5, issue 10 item 4), so a
// tenant created again under the same slug starts at zero.
//
// DELETE /tenants/{t} purges BEFORE it deletes the D1 rows and fails with 503
// quota_unavailable when the purge fails: the tenant is then still there, so
// the operator's retry purges again (a purge of an empty object is a no-op).
// Purging after the D1 delete would leave, on failure, a tenant gone from D1
// whose bytes nobody can purge any more except by recreating it.
import type { Bindings } from "../context";
import { TenantQuota } from "../durable/tenant-quota";

export interface PurgeResult {
  /** What the object held before it was emptied. */
  readonly bytes: number;
  readonly objects: number;
}

export type PurgeOutcome = { ok: true; purged: PurgeResult | null } | { ok: false };

/** The RPC the TenantQuota object gains on another branch: `purge(): Promise<{bytes, objects}>`. */
interface Purgeable {
  purge(): Promise<PurgeResult>;
}

/**
 * TRANSITIONAL — delete this function and its one use once TenantQuota has
 * `purge()` (then the class check is always false). Until then the deployed
 * class cannot purge, and refusing every tenant delete would be worse than
 * the old behaviour (the object kept), so a call the object cannot serve is
 * skipped and logged, and only that: a binding that fails for another reason
 * is an outage and fails the delete.
 */
function purgeNotDeployed(error: unknown): boolean {
  return !("purge" in TenantQuota.prototype) && error instanceof TypeError && /does not implement "purge"/.test(error.message);
}

/** Empties the tenant's quota object; `purged` is null only while the RPC is not deployed (see above). */
export async function purgeTenantQuota(env: Bindings, tenant: string): Promise<PurgeOutcome> {
  try {
    const stub = env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant)) as unknown as Purgeable;
    const result = await stub.purge();
    return { ok: true, purged: { bytes: result.bytes, objects: result.objects } };
  } catch (error) {
    if (purgeNotDeployed(error)) {
      console.warn(JSON.stringify({ level: "warn", at_unix_ms: Date.now(), event: "quota_purge_not_deployed" }));
      return { ok: true, purged: null };
    }
    console.error(JSON.stringify({ level: "error", at_unix_ms: Date.now(), event: "quota_purge_failed", error: error instanceof Error ? error.name : "unknown" }));
    return { ok: false };
  }
}
