// Helpers for the admin and key tests: admin calls through the Worker with a
// config that lifts the admin rate limit (the default 10/s would throttle a
// test file), and D1 bindings that count or fail.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import worker from "../../src/index";
import { callGateway, type EnvOverrides, gatewayRequest, unique } from "../helpers";

export const ADMIN_TOKEN = "test-admin-token-0123456789abcdefghij";
export const AUDITOR_TOKEN = "test-auditor-token-0123456789abcdefgh";
export const ADMIN_BASE = "/_tollgate/admin/v1";

/** A config whose admin limit no test file reaches. One object per file keeps it parsed once. */
export function testConfig(extra: Record<string, unknown> = {}): Record<string, unknown> {
  // The request log is off here to keep test output readable; operations.test.ts turns it on.
  return { categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } } }, request_log: false, ...extra };
}

export interface AdminCall {
  token?: string | null;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
  env?: EnvOverrides;
}

export function adminCall(method: string, path: string, config: Record<string, unknown>, call: AdminCall = {}): Promise<Response> {
  const headers = new Headers(call.headers);
  const token = call.token === undefined ? ADMIN_TOKEN : call.token;
  if (token !== null) headers.set("authorization", `Bearer ${token}`);
  let body: string | undefined = call.rawBody;
  if (call.body !== undefined) {
    body = JSON.stringify(call.body);
    headers.set("content-type", "application/json");
  }
  return callGateway(gatewayRequest(`${ADMIN_BASE}${path}`, { method, headers, ...(body === undefined ? {} : { body }) }), { TOLLGATE: config, ...call.env });
}

export async function jsonOf<T = Record<string, unknown>>(response: Response, status: number): Promise<T> {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  return JSON.parse(text) as T;
}

export async function createTenant(config: Record<string, unknown>, slug: string, body: unknown = {}): Promise<void> {
  await jsonOf(await adminCall("PUT", `/tenants/${slug}`, config, { body }), 201);
}

export interface Minted {
  id: string;
  key: string;
  name: string;
  prefix: string;
  created_at: string;
  expires_at: string | null;
}

export async function mintKey(config: Record<string, unknown>, tenant: string, body: Record<string, unknown> = { name: "test key" }): Promise<Minted> {
  return jsonOf<Minted>(await adminCall("POST", `/tenants/${tenant}/keys`, config, { body }), 201);
}

/** A new tenant (named `<prefix>-…`, made with `body`: its quota, limits) and a key minted for it. */
export async function tenantWithKey(config: Record<string, unknown>, body: Record<string, unknown> = {}, prefix = "tk"): Promise<{ tenant: string; key: string; id: string }> {
  const tenant = unique(prefix);
  await createTenant(config, tenant, body);
  const minted = await mintKey(config, tenant);
  return { tenant, key: minted.key, id: minted.id };
}

/**
 * A gateway request with a credential, from `ip`. With `settle`, the body is
 * read before the request's waitUntil work is awaited (an in-flight slot is
 * held until the body is delivered), and the response is rebuilt from it.
 */
export async function keyedCall(key: string, path: string, config: Record<string, unknown>, options: { ip?: string; tag?: string; db?: D1Database; settle?: boolean; header?: "authorization" | "x-api-key" } = {}): Promise<Response> {
  const headers: Record<string, string> = {};
  if (options.header === "x-api-key") headers["x-api-key"] = key;
  else headers.authorization = `Bearer ${key}`;
  if (options.tag !== undefined) headers["x-test-tag"] = options.tag;
  const request = gatewayRequest(path, { headers, ip: options.ip ?? "198.51.100.7" });
  const overrides = { TOLLGATE: config, ...(options.db === undefined ? {} : { DB: options.db }) };
  if (options.settle !== true) return callGateway(request, overrides);
  const ctx = createExecutionContext();
  const response = await worker.fetch(request as Request<unknown, IncomingRequestCfProperties>, { ...env, ...overrides } as Env, ctx);
  const body = await response.arrayBuffer();
  await waitOnExecutionContext(ctx);
  return new Response(body, { status: response.status, headers: response.headers });
}

export interface QueryCounts {
  prepare: number;
  batch: number;
  exec: number;
}

/** env.DB behind a proxy that counts every statement prepared, batch and exec. */
export function countingDb(db: D1Database = env.DB): { db: D1Database; counts: QueryCounts } {
  const counts: QueryCounts = { prepare: 0, batch: 0, exec: 0 };
  const proxy = new Proxy(db, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        if (prop === "prepare") counts.prepare++;
        else if (prop === "batch") counts.batch++;
        else if (prop === "exec") counts.exec++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { db: proxy, counts };
}

/** TENANT_QUOTA behind a proxy that records every RPC method called on its stubs. */
export function countingQuota(): { ns: DurableObjectNamespace; calls: string[] } {
  const calls: string[] = [];
  const real = env.TENANT_QUOTA;
  const ns = {
    idFromName: (name: string) => real.idFromName(name),
    get: (id: DurableObjectId) => {
      const stub = real.get(id) as unknown as Record<string, (...args: unknown[]) => unknown>;
      return new Proxy(
        {},
        {
          get: (_, name) =>
            (...args: unknown[]) => {
              calls.push(String(name));
              return stub[String(name)]!(...args);
            },
        },
      );
    },
  } as unknown as DurableObjectNamespace;
  return { ns, calls };
}

/** A D1 binding that fails every query, as an outage would. */
export function failingDb(): D1Database {
  const fail = () => {
    throw new Error("D1_ERROR: simulated outage");
  };
  return {
    prepare: fail,
    batch: async () => fail(),
    exec: async () => fail(),
    dump: async () => fail(),
    withSession: fail,
  } as unknown as D1Database;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
