// Org membership: the one place the org quota objects learn that a tenant
// joined or left an org.
//
// Contract (src/admin/tenants.ts keeps it):
// - Called BEFORE the D1 write that changes the tenant's org, with the org
//   the tenant has now (`fromOrg`, null for none or a new tenant) and the one
//   it will have (`toOrg`, null when it leaves, including a tenant delete).
//   Never called with fromOrg === toOrg.
// - Throwing fails the admin call with 503 quota_unavailable and leaves D1
//   unchanged, so the operator retries the same call. Both RPCs are
//   idempotent, so a retry with the same arguments does no harm.
// - If the D1 write fails after this succeeded, D1 still names `fromOrg` and
//   the retry repeats the sync; an operator who gives up instead leaves the
//   org objects ahead of D1 until the next change of that tenant's org (the
//   new org counts the tenant, the old one no longer does).
import type { Bindings } from "../exchange";
import { callQuota } from "../durable/quota-client";

export function orgStub(env: Bindings, org: string) {
  return env.ORG_QUOTA.get(env.ORG_QUOTA.idFromName(org));
}

/** Moves `tenant`'s membership (and with it, its stored bytes and objects) from `fromOrg` to `toOrg` in the org quota objects. */
export async function syncOrgMembership(env: Bindings, tenant: string, fromOrg: string | null, toOrg: string | null): Promise<void> {
  if (fromOrg !== null) await callQuota(() => orgStub(env, fromOrg).dropMember(tenant));
  // The new org reads the tenant's figures itself, so nothing stored is missed.
  if (toOrg !== null) await callQuota(() => orgStub(env, toOrg).setMember(tenant));
}

/** Empties a deleted org's quota object. Throws when it does not answer (the delete then fails with 503 and can be retried). */
export async function purgeOrgQuota(env: Bindings, org: string): Promise<void> {
  await callQuota(() => orgStub(env, org).purge());
}
