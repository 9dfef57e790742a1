// Arrange steps for the traffic tests (console-traffic, cli-traffic): a
// tenant whose key is refused after its first requests, and alert rows as
// the queue handler writes them (no webhook is configured in the e2e
// gateway, so none is ever sent; d1Execute writes what it would have).
import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { adminCall, d1Execute, gateway, unique } from "./fixture";

export interface Refusals {
  tenant: string;
  keyId: string;
  caller: string;
  admitted: number;
  refused: number;
}

export interface TrafficMinute {
  minute: string;
  admitted: number;
  refused: number;
  decisions: Record<string, number>;
}

/**
 * A new tenant whose key may make `admitted` requests a minute, and
 * `admitted + refused` requests through the gateway with it: the first
 * `admitted` answered 200, the rest 429 `rate_limited`.
 */
export async function makeRefusals(prefix: string, admitted: number, refused: number): Promise<Refusals> {
  const tenant = unique(prefix);
  expect((await adminCall("PUT", `/tenants/${tenant}`, { limits: { request: { key: [{ count: admitted, window_s: 60 }] } } })).status).toBe(201);
  const key = (await adminCall("POST", `/tenants/${tenant}/keys`, { name: "traffic" })).body as { id: string; key: string };
  const statuses: number[] = [];
  for (let i = 0; i < admitted + refused; i += 1) {
    const res = await fetch(`${gateway().gatewayUrl}/traffic-e2e/${i}`, { headers: { authorization: `Bearer ${key.key}` } });
    await res.body?.cancel();
    statuses.push(res.status);
  }
  expect(statuses).toEqual([...Array<number>(admitted).fill(200), ...Array<number>(refused).fill(429)]);
  return { tenant, keyId: key.id, caller: `key:${key.id}`, admitted, refused };
}

/** GET /traffic?tenant= as the admin: the last hour of one tenant. */
export async function trafficOf(tenant: string): Promise<TrafficMinute[]> {
  const answer = await adminCall("GET", `/traffic?tenant=${tenant}`);
  expect(answer.status).toBe(200);
  return (answer.body as { minutes: TrafficMinute[] }).minutes;
}

export function totals(minutes: readonly TrafficMinute[]): { admitted: number; refused: number } {
  return { admitted: minutes.reduce((n, m) => n + m.admitted, 0), refused: minutes.reduce((n, m) => n + m.refused, 0) };
}

/** Waits until GET /traffic counts every request `makeRefusals` sent (the admin read flushes the isolate that counted them). */
export async function refusalsRecorded(r: Refusals): Promise<TrafficMinute[]> {
  await expect.poll(async () => totals(await trafficOf(r.tenant)), { timeout: 15_000, interval: 250 }).toEqual({ admitted: r.admitted, refused: r.refused });
  return trafficOf(r.tenant);
}

export interface StoredAlert {
  id: string;
  type: string;
  tenant: string;
  caller: string;
  state: string;
  attempts: Array<{ outcome: string; status: number | null }>;
  /** The alert's `data`, as its type carries it (default: a count of refusals). */
  data?: Record<string, unknown>;
}

/**
 * An alert as the queue handler records it: its row (with the body the
 * webhook was sent) and one row per attempt, a second apart, ending now.
 */
export async function insertAlert(a: Omit<StoredAlert, "id">): Promise<StoredAlert> {
  const id = `alt_${randomBytes(16).toString("hex")}`;
  const nowMs = Date.now();
  const atMs = nowMs - a.attempts.length * 1000;
  const body = JSON.stringify({ id, type: a.type, at: new Date(atMs).toISOString(), tenant: a.tenant, caller: a.caller, data: a.data ?? { refused: 42 } });
  const last = a.attempts[a.attempts.length - 1];
  const sql = [
    `INSERT INTO alerts (id, type, at_ms, tenant, state, attempts, last_status, body, updated_at) VALUES ('${id}', '${a.type}', ${atMs}, '${a.tenant}', '${a.state}', ${a.attempts.length}, ${last?.status ?? "NULL"}, '${body}', ${nowMs})`,
    ...a.attempts.map((t, i) => `INSERT INTO alert_attempts (alert_id, attempt, at_ms, outcome, status) VALUES ('${id}', ${i + 1}, ${atMs + (i + 1) * 1000}, '${t.outcome}', ${t.status ?? "NULL"})`),
  ].join("; ");
  await d1Execute(sql);
  return { id, ...a };
}
