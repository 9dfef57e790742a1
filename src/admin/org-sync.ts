// ─── Org membership hook: the one place the org quota objects learn that a
// tenant joined or left an org. ───────────────────────────────────────────
//
// STATUS: does nothing yet. The org quota objects (an `OrgQuota` Durable
// Object with member-sync RPCs, src/durable) are being built separately; the
// lead wires this function to them after merging. Nothing else in the admin
// API needs to change then.
//
// Contract for whoever fills it in:
// - Called BEFORE the D1 write that changes the tenant's org, with the org
//   the tenant has now (`fromOrg`, null for none or a new tenant) and the one
//   it will have (`toOrg`, null when it leaves, including a tenant delete).
//   Never called with fromOrg === toOrg.
// - Throwing fails the admin call with 503 quota_unavailable and leaves D1
//   unchanged, so the operator retries the same call. A retry calls this
//   again with the same arguments (D1 still shows `fromOrg`), so it must be
//   idempotent: "tenant T belongs to toOrg, not fromOrg", applied twice, is
//   applied once.
// - If the D1 write fails after this succeeded, D1 still names `fromOrg` and
//   the retry repeats the sync; an operator who gives up instead leaves the
//   org objects ahead of D1 until the next change of that tenant's org.
import type { Bindings } from "../context";

/**
 * Moves `tenant`'s membership (and with it, its stored bytes and objects)
 * from `fromOrg` to `toOrg` in the org quota objects. Not wired yet: resolves
 * at once. See the contract above.
 */
export async function syncOrgMembership(env: Bindings, tenant: string, fromOrg: string | null, toOrg: string | null): Promise<void> {
  // Not wired yet: see STATUS above.
}
