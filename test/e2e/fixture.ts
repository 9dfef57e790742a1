// What an e2e test calls to reach the gateway the project's global setup
// started: `const { gatewayUrl, adminToken, auditorToken } = gateway();`.
// One gateway (one D1) serves every e2e file, so name everything with
// `unique()`.
import { randomUUID } from "node:crypto";
import { inject } from "vitest";
import { executeLocalD1, type GatewayInfo } from "./gateway";

export type { GatewayInfo };

export function gateway(): GatewayInfo {
  return inject("gateway");
}

let counter = 0;
/** A name no other test in this run uses (a valid tenant slug): `<prefix>-<random>-<n>`. */
export function unique(prefix: string): string {
  counter += 1;
  return `${prefix}-${randomUUID().slice(0, 8)}-${counter}`;
}

/** A call to the admin API as a test's arrange step (not through the CLI). */
export async function adminCall(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const { gatewayUrl, adminToken } = gateway();
  const res = await fetch(`${gatewayUrl}/_tollgate/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? null : (JSON.parse(text) as unknown) };
}

/**
 * SQL on the gateway's local D1 through `wrangler d1 execute --local` (the
 * rows of each statement). Only for what no admin call can do, such as
 * removing a metering row to make drift on purpose.
 */
export function d1Execute(sql: string): Promise<Array<Record<string, unknown>[]>> {
  return executeLocalD1(gateway().stateDir, sql);
}
