// The TOLLGATE var, parsed and validated (zod) once per config object by the
// runtime (src/runtime.ts). Every field is optional; its default is a named
// constant below. Every value is checked against what the runtime can use
// (docs/design.md): a config that validates works. An invalid config is not a
// crash: parseConfig returns the field and the reason (never the value: the
// answer reaches every client), every gateway request answers 500
// config_invalid naming the field, and /_tollgate/health says so.
import { z } from "zod";
import { type CidrSet, parseCidrs } from "./engine/cidr";
import { compileLimits, type Limit, limitError, type LimitScope, listSizeError } from "./engine/limit";
import type { CategoryDefaults, SubjectKind } from "./engine/resolve-limits";
import { compileRoutes, ORIGIN_NAME, type RouteMatcher, routeSpecError } from "./engine/routes";
import { HEADER_VERSIONS, type HeaderVersion } from "./engine/rate-limit-headers";
import { hostReach } from "./engine/public-address";
import { parseStatusSet } from "./engine/status-match";
import { type JwtConfig, jwtConfigSchema } from "./identity/jwt-config";
import { parseResponseCharge, type ResponseCharge } from "./proxy/response-cost-spec";
import type { RequestLogMode } from "./log/request-log-policy";
import { DEFAULT_ORIGIN_NAME, type OriginSpec, parseOriginSpec } from "./proxy/upstream";

export const DEFAULT_MODE = "enforce";
export const DEFAULT_ANONYMOUS = "allow";
export const DEFAULT_TRUSTED_PROXIES: readonly string[] = [];
export const DEFAULT_EXEMPT_PATHS: readonly string[] = ["/healthz", "/readyz", "/livez", "/metrics"];
export const DEFAULT_STRIP_CREDENTIAL = false;
/** Method-override headers (X-HTTP-Method-Override and kin) are dropped before forwarding unless this is true. */
export const DEFAULT_FORWARD_METHOD_OVERRIDE = false;
/** A path segment holding `;` (path parameters, which servlet containers strip) is refused 400 invalid_path unless this is true. */
export const DEFAULT_ALLOW_PATH_PARAMETERS = false;
/** Seconds an isolate refuses a budget it was told is spent without asking its object again (at most until the period resets). */
export const DEFAULT_BUDGET_EXHAUSTED_CACHE_S = 5;
export const MAX_BUDGET_EXHAUSTED_CACHE_S = 3600;
/** How long an isolate's lease of a budget lasts before its unspent units go back. */
export const DEFAULT_BUDGET_LEASE_S = 10;
/** The quota objects refuse longer leases (src/durable/budget-lease-store.ts MAX_BUDGET_LEASE_MS). */
export const MAX_BUDGET_LEASE_S = 600;
/** 0 = no bound. */
export const DEFAULT_MAX_REQUEST_BYTES = 0;
export const DEFAULT_CACHE_TTL_S = 10;
export const DEFAULT_STALE_IF_ERROR_S = 300;
export const DEFAULT_CACHE_MAX_ENTRIES = 10_000;
export const DEFAULT_AUTH_FAILURES = [{ count: 60, window_s: 60 }] as const;
export const DEFAULT_IN_FLIGHT_PER_CREDENTIAL = 512;
export const DEFAULT_IN_FLIGHT_BUDGET = 4096;
export const DEFAULT_CREDENTIAL_SHARE = 0.25;
export const DEFAULT_TENANT_SHARE = 0.5;
export const DEFAULT_LIMITER_MAX_MEMORY_MIB = 16;
/** Requests held at once per isolate instead of refused (a limit's delay_max_ms). */
export const DEFAULT_LIMITER_MAX_DELAYED = 1000;
/** A held request costs a timer and its Exchange (docs/performance.md); more than this is a queue, not a delay. */
export const MAX_LIMITER_MAX_DELAYED = 100_000;
export const DEFAULT_USAGE_FLUSH_INTERVAL_S = 60;
/** Distinct keys (or tenant-month metrics) held between flushes before new ones are dropped and counted. */
export const DEFAULT_USAGE_MAX_PENDING = 10_000;
/** A quiet isolate writes its metering as a request ends (at most once a second), not only once per interval. */
export const DEFAULT_USAGE_FLUSH_WHEN_IDLE = true;
export const DEFAULT_RESERVATION_TTL_S = 900;
export const DEFAULT_AUDIT_THRESHOLD_REJECTIONS = 100;
export const DEFAULT_AUDIT_WINDOW_S = 60;
/** Which request-log lines are written: "all", "refusals", "sampled" or "off" (src/log/request-log-policy.ts). */
export const DEFAULT_REQUEST_LOG: RequestLogMode = "all";
/** With request_log "sampled": the share of admitted requests whose line is written. */
export const DEFAULT_REQUEST_LOG_SAMPLE = 0.1;
/** Refusal lines written one by one per isolate per second; past them, one refusals_summarised line per second. */
export const DEFAULT_REQUEST_LOG_REFUSALS_PER_S = 50;
export const MAX_REQUEST_LOG_REFUSALS_PER_S = 100_000;
/** The ratelimit-headers draft the RateLimit fields follow. */
export const DEFAULT_RATE_LIMIT_HEADERS: HeaderVersion = "draft-11";
/** The scope of a limit that does not name one. */
export const DEFAULT_LIMIT_SCOPE: LimitScope = "isolate";
/** Global limits: L = max_overshoot × W, at least min_lease_ms; on_error is what happens while the ledger cannot answer. */
export const DEFAULT_GLOBAL_MAX_OVERSHOOT = 0.02;
export const DEFAULT_GLOBAL_MIN_LEASE_MS = 50;
export const DEFAULT_GLOBAL_ON_ERROR = "local";
/** What an isolate that has never loaded the caller policy (overrides and blocks) does while D1 cannot give it: refuse (503 policy_unavailable) or forward without it. */
export const DEFAULT_POLICY_ON_ERROR = "closed";
/** A lease longer than a minute would make the overshoot bound meaningless for most limits. */
export const MAX_GLOBAL_MIN_LEASE_MS = 60_000;
/** Stream rent: one `stream_rent` unit at open and at the start of every period while a stream stays open. */
export const DEFAULT_STREAM_RENT_PERIOD_S = 60;
/** Open WebSocket streams per credential per isolate. */
export const DEFAULT_STREAMS_PER_CREDENTIAL = 100;
/** An isolate has 128 MB; the limiter table is preallocated, so its bound must leave room for the rest. */
export const MAX_LIMITER_MEMORY_MIB = 64;
/** Longest reservation a quota object keeps: a week (an upload that takes longer is committed late, see docs/quotas.md). */
export const MAX_RESERVATION_TTL_S = 7 * 24 * 3600;
export const MAX_AUDIT_WINDOW_S = 24 * 3600;
export const MAX_CACHE_TTL_S = 3600;
export const MAX_STALE_IF_ERROR_S = 24 * 3600;
export const MAX_FLUSH_INTERVAL_S = 3600;
/** Entries of the isolate's caches and accumulators: each is bounded by this, memory by it times an entry's size. */
export const MAX_CACHE_ENTRIES = 100_000;
export const MAX_LIST_ENTRIES = 1000;
/** A day: a longer period would let one prepaid unit hold a stream for more than a day. */
export const MAX_STREAM_RENT_PERIOD_S = 24 * 3600;
/** A stream holds two sockets and a timer; an isolate (128 MB) could not hold many more in all. */
export const MAX_STREAMS_PER_CREDENTIAL = 10_000;
/** Traffic rollups (GET /traffic): counted by default, kept a week. */
export const DEFAULT_TRAFFIC_ENABLED = true;
export const DEFAULT_TRAFFIC_RETENTION_DAYS = 7;
export const MAX_TRAFFIC_RETENTION_DAYS = 90;
/** The first retry of an alert waits this long; each next one twice as long, at most an hour. */
export const DEFAULT_ALERT_RETRY_BASE_S = 30;
/** Alerts of one type an isolate queues per minute; the rest are dropped and counted in the next one (`data.dropped`). */
export const DEFAULT_ALERT_MAX_PER_TYPE_PER_MINUTE = 20;
export const MAX_ALERT_MAX_PER_TYPE_PER_MINUTE = 10_000;
/** Penalty blocks (a limit's `penalty`) one isolate writes per minute; past it they are not written, and counted (health's `penalties.dropped`). */
export const DEFAULT_PENALTY_MAX_PER_MINUTE = 600;
export const MAX_PENALTY_MAX_PER_MINUTE = 100_000;

const WEBHOOK_URL_RULE = "must be an https:// URL (http:// only to a loopback address, for development), without credentials or a fragment";
const WEBHOOK_HOST_RULE =
  "must not name a private, link-local, metadata or other non-public address or internal host name (169.254.0.0/16, 10.0.0.0/8, fc00::/7, metadata.google.internal, …); loopback is allowed, for development";

/**
 * Null when `value` may receive alerts: https to a public host, or http or
 * https to a loopback host (development); never credentials or a fragment,
 * and never a private, link-local or metadata address, which would point the
 * gateway's signed POSTs at an internal service. Else the rule it breaks.
 */
export function webhookUrlError(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return WEBHOOK_URL_RULE;
  }
  if (url.username !== "" || url.password !== "" || url.hash !== "") return WEBHOOK_URL_RULE;
  const reach = hostReach(url.hostname);
  if (url.protocol === "http:") return reach === "loopback" ? null : WEBHOOK_URL_RULE;
  if (url.protocol !== "https:") return WEBHOOK_URL_RULE;
  return reach === "not_public" ? WEBHOOK_HOST_RULE : null;
}

const SUBJECT_KINDS = ["key", "jwt", "tenant", "ip", "anonymous", "admin"] as const satisfies readonly SubjectKind[];
const CATEGORY_NAME = /^[a-z][a-z0-9_]{0,31}$/;

// A limit is checked by the engine's own rule, so config, admin API and engine
// agree on what is valid (a count of 0 is invalid, not "deny").
const limitSchema = z.unknown().superRefine((value, ctx) => {
  const reason = limitError(value);
  if (reason === null) return;
  const field = /^(delay_max_ms|shadow|penalty)(?:\.(after|within_s|block_s))?\b/.exec(reason);
  ctx.addIssue({ code: "custom", message: reason, path: field === null ? [] : field[2] === undefined ? [field[1]!] : [field[1]!, field[2]] });
});
const limitListSchema = z.array(limitSchema).superRefine((list, ctx) => {
  const reason = listSizeError(list);
  if (reason !== null) ctx.addIssue({ code: "custom", message: reason });
});
// The admin token's and the auth-failure gate's limits are charged before the
// rate-limit step, in the isolate's table: a global scope there would be ignored, so it is refused.
const isolateLimitSchema = z.unknown().superRefine((value, ctx) => {
  const reason = limitError(value);
  if (reason !== null) ctx.addIssue({ code: "custom", message: reason });
  else if ((value as { scope?: unknown }).scope === "global") ctx.addIssue({ code: "custom", message: 'must have scope "isolate": this limit is charged in each isolate', path: ["scope"] });
  // Charged before the rate-limit step, where nothing decides a shadow limit or counts a penalty.
  else if ((value as { shadow?: unknown }).shadow === true) ctx.addIssue({ code: "custom", message: "must not be shadow: this limit is charged before the rate-limit step", path: ["shadow"] });
  else if ((value as { penalty?: unknown }).penalty !== undefined) ctx.addIssue({ code: "custom", message: "must not have a penalty: this limit is charged before the rate-limit step", path: ["penalty"] });
});
const isolateLimitListSchema = z.array(isolateLimitSchema).max(3, "at most 3 limits per list");

const categorySchema = z.strictObject({
  limits: z
    .strictObject(Object.fromEntries(SUBJECT_KINDS.map((k) => [k, (k === "admin" ? isolateLimitListSchema : limitListSchema).optional()])) as Record<SubjectKind, z.ZodOptional<typeof limitListSchema>>)
    .optional(),
});

const routeSchema = z.unknown().superRefine((value, ctx) => {
  const statuses = (value as { charge_on_status?: unknown } | null)?.charge_on_status;
  if (statuses !== undefined) {
    // Named down to the entry at fault: routes.0.charge_on_status.1.
    const parsed = parseStatusSet(statuses);
    if (!parsed.ok) {
      ctx.addIssue({ code: "custom", message: parsed.message, path: parsed.index === null ? ["charge_on_status"] : ["charge_on_status", parsed.index] });
      return;
    }
  }
  const reason = routeSpecError(value);
  if (reason !== null) {
    ctx.addIssue({ code: "custom", message: reason });
    return;
  }
  const charge = (value as { response_charge?: unknown }).response_charge;
  if (charge === undefined) return;
  const parsed = parseResponseCharge(charge);
  if (!parsed.ok) ctx.addIssue({ code: "custom", message: parsed.message, path: ["response_charge", ...(parsed.field === "" ? [] : parsed.field.split("."))] });
});

const share = z.number().min(0.01, "must be between 0.01 and 1").max(1, "must be between 0.01 and 1");
const positiveInt = z.number().int("must be a whole number").positive("must be > 0").max(Number.MAX_SAFE_INTEGER);
const boundedInt = (max: number) => z.number().int("must be a whole number").positive("must be > 0").max(max, `must be <= ${max}`);
const positiveSeconds = (max: number) => z.number().positive("must be > 0").max(max, `must be <= ${max}`);
/** Durations the quota object keeps are whole seconds (it stores them as integers). */
const wholeSeconds = (max: number) => z.number().int("must be a whole number of seconds").min(1, "must be >= 1").max(max, `must be <= ${max}`);
const list = <T extends z.ZodType>(item: T) => z.array(item).max(MAX_LIST_ENTRIES, `at most ${MAX_LIST_ENTRIES} entries`);

export const configSchema = z.strictObject({
  mode: z.enum(["enforce", "shadow", "off"]).default(DEFAULT_MODE),
  anonymous: z.enum(["allow", "deny"]).default(DEFAULT_ANONYMOUS),
  trusted_proxies: list(z.string().max(64, "must be at most 64 characters")).default([...DEFAULT_TRUSTED_PROXIES]),
  exempt_paths: list(z.string().startsWith("/", "must begin with /").max(1024, "must be at most 1024 characters")).default([...DEFAULT_EXEMPT_PATHS]),
  strip_credential: z.boolean().default(DEFAULT_STRIP_CREDENTIAL),
  forward_method_override: z.boolean().default(DEFAULT_FORWARD_METHOD_OVERRIDE),
  allow_path_parameters: z.boolean().default(DEFAULT_ALLOW_PATH_PARAMETERS),
  max_request_bytes: z.number().int("must be a whole number").min(0, "must be >= 0").max(Number.MAX_SAFE_INTEGER).default(DEFAULT_MAX_REQUEST_BYTES),
  cache_ttl_s: positiveSeconds(MAX_CACHE_TTL_S).default(DEFAULT_CACHE_TTL_S),
  stale_if_error_s: z.number().min(0, "must be >= 0").max(MAX_STALE_IF_ERROR_S, `must be <= ${MAX_STALE_IF_ERROR_S}`).default(DEFAULT_STALE_IF_ERROR_S),
  cache_max_entries: boundedInt(MAX_CACHE_ENTRIES).default(DEFAULT_CACHE_MAX_ENTRIES),
  policy_on_error: z.enum(["closed", "open"], 'must be "closed" or "open"').default(DEFAULT_POLICY_ON_ERROR),
  categories: z.record(z.string().regex(CATEGORY_NAME, "category names match ^[a-z][a-z0-9_]{0,31}$"), categorySchema).default({}),
  routes: list(routeSchema).default([]),
  auth_failures: isolateLimitListSchema.optional(),
  in_flight: z
    .strictObject({
      per_credential: positiveInt.default(DEFAULT_IN_FLIGHT_PER_CREDENTIAL),
      budget: positiveInt.default(DEFAULT_IN_FLIGHT_BUDGET),
      credential_share: share.default(DEFAULT_CREDENTIAL_SHARE),
      tenant_share: share.default(DEFAULT_TENANT_SHARE),
    })
    .default({ per_credential: DEFAULT_IN_FLIGHT_PER_CREDENTIAL, budget: DEFAULT_IN_FLIGHT_BUDGET, credential_share: DEFAULT_CREDENTIAL_SHARE, tenant_share: DEFAULT_TENANT_SHARE }),
  limiter: z
    .strictObject({
      max_memory_mib: z.number().min(1, "must be >= 1").max(MAX_LIMITER_MEMORY_MIB, `must be <= ${MAX_LIMITER_MEMORY_MIB} (an isolate has 128 MB)`).default(DEFAULT_LIMITER_MAX_MEMORY_MIB),
      default_scope: z.enum(["isolate", "global"], 'must be "isolate" or "global"').default(DEFAULT_LIMIT_SCOPE),
      max_delayed: z.number().int("must be a whole number").min(0, "must be >= 0").max(MAX_LIMITER_MAX_DELAYED, `must be <= ${MAX_LIMITER_MAX_DELAYED}`).default(DEFAULT_LIMITER_MAX_DELAYED),
    })
    .default({ max_memory_mib: DEFAULT_LIMITER_MAX_MEMORY_MIB, default_scope: DEFAULT_LIMIT_SCOPE, max_delayed: DEFAULT_LIMITER_MAX_DELAYED }),
  global: z
    .strictObject({
      max_overshoot: z.number().min(0, "must be between 0 and 1").max(1, "must be between 0 and 1").default(DEFAULT_GLOBAL_MAX_OVERSHOOT),
      min_lease_ms: z.number().int("must be a whole number of ms").min(1, "must be >= 1").max(MAX_GLOBAL_MIN_LEASE_MS, `must be <= ${MAX_GLOBAL_MIN_LEASE_MS}`).default(DEFAULT_GLOBAL_MIN_LEASE_MS),
      on_error: z.enum(["local", "deny"], 'must be "local" or "deny"').default(DEFAULT_GLOBAL_ON_ERROR),
    })
    .default({ max_overshoot: DEFAULT_GLOBAL_MAX_OVERSHOOT, min_lease_ms: DEFAULT_GLOBAL_MIN_LEASE_MS, on_error: DEFAULT_GLOBAL_ON_ERROR }),
  usage: z
    .strictObject({
      flush_interval_s: positiveSeconds(MAX_FLUSH_INTERVAL_S).default(DEFAULT_USAGE_FLUSH_INTERVAL_S),
      max_pending: boundedInt(MAX_CACHE_ENTRIES).default(DEFAULT_USAGE_MAX_PENDING),
      flush_when_idle: z.boolean().default(DEFAULT_USAGE_FLUSH_WHEN_IDLE),
    })
    .default({ flush_interval_s: DEFAULT_USAGE_FLUSH_INTERVAL_S, max_pending: DEFAULT_USAGE_MAX_PENDING, flush_when_idle: DEFAULT_USAGE_FLUSH_WHEN_IDLE }),
  reservation_ttl_s: wholeSeconds(MAX_RESERVATION_TTL_S).default(DEFAULT_RESERVATION_TTL_S),
  budgets: z
    .strictObject({
      // 0: every request asks the object again (a spent budget then costs one object call per request).
      exhausted_cache_s: z.number().min(0, "must be >= 0").max(MAX_BUDGET_EXHAUSTED_CACHE_S, `must be <= ${MAX_BUDGET_EXHAUSTED_CACHE_S}`).default(DEFAULT_BUDGET_EXHAUSTED_CACHE_S),
      // Whole ms; a lease shorter than the object's round trip would end before it arrives.
      lease_s: z.number().min(0.1, "must be >= 0.1").max(MAX_BUDGET_LEASE_S, `must be <= ${MAX_BUDGET_LEASE_S}`).default(DEFAULT_BUDGET_LEASE_S),
    })
    .default({ exhausted_cache_s: DEFAULT_BUDGET_EXHAUSTED_CACHE_S, lease_s: DEFAULT_BUDGET_LEASE_S }),
  audit: z
    .strictObject({
      threshold_rejections: positiveInt.default(DEFAULT_AUDIT_THRESHOLD_REJECTIONS),
      window_s: wholeSeconds(MAX_AUDIT_WINDOW_S).default(DEFAULT_AUDIT_WINDOW_S),
    })
    .default({ threshold_rejections: DEFAULT_AUDIT_THRESHOLD_REJECTIONS, window_s: DEFAULT_AUDIT_WINDOW_S }),
  // true and false are the older spelling of "all" and "off".
  request_log: z
    .union([z.enum(["all", "refusals", "sampled", "off"]), z.boolean()], { error: 'must be "all", "refusals", "sampled" or "off"' })
    .default(DEFAULT_REQUEST_LOG)
    .transform((v): RequestLogMode => (v === true ? "all" : v === false ? "off" : v)),
  request_log_sample: z.number().min(0, "must be between 0 and 1").max(1, "must be between 0 and 1").default(DEFAULT_REQUEST_LOG_SAMPLE),
  request_log_refusals_per_s: z
    .number()
    .int("must be a whole number")
    .min(0, "must be >= 0")
    .max(MAX_REQUEST_LOG_REFUSALS_PER_S, `must be <= ${MAX_REQUEST_LOG_REFUSALS_PER_S}`)
    .default(DEFAULT_REQUEST_LOG_REFUSALS_PER_S),
  rate_limit_headers: z.enum(HEADER_VERSIONS as [HeaderVersion, ...HeaderVersion[]], 'must be "draft-11" or "draft-12"').default(DEFAULT_RATE_LIMIT_HEADERS),
  jwt: jwtConfigSchema.optional(),
  streams: z
    .strictObject({
      // Whole seconds: the rent timer and the retry delays are exact per period.
      rent_period_s: wholeSeconds(MAX_STREAM_RENT_PERIOD_S).default(DEFAULT_STREAM_RENT_PERIOD_S),
      per_credential: boundedInt(MAX_STREAMS_PER_CREDENTIAL).default(DEFAULT_STREAMS_PER_CREDENTIAL),
    })
    .default({ rent_period_s: DEFAULT_STREAM_RENT_PERIOD_S, per_credential: DEFAULT_STREAMS_PER_CREDENTIAL }),
  // Traffic rollups: counts per minute, tenant and decision, flushed with metering.
  traffic: z
    .strictObject({
      enabled: z.boolean().default(DEFAULT_TRAFFIC_ENABLED),
      retention_days: z.number().int("must be a whole number of days").min(1, "must be >= 1").max(MAX_TRAFFIC_RETENTION_DAYS, `must be <= ${MAX_TRAFFIC_RETENTION_DAYS}`).default(DEFAULT_TRAFFIC_RETENTION_DAYS),
    })
    .default({ enabled: DEFAULT_TRAFFIC_ENABLED, retention_days: DEFAULT_TRAFFIC_RETENTION_DAYS }),
  // Alerts to a webhook through the ALERTS queue; nothing is queued without webhook_url.
  alerts: z
    .strictObject({
      webhook_url: z
        .string()
        .max(2048, "must be at most 2048 characters")
        .superRefine((value, ctx) => {
          const rule = webhookUrlError(value);
          if (rule !== null) ctx.addIssue({ code: "custom", message: rule });
        })
        .optional(),
      retry_base_s: z.number().int("must be a whole number of seconds").min(1, "must be >= 1").max(3600, "must be <= 3600").default(DEFAULT_ALERT_RETRY_BASE_S),
      max_per_type_per_minute: boundedInt(MAX_ALERT_MAX_PER_TYPE_PER_MINUTE).default(DEFAULT_ALERT_MAX_PER_TYPE_PER_MINUTE),
    })
    .default({ retry_base_s: DEFAULT_ALERT_RETRY_BASE_S, max_per_type_per_minute: DEFAULT_ALERT_MAX_PER_TYPE_PER_MINUTE }),
  // Named origins a route may send to (`origin` on the route); ORIGIN_URL stays the default.
  origins: z
    .record(
      z.string().regex(ORIGIN_NAME, "origin names match ^[a-z][a-z0-9_-]{0,31}$").refine((name) => name !== DEFAULT_ORIGIN_NAME, `"${DEFAULT_ORIGIN_NAME}" is ORIGIN_URL's name`),
      z.string().max(2048, "must be at most 2048 characters"),
    )
    .default({}),
  blocked_countries: list(z.string().regex(/^[A-Z]{2}$/, "must be an ISO 3166-1 alpha-2 code in capitals, such as DE")).default([]),
  // The penalty box's bound on writes: a flood of distinct callers cannot turn refusals into more D1 writes than this per isolate.
  penalty: z
    .strictObject({ max_per_minute: boundedInt(MAX_PENALTY_MAX_PER_MINUTE).default(DEFAULT_PENALTY_MAX_PER_MINUTE) })
    .default({ max_per_minute: DEFAULT_PENALTY_MAX_PER_MINUTE }),
});

export type RawConfig = z.output<typeof configSchema>;

/** The validated, compiled config: everything the hot path needs, computed once. */
export interface Config {
  readonly mode: "enforce" | "shadow" | "off";
  readonly anonymous: "allow" | "deny";
  readonly trustedProxies: CidrSet;
  readonly exemptPaths: readonly string[];
  readonly stripCredential: boolean;
  /** Pass X-HTTP-Method-Override, X-HTTP-Method and X-Method-Override to the origin (routes match the request's own method). */
  readonly forwardMethodOverride: boolean;
  /** Accept path segments holding `;` (routes then match each segment without its `;…`); refused 400 invalid_path otherwise. */
  readonly allowPathParameters: boolean;
  readonly maxRequestBytes: number;
  readonly cacheTtlMs: number;
  readonly staleIfErrorMs: number;
  readonly cacheMaxEntries: number;
  /** An isolate that has never loaded the caller policy: "closed" answers 503 policy_unavailable until it loads, "open" forwards without blocks or overrides. */
  readonly policyOnError: "closed" | "open";
  readonly defaults: CategoryDefaults;
  readonly routes: RouteMatcher;
  /** Each route's response_charge, by route index; null where a route has none. */
  readonly responseCharges: readonly (ResponseCharge | null)[];
  readonly authFailureLimits: readonly Limit[];
  readonly inFlight: { readonly perCredential: number; readonly budget: number; readonly credentialShare: number; readonly tenantShare: number };
  readonly limiterMaxMemoryMib: number;
  /** Requests held at once per isolate rather than refused (a limit's delay_max_ms); 0 = none. */
  readonly limiterMaxDelayed: number;
  /** The scope of a limit (config, tenant, key, override) that does not name one. The built-in defaults are per isolate. */
  readonly defaultScope: LimitScope;
  /** Global limits: L = maxOvershoot × W, at least minLeaseMs; onError while the ledger cannot answer. */
  readonly global: { readonly maxOvershoot: number; readonly minLeaseMs: number; readonly onError: "local" | "deny" };
  readonly usageFlushIntervalMs: number;
  /** Write pending metering when a request ends with no other in flight (at most once a second). */
  readonly usageFlushWhenIdle: boolean;
  readonly usageMaxPending: number;
  readonly reservationTtlS: number;
  /** How long an isolate refuses a budget it saw spent without asking its object (capped by the period's reset). */
  readonly budgetExhaustedCacheMs: number;
  /** How long an isolate's lease of a budget lasts (budgets.lease_s), in whole ms. */
  readonly budgetLeaseMs: number;
  readonly auditThresholdRejections: number;
  readonly auditWindowMs: number;
  /** Which request-log lines are written (src/log/request-log-policy.ts). */
  readonly requestLog: RequestLogMode;
  readonly requestLogSample: number;
  readonly requestLogRefusalsPerS: number;
  /** The ratelimit-headers draft the RateLimit fields follow. */
  readonly rateLimitHeaders: HeaderVersion;
  /** The JWT issuers, or null when JWTs are not accepted. */
  readonly jwt: JwtConfig | null;
  /** ISO country codes refused 403 blocked (request.cf.country). */
  readonly blockedCountries: ReadonlySet<string>;
  /** WebSocket streams: the rent period and the open streams one credential may hold per isolate. */
  readonly streams: { readonly rentPeriodMs: number; readonly perCredential: number };
  /** Traffic rollups: whether requests are counted, and how long D1 keeps the minutes. */
  readonly traffic: { readonly enabled: boolean; readonly retentionMs: number };
  /** Where alerts go (the ALERTS queue delivers them), or null: nothing is queued. */
  readonly alertWebhookUrl: string | null;
  /** Seconds before an alert's first retry (then doubling, at most an hour). */
  readonly alertRetryBaseS: number;
  /** Alerts of one type an isolate queues per minute; past it they are dropped and counted in the next one. */
  readonly alertMaxPerTypePerMinute: number;
  /** Penalty blocks one isolate writes per minute; past it they are dropped and counted. */
  readonly penaltyMaxPerMinute: number;
  /** Named origins: a base URL or a service binding (checked against the Worker's bindings by the runtime). */
  readonly origins: Readonly<Record<string, OriginSpec>>;
  /** Each route as `METHOD /path` (`* /path` for any method), by route index: the Analytics Engine's route blob. */
  readonly routePatterns: readonly string[];
  /** Each route's `origin` by route index; null where a route uses the default (ORIGIN_URL). */
  readonly routeOrigins: readonly (string | null)[];
}

export type ConfigResult = { ok: true; config: Config } | { ok: false; field: string; message: string };

/** The admin token's category: charged to admin tokens alone, under the `admin` subject kind. */
const ADMIN_CATEGORY = "admin";
/** The auth-failure gate's category: its limits are the top-level `auth_failures`, never a `categories` entry. */
const AUTH_FAILURES_CATEGORY = "auth_failures";

/**
 * A `categories` entry that could never apply: the auth-failure gate's
 * (set by `auth_failures`), a limit of another kind in the admin category
 * (charged to admin tokens only), an `admin` limit anywhere else. A name
 * that means nothing is an invalid config, not a silent no-op.
 */
function meaninglessCategoryLimit(categories: RawConfig["categories"]): { field: string; message: string } | null {
  for (const [category, spec] of Object.entries(categories)) {
    if (category === AUTH_FAILURES_CATEGORY) return { field: `categories.${category}`, message: "is not charged to callers: the auth-failure gate's limits are the top-level auth_failures" };
    for (const kind of Object.keys(spec.limits ?? {})) {
      if ((kind === ADMIN_CATEGORY) === (category === ADMIN_CATEGORY)) continue;
      const message = category === ADMIN_CATEGORY ? "never applies: the admin category is charged to admin tokens alone; set its `admin` limits" : "never applies: `admin` limits are charged only in the admin category";
      return { field: `categories.${category}.limits.${kind}`, message };
    }
  }
  return null;
}

/** Parse a TOLLGATE value (an object, a JSON string, or absent) into a compiled Config. */
export function parseConfig(raw: unknown): ConfigResult {
  let value: unknown = raw;
  if (raw === undefined || raw === null || raw === "") value = {};
  else if (typeof raw === "string") {
    try {
      value = JSON.parse(raw);
    } catch {
      return { ok: false, field: "TOLLGATE", message: "is not valid JSON" };
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, field: "TOLLGATE", message: "must be a JSON object" };
  }
  const parsed = configSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = issue === undefined ? [] : issue.path.map(String);
    // An unknown field is reported on its parent; name the field itself.
    if (issue?.code === "unrecognized_keys" && issue.keys.length > 0) path.push(String(issue.keys[0]));
    const field = path.length > 0 ? path.join(".") : "TOLLGATE";
    return { ok: false, field, message: issue?.message ?? "is invalid" };
  }
  const c = parsed.data;
  const proxies = parseCidrs(c.trusted_proxies);
  // The parser's reason quotes the entry; the answer reaches every client, so it names the field only.
  if (!proxies.ok) return { ok: false, field: `trusted_proxies.${proxies.index}`, message: "must be an IPv4 or IPv6 address or CIDR with a valid prefix length" };

  const origins: Record<string, OriginSpec> = {};
  for (const [name, value] of Object.entries(c.origins)) {
    const spec = parseOriginSpec(value);
    if (!spec.ok) return { ok: false, field: `origins.${name}`, message: spec.message };
    origins[name] = spec.spec;
  }
  const routeOrigins = (c.routes as { origin?: string }[]).map((route) => route.origin ?? null);
  for (let i = 0; i < routeOrigins.length; i++) {
    const name = routeOrigins[i];
    if (name !== null && name !== undefined && name !== DEFAULT_ORIGIN_NAME && origins[name] === undefined) {
      return { ok: false, field: `routes.${i}.origin`, message: "names no entry of origins" };
    }
  }

  const defaults: Record<string, Partial<Record<SubjectKind, readonly Limit[]>>> = {};
  const meaningless = meaninglessCategoryLimit(c.categories);
  if (meaningless !== null) return { ok: false, ...meaningless };
  for (const [category, spec] of Object.entries(c.categories)) {
    const byKind: Partial<Record<SubjectKind, readonly Limit[]>> = {};
    for (const kind of SUBJECT_KINDS) {
      const list = spec.limits?.[kind];
      if (list !== undefined) byKind[kind] = compileLimits(list as never, kind === "admin" ? "isolate" : c.limiter.default_scope);
    }
    defaults[category] = byKind;
  }
  return {
    ok: true,
    config: {
      mode: c.mode,
      anonymous: c.anonymous,
      trustedProxies: proxies.set,
      exemptPaths: c.exempt_paths,
      stripCredential: c.strip_credential,
      forwardMethodOverride: c.forward_method_override,
      allowPathParameters: c.allow_path_parameters,
      maxRequestBytes: c.max_request_bytes,
      cacheTtlMs: c.cache_ttl_s * 1000,
      staleIfErrorMs: c.stale_if_error_s * 1000,
      cacheMaxEntries: c.cache_max_entries,
      policyOnError: c.policy_on_error,
      defaults,
      routes: compileRoutes(c.routes as never),
      responseCharges: (c.routes as { response_charge?: unknown }[]).map((route) => {
        if (route.response_charge === undefined) return null;
        const parsed = parseResponseCharge(route.response_charge);
        return parsed.ok ? parsed.charge : null;
      }),
      authFailureLimits: compileLimits((c.auth_failures ?? DEFAULT_AUTH_FAILURES) as never),
      inFlight: {
        perCredential: c.in_flight.per_credential,
        budget: c.in_flight.budget,
        credentialShare: c.in_flight.credential_share,
        tenantShare: c.in_flight.tenant_share,
      },
      limiterMaxMemoryMib: c.limiter.max_memory_mib,
      limiterMaxDelayed: c.limiter.max_delayed,
      defaultScope: c.limiter.default_scope,
      global: { maxOvershoot: c.global.max_overshoot, minLeaseMs: c.global.min_lease_ms, onError: c.global.on_error },
      usageFlushIntervalMs: c.usage.flush_interval_s * 1000,
      usageFlushWhenIdle: c.usage.flush_when_idle,
      usageMaxPending: c.usage.max_pending,
      reservationTtlS: c.reservation_ttl_s,
      budgetExhaustedCacheMs: c.budgets.exhausted_cache_s * 1000,
      budgetLeaseMs: Math.round(c.budgets.lease_s * 1000),
      auditThresholdRejections: c.audit.threshold_rejections,
      auditWindowMs: c.audit.window_s * 1000,
      requestLog: c.request_log,
      rateLimitHeaders: c.rate_limit_headers,
      requestLogSample: c.request_log_sample,
      requestLogRefusalsPerS: c.request_log_refusals_per_s,
      jwt: c.jwt ?? null,
      blockedCountries: new Set(c.blocked_countries),
      streams: { rentPeriodMs: c.streams.rent_period_s * 1000, perCredential: c.streams.per_credential },
      origins,
      routeOrigins,
      routePatterns: (c.routes as { method?: string; path: string }[]).map((route) => `${route.method?.toUpperCase() ?? "*"} ${route.path}`),
      traffic: { enabled: c.traffic.enabled, retentionMs: c.traffic.retention_days * 86_400_000 },
      alertWebhookUrl: c.alerts.webhook_url ?? null,
      alertRetryBaseS: c.alerts.retry_base_s,
      alertMaxPerTypePerMinute: c.alerts.max_per_type_per_minute,
      penaltyMaxPerMinute: c.penalty.max_per_minute,
    },
  };
}
