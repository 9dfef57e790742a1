// Shared helpers for tests that go through the Worker. Storage is shared by
// the tests of a file and by the files a runner ran before it (isolate: false
// in vitest.config.ts): every helper that names something takes a unique name
// from `unique()`.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import worker from "../src/index";
import { Exchange } from "../src/exchange";
import { declaredLength } from "../src/proxy/content-length";
import { splitUrl } from "../src/proxy/request-path";
import { compileRuntime, type Runtime, runtimeFor } from "../src/runtime";

let counter = 0;
/** A name no other test in this run uses: `<prefix>-<random>-<n>`. */
export function unique(prefix: string): string {
  counter += 1;
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}-${counter}`;
}

/** Where uniqueIp's run of addresses starts (random, so reruns differ). */
let ipSerial = (Math.random() * 0x3fffff) >>> 0;
/**
 * An IPv4 address no other call in this runner gets: the next of the shared
 * address space 100.64.0.0/10. Tests that block networks use 10.0.0.0/8 and
 * 172.16.0.0/12, and their blocks stay in D1 for the files the runner takes
 * next (isolate: false), so the addresses other tests call from stay out of
 * those networks.
 */
export function uniqueIp(): string {
  ipSerial = (ipSerial + 1) & 0x3fffff;
  return `100.${64 + (ipSerial >> 16)}.${(ipSerial >> 8) & 255}.${ipSerial & 255}`;
}

// ANALYTICS and ALERT_SECRET are optional bindings wrangler.toml does not name, so `wrangler types` leaves them out of Env.
export type EnvOverrides = Partial<Record<keyof Env | "ADMIN_TOKEN" | "AUDITOR_TOKEN" | "ANALYTICS" | "ALERT_SECRET", unknown>>;

/**
 * Call the Worker's default export directly, with env overrides (a TOLLGATE
 * config for this test, another ORIGIN_URL, a wrapped DB). Waits for the
 * request's waitUntil work when `settle` is set.
 */
export async function callGateway(
  request: Request,
  overrides: EnvOverrides = {},
  options: { settle?: boolean } = {},
): Promise<Response> {
  const ctx = createExecutionContext();
  const response = await worker.fetch(request as Request<unknown, IncomingRequestCfProperties>, { ...env, ...overrides } as Env, ctx);
  if (!options.settle) return response;
  // The gateway keeps the request alive (waitUntil) until the response body
  // is delivered, so read it before waiting for the background work.
  const body = await response.arrayBuffer();
  await waitOnExecutionContext(ctx);
  return new Response(response.status === 204 || response.status === 304 ? null : body, response);
}

/** A request to the gateway from `ip` (sent as CF-Connecting-IP, the peer). */
export function gatewayRequest(path: string, init: RequestInit & { ip?: string } = {}): Request {
  const headers = new Headers(init.headers);
  if (init.ip !== undefined) headers.set("cf-connecting-ip", init.ip);
  return new Request(`http://gateway.test${path}`, { ...init, headers });
}

export interface OriginSeen {
  method: string;
  url: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  raw_header_names: string[];
  body_bytes: number;
  body_sha256: string;
}

/** What the recording origin received with `x-test-tag: <tag>`. */
export async function originLog(tag: string): Promise<OriginSeen[]> {
  const res = await fetch(`${env.ORIGIN_URL}/__origin/requests?tag=${encodeURIComponent(tag)}`);
  return (await res.json()) as OriginSeen[];
}

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A problem+json body, typed loosely for assertions. */
export async function problemOf(response: Response): Promise<Record<string, unknown>> {
  expect(response.headers.get("content-type")).toBe("application/problem+json");
  return (await response.json()) as Record<string, unknown>;
}

/** The runtime the Worker uses for this TOLLGATE config (the same object the gateway's requests use). */
export function runtimeOf(config: unknown, overrides: EnvOverrides = {}): Runtime {
  return runtimeFor({ ...env, TOLLGATE: config, ...overrides } as unknown as Env);
}

/**
 * Polls `check` until it returns true or `timeoutMs` passes, then asserts it.
 * For effects that land in the background (a slot released when a pipe
 * settles): the test waits for the effect, never for a fixed time.
 */
export async function eventually(check: () => boolean | Promise<boolean>, message: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  expect(await check(), message).toBe(true);
}

/**
 * An Exchange for one request, to run a data-plane step alone: built on
 * `runtime` (its caches, tables and config), as the gateway builds it, with
 * the client address given rather than resolved.
 */
export function exchangeFor(runtime: Runtime, request: Request, options: { clientKey?: string; overrides?: EnvOverrides } = {}): Exchange {
  const config = runtime.config;
  if (config === null) throw new Error("the runtime's config is invalid");
  const { pathname, search } = splitUrl(request.url);
  const x = new Exchange(request, { ...env, ...options.overrides } as never, null, runtime, config, pathname, search, declaredLength(request.headers), Date.now());
  if (options.clientKey !== undefined) {
    x.clientKey = options.clientKey;
    x.clientAddress = options.clientKey;
  }
  return x;
}

/**
 * A gateway on a clock the test sets: its own runtime (own limiter table and
 * caches), compiled from `config`, whose every decision reads `clock.nowMs`.
 * For behaviour tied to time (windows, expiries, retry delays) without
 * sleeping or racing the wall clock.
 */
export function clockedGateway(config: unknown, overrides: EnvOverrides = {}, startMs = Date.now()) {
  const clock = { nowMs: startMs };
  const testEnv = { ...env, TOLLGATE: config, ...overrides } as unknown as Env;
  const runtime = compileRuntime(testEnv, { clock: () => clock.nowMs });
  return {
    clock,
    runtime,
    /** Calls the data plane; with `settle`, reads the body and waits for the background work; `env` overrides bindings for this call (a failing DB). */
    async call(request: Request, options: { settle?: boolean; env?: EnvOverrides } = {}): Promise<Response> {
      const ctx = createExecutionContext();
      const callEnv = options.env === undefined ? testEnv : ({ ...testEnv, ...options.env } as unknown as Env);
      const response = await runtime.gateway(request, callEnv, ctx);
      if (!options.settle) return response;
      const body = await response.arrayBuffer();
      await waitOnExecutionContext(ctx);
      return new Response(response.status === 204 || response.status === 304 ? null : body, response);
    },
  };
}
