// Runs a contract-fuzz scenario (test/model/scenario.ts) through the real
// gateway: a runtime of its own on a clock the scenario holds, the real
// TenantQuota and OrgQuota objects and D1, the recording origin answering
// each request as its script says (status, cost header, delay), and the real
// admin API bound to that same runtime, so explain reads this isolate's
// limiter. Reads back what a test can see: each answer's status, code,
// Retry-After, RateLimit headers and Tollgate-Shadow; the paths the origin
// received; explain, tenant usage and budgets afterwards.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Hono } from "hono";
import { vi } from "vitest";
import type { AdminEnv } from "../../src/admin/admin-env";
import { createAdminApp } from "../../src/admin/admin-app";
import { ADMIN_BASE } from "../../src/app";
import { compileRuntime } from "../../src/runtime";
import type { BudgetOwner, RequestSpec, Scenario } from "../model/scenario";
import { gatewayRequest, originLog, unique, uniqueIp } from "../helpers";
import { ADMIN_TOKEN } from "./admin-helpers";

export interface ObservedAnswer {
  status: number;
  code: string | null;
  retryAfter: string | null;
  shadow: string | null;
  body: Record<string, unknown> | null;
  policy: string | null;
  rateLimit: string | null;
}

export interface ObservedLimit {
  subject: string;
  category: string;
  kind: string;
  count: number;
  windowMs: number;
  burst: number;
  remaining: number;
  resetMs: number;
}

export interface Observed {
  answers: ObservedAnswer[];
  /** For each step that sent requests, the order their answers came back in (indices into the step's requests). */
  answerOrders: Record<number, number[]>;
  /** The paths the origin received, sorted. */
  originPaths: string[];
  limits: ObservedLimit[];
  quota: Record<string, { bytes: number; objects: number; reservedBytes: number }>;
  budgets: { owner: string; category: string; used: number }[];
}

/** The origin prices its answer in this header (scripts/origin.mjs). */
export const COST_HEADER = "x-usage-total-tokens";
const HUGE = [{ count: 1_000_000, window_s: 1 }];

/** The TOLLGATE config the gateway runs a scenario with: the scenario's, quiet and small. */
export function tollgateConfig(scenario: Scenario): Record<string, unknown> {
  return {
    ...scenario.config,
    categories: { ...scenario.config.categories, admin: { limits: { admin: HUGE } } },
    request_log: false,
    limiter: { max_memory_mib: 1 },
    usage: { flush_when_idle: false },
  };
}

/** A request the gateway has not finished with in this long is a finding of its own (a hang), not a slow run. */
const STEP_TIMEOUT_MS = 20_000;

async function withinTime<T>(work: Promise<T>, where: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${where}: the gateway had not finished after ${STEP_TIMEOUT_MS} ms`)), STEP_TIMEOUT_MS);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

export async function runThroughGateway(scenario: Scenario, startMs: number): Promise<Observed> {
  const clock = { nowMs: startMs };
  const testEnv = { ...env, TOLLGATE: tollgateConfig(scenario) } as unknown as Env;
  const runtime = compileRuntime(testEnv, { clock: () => clock.nowMs });
  const controlOf = (bound: ReturnType<typeof compileRuntime>): Hono<AdminEnv> => {
    const app = new Hono<AdminEnv>();
    app.use("*", async (c, next) => {
      c.set("runtime", bound);
      await next();
    });
    return app.route(ADMIN_BASE, createAdminApp());
  };
  const control = controlOf(runtime);
  /** Another isolate's admin API (a top-up written elsewhere): made when first needed. */
  let otherControl: Hono<AdminEnv> | null = null;

  /** An admin call on this runtime (or `elsewhere`, another's), with Date held at the scenario's clock (explain and budgets read Date). */
  const admin = async (method: string, path: string, body?: unknown, elsewhere = false): Promise<Record<string, unknown>> => {
    vi.useFakeTimers({ toFake: ["Date"], now: clock.nowMs });
    try {
      const headers: Record<string, string> = { authorization: `Bearer ${ADMIN_TOKEN}` };
      if (body !== undefined) headers["content-type"] = "application/json";
      const request = new Request(`http://gateway.test${ADMIN_BASE}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      if (elsewhere) otherControl ??= controlOf(compileRuntime(testEnv, { clock: () => clock.nowMs }));
      const res = await (elsewhere ? otherControl! : control).fetch(request, testEnv, createExecutionContext());
      const text = await res.text();
      if (res.status >= 300) throw new Error(`admin ${method} ${path} answered ${res.status}: ${text}`);
      return JSON.parse(text) as Record<string, unknown>;
    } finally {
      vi.useRealTimers();
    }
  };

  const names = {
    t0: unique("cf-t0"),
    t1: unique("cf-t1"),
    o0: unique("cf-o0"),
  };
  const keyIds: Record<string, string> = {};
  const keySecrets: Record<string, string> = {};
  if (scenario.tenants.some((t) => t.org !== null)) await admin("PUT", `/orgs/${names.o0}`, {});
  for (const t of scenario.tenants) {
    await admin("PUT", `/tenants/${names[t.name]}`, { ...(t.quota === null ? {} : { quota: t.quota }), ...(t.org === null ? {} : { org: names[t.org] }) });
  }
  for (const k of scenario.keys) {
    const minted = await admin("POST", `/tenants/${names[k.tenant]}/keys`, { name: k.name });
    keyIds[k.name] = String(minted.id);
    keySecrets[k.name] = String(minted.key);
  }
  const ownerPath = (owner: BudgetOwner): string =>
    owner.kind === "key" ? `/keys/${keyIds[owner.name]}` : owner.kind === "tenant" ? `/tenants/${names[owner.name]}` : `/orgs/${names[owner.name]}`;
  for (const b of scenario.budgets) await admin("PUT", `${ownerPath(b.owner)}/budgets/${b.category}`, { amount: b.amount, period: b.period, ...(b.shadow === true ? { shadow: true } : {}) });

  const ip = uniqueIp();
  const tag = unique("cf");
  const requestOf = (spec: RequestSpec): Request => {
    const headers: Record<string, string> = {
      "x-test-tag": tag,
      "x-origin-status": String(spec.origin.status),
      "x-origin-delay-ms": String(spec.origin.delayMs),
    };
    if (spec.origin.cost !== null) headers["x-origin-usage-header"] = String(spec.origin.cost);
    if (spec.credential === "kA" || spec.credential === "kB") headers.authorization = `Bearer ${keySecrets[spec.credential]}`;
    if (spec.credential === "bogus") headers.authorization = "Bearer tg_zzzzzzzzzzzz_0000000000000000000000000000000000000000000";
    const body = spec.bodyBytes > 0 ? "x".repeat(spec.bodyBytes) : undefined;
    if (body !== undefined) headers["content-length"] = String(spec.bodyBytes);
    return gatewayRequest(spec.path, { method: spec.method, ip, headers, ...(body === undefined ? {} : { body }) });
  };

  const call = async (spec: RequestSpec, index: number, answered: number[]): Promise<ObservedAnswer> => {
    const ctx = createExecutionContext();
    const res = await runtime.gateway(requestOf(spec), testEnv, ctx);
    // The origin has answered (or the gateway has): its settlement starts now, whatever its body and an org's report take after.
    answered.push(index);
    const problem = res.headers.get("content-type") === "application/problem+json";
    let body: Record<string, unknown> | null = null;
    if (spec.hangUp && !problem) await res.body?.cancel();
    else {
      const text = await res.text();
      if (problem) body = JSON.parse(text) as Record<string, unknown>;
    }
    await waitOnExecutionContext(ctx);
    return {
      status: res.status,
      code: body === null ? null : String(body.code),
      retryAfter: res.headers.get("retry-after"),
      shadow: res.headers.get("tollgate-shadow"),
      body,
      policy: res.headers.get("ratelimit-policy"),
      rateLimit: res.headers.get("ratelimit"),
    };
  };

  const answers: ObservedAnswer[] = [];
  const answerOrders: Record<number, number[]> = {};
  for (const [index, step] of scenario.steps.entries()) {
    if (step.kind === "advance") clock.nowMs += step.ms;
    else if (step.kind === "topup") {
      const credits = scenario.budgets.filter((b) => b.period === "none");
      const b = credits[step.budget % Math.max(1, credits.length)];
      if (b !== undefined) await admin("POST", `${ownerPath(b.owner)}/budgets/${b.category}/topups`, { amount: step.amount, reason: "contract fuzz" }, step.elsewhere === true);
    } else {
      const answered: number[] = [];
      answers.push(...(await withinTime(Promise.all(step.requests.map((r, i) => call(r, i, answered))), `step ${index}`)));
      answerOrders[index] = answered;
    }
  }

  const originPaths = (await originLog(tag)).map((seen) => seen.path).sort();

  const callerKeys: [string, string][] = [];
  const used = new Set<string>();
  for (const step of scenario.steps) if (step.kind === "send") for (const r of step.requests) used.add(r.credential);
  for (const k of scenario.keys) {
    if (!used.has(k.name)) continue;
    callerKeys.push([k.name, `key:${keyIds[k.name]}`]);
    const tenant = k.tenant;
    if (!callerKeys.some(([n]) => n === tenant)) callerKeys.push([tenant, `tenant:${names[tenant]}`]);
  }
  if (used.has("anon")) callerKeys.push(["anon", `ip:${ip}`]);
  const limits: ObservedLimit[] = [];
  for (const [name, callerKey] of callerKeys) {
    const explained = (await admin("GET", `/callers/${encodeURIComponent(callerKey)}`)) as { limits: { category: string; subject: string; limit: { count: number; window_s: number; burst?: number }; remaining: number; reset_ms: number }[] };
    for (const l of explained.limits) {
      limits.push({ subject: name, category: l.category, kind: l.subject, count: l.limit.count, windowMs: Math.round(l.limit.window_s * 1000), burst: l.limit.burst ?? l.limit.count, remaining: l.remaining, resetMs: l.reset_ms });
    }
  }

  const quota: Observed["quota"] = {};
  for (const t of scenario.tenants) {
    const usage = await admin("GET", `/tenants/${names[t.name]}/usage`);
    quota[t.name] = { bytes: Number(usage.bytes), objects: Number(usage.objects), reservedBytes: Number(usage.reserved_bytes) };
  }

  // Leases hand their unspent units back, so `used` reads what was spent.
  const leases = (runtime as unknown as { budgetLeases?: { closeAll(ns: unknown, ctx: null, nowMs: number, audits: () => void): Promise<void> } }).budgetLeases;
  await leases?.closeAll({ tenant: env.TENANT_QUOTA, org: (env as unknown as { ORG_QUOTA: unknown }).ORG_QUOTA }, null, clock.nowMs, () => {});
  const budgets: Observed["budgets"] = [];
  for (const b of scenario.budgets) {
    const read = await admin("GET", `${ownerPath(b.owner)}/budgets/${b.category}`);
    budgets.push({ owner: `${b.owner.kind}:${b.owner.name}`, category: b.category, used: Number(read.used) });
  }
  return { answers, answerOrders, originPaths, limits, quota, budgets };
}
