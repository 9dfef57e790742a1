// Emptying a deleted tenant's quota object, so a
// tenant created again under the same slug starts at zero.
//
// DELETE /tenants/{t} purges BEFORE it deletes the D1 rows and fails with 503
// quota_unavailable when the purge fails: the tenant is then still there, so
// the operator's retry purges again (a purge of an empty object is a no-op).
// Purging after the D1 delete would leave, on failure, a tenant gone from D1
// whose bytes nobody can purge any more except by recreating it.
import type { Bindings } from "../context";
import { callQuota } from "../durable/quota-client";
import type { PurgeResult } from "../durable/quota-types";
import { errorName, log } from "../log/logger";
import { quotaStub } from "./usage";

export type PurgeOutcome = { ok: true; purged: PurgeResult } | { ok: false };

/** Empties the tenant's quota object. */
export async function purgeTenantQuota(env: Bindings, tenant: string): Promise<PurgeOutcome> {
  try {
    const result = await callQuota(() => quotaStub(env, tenant).purge());
    return { ok: true, purged: { bytes: result.bytes, objects: result.objects } };
  } catch (error) {
    log.error("quota_purge_failed", { error: errorName(error) });
    return { ok: false };
  }
}
