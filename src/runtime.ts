// One runtime per config (issue 11, docs/design.md): everything the gateway
// derives from its configuration — the parsed TOLLGATE config, the origin
// URL, the admin tokens, the limiter table, the in-flight table, the caches
// and the compiled data plane — built once, the first time a configuration
// is seen, and kept for the isolate's life. In production an isolate sees one
// configuration; a test that passes another gets a runtime of its own (the
// last one is kept: a runtime preallocates its limiter table, so keeping
// several would multiply that memory).
import { BudgetRefusals } from "./cache/budget-refusals";
import { BudgetLeases } from "./limits/budget-leases";
import { KeyCache } from "./cache/key-cache";
import { KeyCheckLoader } from "./cache/key-check";
import { PolicyCache } from "./cache/policy-cache";
import { TenantCache } from "./cache/tenant-cache";
import { type Config, parseConfig } from "./config";
import type { Bindings } from "./exchange";
import { LimiterTable } from "./engine/limiter-table";
import { compileGateway, configFault, type GatewayHandler } from "./gateway";
import { AuthFailureGate } from "./limits/auth-gate";
import { GlobalLeases } from "./limits/global-leases";
import { InFlightTable } from "./limits/in-flight";
import { PenaltyBox } from "./limits/penalty";
import { HeldRequests, type Sleep, timerSleep } from "./limits/delay";
import { StreamTable } from "./limits/streams";
import { UsageMeter } from "./db/usage-meter";
import { TrafficRecorder } from "./db/traffic-recorder";
import { AlertOnce } from "./alerts/raise";
import { UsageTracker } from "./identity/usage-tracker";
import { compileJwtConfig, type JwtVerifier } from "./identity/jwt-verifier";
import { log } from "./log/logger";
import { RequestLogPolicy } from "./log/request-log-policy";
import { database } from "./db/client";
import { auditSubject, isReadableSubject } from "./identity/audit-subject";
import { type OriginBaseResult, parseOriginBase } from "./proxy/origin-url";
import { compileUpstreams, type UpstreamsResult } from "./proxy/upstream";
import { deriveHmacKey, sha256Bytes } from "./utils/crypto";
import type { Background } from "./utils/wait-until";

/** What the console session keys are derived for: no other signature made from a token verifies as a session. */
const CONSOLE_SESSION_KEY_LABEL = "tollgate console session v1";

/** Shorter admin tokens disable the admin API. */
const MIN_ADMIN_TOKEN_CHARS = 32;

export type AdminTokens =
  | {
      readonly enabled: true;
      readonly admin: Promise<Uint8Array>;
      readonly auditor: Promise<Uint8Array> | null;
      /** Keys that sign the console's session cookies, each derived from its token: a changed token voids its sessions. */
      readonly sessionKeys: { readonly admin: Promise<CryptoKey>; readonly auditor: Promise<CryptoKey> | null };
    }
  | { readonly enabled: false; readonly reason: string };

export interface Runtime {
  /** The validated config; null when TOLLGATE does not validate (see configError). */
  readonly config: Config | null;
  readonly configError: { readonly field: string; readonly message: string } | null;
  /** The config the admin API runs with: TOLLGATE, or the built-in defaults when it is invalid (the admin API must stay usable). */
  readonly adminConfig: Config;
  readonly origin: OriginBaseResult;
  /** Where admitted requests go (ORIGIN_URL and the named origins); null while the config or ORIGIN_URL is invalid. */
  readonly upstreams: UpstreamsResult | null;
  readonly adminTokens: AdminTokens;
  readonly limiter: LimiterTable;
  /** Leases on global limits, bounded by cache_max_entries (subject, category) groups. */
  readonly leases: GlobalLeases;
  readonly inFlight: InFlightTable;
  /** Requests held rather than refused (a limit's delay_max_ms), bounded by limiter.max_delayed. */
  readonly held: HeldRequests;
  /** How a held request waits: a timer, unless a test gives its own. */
  readonly sleep: Sleep;
  /** Open WebSocket streams per credential. */
  readonly streams: StreamTable;
  /** Budgets that refused lately and objects that failed: refused here without an object call (bounded by cache_max_entries). */
  readonly budgetRefusals: BudgetRefusals;
  /** Leases of budgets: units the quota objects granted this isolate, spent with no I/O (bounded by cache_max_entries budgets). */
  readonly budgetLeases: BudgetLeases;
  readonly authGate: AuthFailureGate;
  readonly keys: KeyCache;
  readonly keyCheck: KeyCheckLoader;
  readonly policy: PolicyCache;
  /** Refusals counted for limits with a penalty, and the penalties this isolate wrote (bounded by penalty.max_per_minute). */
  readonly penalties: PenaltyBox;
  readonly tenants: TenantCache;
  /** Key usage (last use, count) waiting to be written to D1; bounded by usage.max_pending. */
  readonly keyUsage: UsageTracker;
  /** Monthly metering per tenant waiting to be written to D1; bounded by usage.max_pending. */
  readonly meter: UsageMeter;
  /** Requests per minute, tenant and decision, and the callers refused most, waiting to be written to D1. */
  readonly traffic: TrafficRecorder;
  /** Alerts raised lately by this isolate (one `block.hit` per block per hour, one `ledger.unavailable` a minute, at most alerts.max_per_type_per_minute of a type). */
  readonly alertOnce: AlertOnce;
  /** JWT verification: its key sets and verified tokens; null when no issuer is configured. */
  readonly jwt: JwtVerifier | null;
  /** Which request-log lines are written, the per-second refusal cap and its summaries. */
  readonly requestLog: RequestLogPolicy;
  /** The clock every decision reads (Unix ms). Date.now() unless a test gives its own. */
  readonly now: () => number;
  /** The compiled data plane. */
  readonly gateway: GatewayHandler;
}

export interface RuntimeOptions {
  /** A clock for tests; default Date.now. */
  readonly clock?: () => number;
  /** How a held request waits, for tests on a held clock; default a timer. */
  readonly sleep?: Sleep;
}

let defaultConfig: Config | null = null;

function builtInConfig(): Config {
  if (defaultConfig === null) {
    const parsed = parseConfig({});
    if (!parsed.ok) throw new Error("the built-in config does not validate");
    defaultConfig = parsed.config;
  }
  return defaultConfig;
}

/** A configured token, trimmed (`echo token | wrangler secret put` leaves a newline). */
function configuredToken(raw: unknown): string | null {
  if (typeof raw !== "string") return null;
  const token = raw.trim();
  return token === "" ? null : token;
}

function adminTokensOf(env: Bindings): AdminTokens {
  const admin = configuredToken(env.ADMIN_TOKEN);
  if (admin === null) return { enabled: false, reason: "no ADMIN_TOKEN secret is set" };
  if (admin.length < MIN_ADMIN_TOKEN_CHARS) return { enabled: false, reason: `ADMIN_TOKEN is shorter than ${MIN_ADMIN_TOKEN_CHARS} characters` };
  const auditor = configuredToken(env.AUDITOR_TOKEN);
  // A short auditor token is ignored rather than disabling the admin token: it simply never matches.
  const auditorOk = auditor !== null && auditor.length >= MIN_ADMIN_TOKEN_CHARS;
  return {
    enabled: true,
    admin: sha256Bytes(admin),
    auditor: auditorOk ? sha256Bytes(auditor) : null,
    sessionKeys: { admin: deriveHmacKey(admin, CONSOLE_SESSION_KEY_LABEL), auditor: auditorOk ? deriveHmacKey(auditor, CONSOLE_SESSION_KEY_LABEL) : null },
  };
}

/** What a runtime is compiled from: the parsed TOLLGATE (or its error), ORIGIN_URL, and the upstreams (null while either is invalid). */
function configPartsOf(env: Bindings): Pick<Runtime, "config" | "configError" | "origin" | "upstreams"> {
  const parsed = parseConfig((env as { TOLLGATE?: unknown }).TOLLGATE);
  const config = parsed.ok ? parsed.config : null;
  const origin = parseOriginBase(env.ORIGIN_URL);
  const upstreams = config !== null && origin.ok ? compileUpstreams(origin.base, config.origins, config.routeOrigins, env) : null;
  return { config, configError: parsed.ok ? null : { field: parsed.field, message: parsed.message }, origin, upstreams };
}

/** The configuration fault this isolate last logged: the same one is not logged again for every runtime compiled from it. */
let loggedFault: string | null = null;

/**
 * Logs what is wrong with the configuration (the field and the reason, never
 * a value): one line per fault and isolate, so an invalid config shows in
 * Workers Logs and in the `wrangler dev` terminal, not only in answers.
 */
function logConfigFault(fault: { readonly field: string; readonly message: string } | null): void {
  const key = fault === null ? null : `${fault.field}\n${fault.message}`;
  if (key === loggedFault) return;
  loggedFault = key;
  if (fault === null) return;
  log.error("config_invalid", {
    field: fault.field,
    message: fault.message,
    effect: "every gateway request answers 500 config_invalid and /_tollgate/health 503 until it is fixed",
  });
}

/**
 * Needs the env the isolate starts with; logs its configuration's fault, if
 * any, before any request (`wrangler dev` evaluates the Worker as a reload
 * brings the config in, so the terminal says what is wrong at once). Pure
 * parsing: nothing is compiled or kept.
 */
export function reportConfigAtStart(env: Bindings): void {
  logConfigFault(configFault(configPartsOf(env)));
}

/** Needs the env (TOLLGATE, ORIGIN_URL, the admin secrets) and optionally a clock; returns a new Runtime. Pure of module state; runtimeFor() keeps the last one. */
export function compileRuntime(env: Bindings, options: RuntimeOptions = {}): Runtime {
  const { config, configError, origin, upstreams } = configPartsOf(env);
  const adminConfig = config ?? builtInConfig();
  const limiter = new LimiterTable(adminConfig.limiterMaxMemoryMib);
  const now = options.clock ?? Date.now;
  // The keys' use is written whenever metering is (src/db/usage-meter.ts).
  const keyUsage = new UsageTracker();
  const runtime: Runtime & { gateway: GatewayHandler } = {
    config,
    configError,
    adminConfig,
    origin,
    upstreams,
    adminTokens: adminTokensOf(env),
    limiter,
    leases: new GlobalLeases({ ...adminConfig.global, maxGroups: adminConfig.cacheMaxEntries }, now),
    inFlight: new InFlightTable(),
    held: new HeldRequests(adminConfig.limiterMaxDelayed),
    sleep: options.sleep ?? timerSleep,
    streams: new StreamTable(),
    budgetRefusals: new BudgetRefusals(adminConfig.budgetExhaustedCacheMs, adminConfig.cacheMaxEntries),
    budgetLeases: new BudgetLeases({ leaseMs: adminConfig.budgetLeaseMs, maxSlots: adminConfig.cacheMaxEntries }, now),
    authGate: new AuthFailureGate(limiter, adminConfig.authFailureLimits),
    keys: new KeyCache(adminConfig),
    keyCheck: new KeyCheckLoader(adminConfig.cacheTtlMs),
    policy: new PolicyCache(adminConfig),
    penalties: new PenaltyBox(adminConfig.penaltyMaxPerMinute),
    tenants: new TenantCache(adminConfig),
    keyUsage,
    meter: new UsageMeter(keyUsage),
    traffic: new TrafficRecorder(),
    alertOnce: new AlertOnce(),
    jwt:
      config?.jwt == null
        ? null
        : compileJwtConfig(config.jwt, {
            staleIfErrorS: config.staleIfErrorMs / 1000,
            onJwksFailure: (_url, reason) => log.warn("jwks_fetch_failed", { reason }),
          }),
    requestLog: new RequestLogPolicy({
      mode: adminConfig.requestLog,
      sample: adminConfig.requestLogSample,
      refusalsPerS: adminConfig.requestLogRefusalsPerS,
      write: (line) => log.raw(line),
      // As the audit log names them: key ids as they are, addresses and JWT subjects as keyed digests.
      nameCallers: async (callerKeys) => {
        if (callerKeys.every(isReadableSubject)) return callerKeys;
        const key = await runtime.keyCheck.auditKey(database(env.DB), now(), true);
        return Promise.all(callerKeys.map((k) => auditSubject(key!, k)));
      },
    }),
    now,
    gateway: null as unknown as GatewayHandler,
  };
  runtime.gateway = compileGateway(runtime);
  logConfigFault(configFault(runtime));
  return runtime;
}

let last: { tollgate: unknown; originUrl: unknown; adminToken: unknown; auditorToken: unknown; runtime: Runtime } | null = null;

/**
 * Needs the env; returns the runtime for its configuration, compiled the
 * first time it is seen. The runtime it replaces hands back the budget units
 * its leases hold (in the background of `ctx`), rather than leave them
 * counted as spent until the leases end.
 */
export function runtimeFor(env: Bindings, ctx: Background | null = null): Runtime {
  const tollgate = (env as { TOLLGATE?: unknown }).TOLLGATE;
  const cached = last;
  if (cached !== null && cached.tollgate === tollgate && cached.originUrl === env.ORIGIN_URL && cached.adminToken === env.ADMIN_TOKEN && cached.auditorToken === env.AUDITOR_TOKEN) {
    return cached.runtime;
  }
  const runtime = compileRuntime(env);
  last = { tollgate, originUrl: env.ORIGIN_URL, adminToken: env.ADMIN_TOKEN, auditorToken: env.AUDITOR_TOKEN, runtime };
  if (cached !== null) void cached.runtime.budgetLeases.closeAll({ tenant: env.TENANT_QUOTA, org: env.ORG_QUOTA }, ctx, cached.runtime.now(), () => {});
  return runtime;
}

/**
 * Needs the env; returns its parsed configuration (null when invalid): the
 * compiled runtime's when it is the one runtimeFor holds, else parsed alone.
 * For work that needs only the configuration (the alerts' queue handler):
 * unlike runtimeFor, it never replaces the runtime the requests use, so a
 * batch delivered for another configuration (in the tests, where one isolate
 * serves many) does not reset that runtime's counters.
 */
export function configFor(env: Bindings): Config | null {
  const tollgate = (env as { TOLLGATE?: unknown }).TOLLGATE;
  const cached = last;
  if (cached !== null && cached.tollgate === tollgate) return cached.runtime.config;
  const parsed = parseConfig(tollgate);
  return parsed.ok ? parsed.config : null;
}

/** Health's `status` while the configuration (TOLLGATE, ORIGIN_URL, the named origins) is invalid. */
export const HEALTH_CONFIG_INVALID = "config_invalid";

/** What /_tollgate/health reports beyond `status`: an invalid config, a bad ORIGIN_URL, a disabled admin API, the caller policy's state. */
export function healthOf(runtime: Runtime, env: Bindings): Record<string, unknown> {
  const out: Record<string, unknown> = { status: "ok" };
  const fault = configFault(runtime);
  if (fault !== null) {
    // Every gateway request answers 500 now: a probe must not read "ok" (the health route answers 503).
    out.status = HEALTH_CONFIG_INVALID;
    out.config = "invalid";
    out.error = { field: fault.field, message: fault.message };
  }
  if (runtime.upstreams?.ok === true) out.origins = runtime.upstreams.upstreams.health;
  const webhook = runtime.config?.alertWebhookUrl ?? null;
  if (webhook !== null) {
    const secret = configuredToken((env as { ALERT_SECRET?: unknown }).ALERT_SECRET);
    out.alerts = secret !== null ? { status: "ok" } : { status: "misconfigured", reason: "alerts.webhook_url is set but the ALERT_SECRET secret is not: alerts are queued and not sent until it is" };
  }
  if (!runtime.adminTokens.enabled) out.admin = { status: "disabled", reason: runtime.adminTokens.reason };
  // This isolate's caller policy: whether blocks are enforced from a loaded snapshot, a kept one, or not at all.
  const policy = runtime.policy.health();
  out.policy = policy;
  // The penalty box of this isolate: penalties written, and those past penalty.max_per_minute (not written).
  out.penalties = runtime.penalties.health();
  if (out.status === "ok" && (policy.state === "failing_closed" || policy.state === "failing_open")) out.status = "degraded";
  return out;
}
