// The data plane: the pipeline of docs/design.md, in order, compiled once per
// runtime. Each step is a factory from its own folder, built here with what
// it needs; this file only decides the order and runs it.
//
// Why not through Hono's router and compose: a gateway request runs the same
// fixed sequence every time, most steps finish synchronously, and the
// framework's per-request routing, context and promise per middleware were a
// measurable share of the gateway's CPU (docs/performance.md). The control
// paths (health, admin API) stay a Hono app (src/app.ts).
import type { BudgetRefusals } from "./cache/budget-refusals";
import type { BudgetLeases } from "./limits/budget-leases";
import type { PolicyCache } from "./cache/policy-cache";
import type { Config } from "./config";
import { Exchange, type Bindings, type ExchangeRuntime } from "./exchange";
import type { AuthFailureGate } from "./limits/auth-gate";
import type { HeldRequests, Sleep } from "./limits/delay";
import type { PenaltyBox } from "./limits/penalty";
import type { GlobalLeases } from "./limits/global-leases";
import { type InFlightTable, inFlightBounds, inFlightLimit } from "./limits/in-flight";
import { authenticate } from "./limits/authenticate";
import { blockCallers, blockCountries } from "./limits/blocks";
import { budgetCheck } from "./limits/budget";
import { releaseBudget } from "./limits/budget-settle";
import type { Check, CheckResult } from "./limits/check";
import { classify } from "./limits/classify";
import { quotaCheck, settleQuota } from "./limits/quota";
import { rateLimit } from "./limits/rate-limit";
import { matchRoute } from "./limits/route";
import { extraHeaders, flushUsage, forwardToOrigin, withHeaders } from "./limits/settle";
import { sizeLimit } from "./limits/size";
import { forwardWebSocket } from "./limits/stream-forward";
import { isWebSocketUpgrade, type StreamTable, streamSlots } from "./limits/streams";
import { clientAddress } from "./identity/client-step";
import type { CredentialVerifier } from "./identity/credential";
import { declaredLength } from "./proxy/content-length";
import type { OriginBaseResult } from "./proxy/origin-url";
import type { UpstreamsResult } from "./proxy/upstream";
import { normalisePath, splitUrl, withoutMethodOverrideParameter, withoutPathParameters } from "./proxy/request-path";
import { problem } from "./errors";
import { errorName, log } from "./log/logger";
import { requestLogLine, requestLogWanted } from "./log/request-log";
import { type Background, keepAlive } from "./utils/wait-until";

/**
 * What the data plane is compiled from: the runtime's config, origin, tables
 * and caches. src/runtime.ts builds them and sits above this file, so the
 * parts are named here by what the steps take.
 */
export interface GatewayRuntime extends ExchangeRuntime, CredentialVerifier {
  readonly config: Config | null;
  readonly configError: { readonly field: string; readonly message: string } | null;
  readonly origin: OriginBaseResult;
  /** Where admitted requests go; null while the config or ORIGIN_URL is invalid. */
  readonly upstreams: UpstreamsResult | null;
  readonly keyCheck: CredentialVerifier["keyCheck"];
  readonly leases: GlobalLeases;
  readonly policy: PolicyCache;
  readonly penalties: PenaltyBox;
  readonly authGate: AuthFailureGate;
  readonly inFlight: InFlightTable;
  readonly held: HeldRequests;
  readonly sleep: Sleep;
  readonly streams: StreamTable;
  readonly budgetRefusals: BudgetRefusals;
  readonly budgetLeases: BudgetLeases;
}

export type GatewayHandler = (request: Request, env: Bindings, ctx: Background | null) => Promise<Response>;

/** The checks a request runs, in order, and the forward that ends it. */
interface Pipeline {
  readonly checks: readonly Check[];
  readonly forward: (x: Exchange) => Promise<Response>;
}

function invalidPath(): Response {
  return problem("invalid_path", { detail: "The path holds an encoded separator (%2F or %5C), NUL (%00), or a `.` or `..` segment." });
}

function pathParametersRefused(): Response {
  return problem("invalid_path", {
    detail: "The path holds a `;` (path parameters, which many servers strip before routing); this gateway does not accept them.",
    hint: "Send the path without `;…`, or percent-encode a literal semicolon as %3B.",
  });
}

/** What is wrong with the configuration, TOLLGATE first, then ORIGIN_URL; null when both are valid (the gateway's 500 and health say the same). */
export function configFault(runtime: Pick<GatewayRuntime, "configError" | "origin" | "upstreams">): { readonly field: string; readonly message: string } | null {
  if (runtime.configError !== null) return runtime.configError;
  if (!runtime.origin.ok) return { field: "ORIGIN_URL", message: runtime.origin.message };
  if (runtime.upstreams !== null && !runtime.upstreams.ok) return { field: runtime.upstreams.field, message: runtime.upstreams.message };
  return null;
}

/** Compiles the data plane from a runtime's parts: the gateway handler, or one that answers config_invalid when the config or origin is invalid. */
export function compileGateway(runtime: GatewayRuntime): GatewayHandler {
  const config = runtime.config;
  const upstreams = runtime.upstreams;
  if (config === null || upstreams === null || !upstreams.ok) {
    const { field, message } = configFault(runtime) ?? { field: "TOLLGATE", message: "is invalid" };
    return async () => problem("config_invalid", { detail: `The gateway configuration is invalid at ${field}: ${message}.`, extras: { field } });
  }

  const client = clientAddress({ trustedProxies: config.trustedProxies });
  const bypasses = classify({ exemptPaths: config.exemptPaths, mode: config.mode });
  const checks: Check[] = [];
  const add = (check: Check | null): void => {
    if (check !== null) checks.push(check);
  };
  add(blockCountries({ countries: config.blockedCountries }));
  add(blockCallers({ policy: runtime.policy }));
  add(authenticate({ anonymous: config.anonymous, verifier: runtime, gate: runtime.authGate, policy: runtime.policy }));
  add(matchRoute(config.routes));
  add(
    rateLimit({
      table: runtime.limiter,
      leases: runtime.leases,
      now: runtime.now,
      defaults: config.defaults,
      responseCharges: config.responseCharges,
      headerVersion: config.rateLimitHeaders,
      penalties: { box: runtime.penalties, policy: runtime.policy },
      delay: { held: runtime.held, sleep: runtime.sleep, inFlight: runtime.inFlight, bounds: inFlightBounds(config.inFlight) },
    }),
  );
  add(budgetCheck({ responseCharges: config.responseCharges, now: runtime.now, refusals: runtime.budgetRefusals, leases: runtime.budgetLeases }));
  // A WebSocket upgrade runs the same checks up to here (its
  // rate limits include the open's stream rent and a response-priced route's
  // reserve), then takes a stream slot and an in-flight slot (given back once
  // the origin answers 101); it has no body, so no size or quota step.
  const inFlight = inFlightLimit({ table: runtime.inFlight, bounds: inFlightBounds(config.inFlight) });
  const streamChecks: Check[] = [...checks, streamSlots({ table: runtime.streams, perCredential: config.streams.perCredential }), inFlight];
  add(inFlight);
  add(sizeLimit({ maxRequestBytes: config.maxRequestBytes }));
  add(quotaCheck({ reservationTtlS: config.reservationTtlS, auditWindowS: config.auditWindowMs / 1000 }));
  const forwardOptions = {
    upstreams: upstreams.upstreams,
    stripCredential: config.stripCredential,
    forwardMethodOverride: config.forwardMethodOverride,
    maxRequestBytes: config.maxRequestBytes,
    usageMaxPending: config.usageMaxPending,
    usageFlushIntervalMs: config.usageFlushIntervalMs,
  };
  const forward = forwardToOrigin(forwardOptions);
  const http: Pipeline = { checks, forward };
  const streams: Pipeline = {
    checks: streamChecks,
    forward: forwardWebSocket({ ...forwardOptions, table: runtime.limiter, defaults: config.defaults, rentPeriodMs: config.streams.rentPeriodMs }),
  };

  /** A request answered by the gateway itself: its slot back, its log line. */
  function answered(x: Exchange, response: Response): Response {
    x.releaseSlot?.();
    x.releaseStream?.();
    // Not forwarded: a budget reserve taken before the refusal is given back.
    if (x.budget !== null) releaseBudget(x);
    // A 429 rate_limited keeps its denying limit's headers: the step refused before recording x.rateHeaders.
    const out = withHeaders(response, extraHeaders(x, null));
    const nowMs = runtime.now();
    const bytesOut = declaredLength(out.headers);
    if (requestLogWanted(x, nowMs)) log.raw(requestLogLine(x, out.status, bytesOut, nowMs));
    flushUsage(x, nowMs, config!.usageFlushIntervalMs, out.status, bytesOut);
    return out;
  }

  // Kept alive by the caller: the rest of the checks run as run() runs them
  // (one that waits again is kept alive on its own).
  async function slowPath(x: Exchange, pipeline: Pipeline, pending: Promise<CheckResult>, from: number): Promise<Response> {
    const result = await pending;
    return result !== null ? answered(x, result) : run(x, pipeline, from);
  }

  /** Runs the checks from `from` on and, when none answers, the forward; a check that throws is failed() by the caller. */
  function run(x: Exchange, pipeline: Pipeline, from: number): Promise<Response> {
    const steps = pipeline.checks;
    const count = steps.length;
    for (let i = from; i < count; i++) {
      const r = steps[i]!(x);
      if (r === null) continue;
      if (r instanceof Promise) {
        if (x.settlesInTurn) {
          x.settlesInTurn = false;
          // Waits on no I/O (a made-up key's check): the client cannot go
          // before it settles, so nothing is kept alive for it; the step
          // then runs again and goes on from what it recorded.
          const step = i;
          return r.then(
            (result) => {
              try {
                return result !== null ? answered(x, result) : run(x, pipeline, step);
              } catch (err) {
                return failed(x, err);
              }
            },
            (err: unknown) => failed(x, err),
          );
        }
        // Kept alive to its end: a client that hangs up while a check waits
        // (a cache miss, a quota reservation) must not strand what that
        // check took (an in-flight slot, a reservation); the forward's
        // settlement then finishes the accounting.
        const answer = slowPath(x, pipeline, r, i + 1).catch((err: unknown) => failed(x, err));
        keepAlive(x.ctx, answer);
        return answer;
      }
      return Promise.resolve(answered(x, r));
    }
    return pipeline.forward(x);
  }

  function failed(x: Exchange, err: unknown): Response {
    log.error("gateway_failed", { error: errorName(err) });
    x.decision = "internal_error";
    // A failure here comes before the forward's settlement started (it never
    // throws once started): a reservation the quota step took would otherwise
    // be held until reservation_ttl_s.
    if (x.upload !== null) keepAlive(x.ctx, settleQuota(x, false));
    return answered(x, problem("internal_error", { detail: "The gateway failed to handle this request." }));
  }

  const now = runtime.now;
  const allowPathParameters = config.allowPathParameters;
  const forwardMethodOverride = config.forwardMethodOverride;
  return function gateway(request, env, ctx) {
    const nowMs = now();
    const { pathname, search } = splitUrl(request.url);
    const path = normalisePath(pathname);
    // `_method` in the query is a method override to Rails, Laravel and Express: dropped like the headers.
    const query = forwardMethodOverride ? search : withoutMethodOverrideParameter(search);
    const x = new Exchange(request, env, ctx, runtime, config, path ?? pathname, query, declaredLength(request.headers), nowMs);
    if (path === null) {
      // Never forwarded, in any mode: an origin that decodes before normalising would leave its base path.
      x.decision = "invalid_path";
      return Promise.resolve(answered(x, invalidPath()));
    }
    if (path.indexOf(";") !== -1) {
      // Never forwarded unless allowed, in any mode: `/objects;v=1/y` is
      // `/objects/y` to a servlet container, and would dodge its route.
      if (!allowPathParameters) {
        x.decision = "invalid_path";
        return Promise.resolve(answered(x, pathParametersRefused()));
      }
      x.routePath = withoutPathParameters(path);
    }
    let pipeline = http;
    if (request.headers.has("upgrade") && isWebSocketUpgrade(request)) {
      x.upgrade = true;
      pipeline = streams;
    }
    try {
      client(x);
      if (bypasses(x)) return pipeline.forward(x);
      return run(x, pipeline, 0);
    } catch (err) {
      return Promise.resolve(failed(x, err));
    }
  };
}
