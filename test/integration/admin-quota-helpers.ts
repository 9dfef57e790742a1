// Stored bytes put straight into a tenant's quota object (reserve + commit,
// as the gateway does after an origin 2xx), for admin tests that need usage
// without going through an upload.
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { QuotaLimits } from "../../src/durable/quota-types";

/** Reserves and commits `bytes` for `object` under `quota` (default: unlimited); fails the test unless both succeed. */
export async function storeBytes(tenant: string, object: string, bytes: number, quota: QuotaLimits = {}): Promise<void> {
  const stub = env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant));
  const reservationId = crypto.randomUUID();
  const nowMs = Date.now();
  const reserved = await stub.reserve({ tenant, object, bytes, quota, reservationId, nowMs });
  expect(reserved.status).toBe("reserved");
  const committed = await stub.commit({ reservationId, nowMs, quota });
  expect(committed.status).toBe("committed");
}

export function quotaUsage(tenant: string) {
  return env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant)).usage();
}
