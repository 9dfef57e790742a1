import { describe, expect, it } from "vitest";
import {
  DEFAULT_CACHE_TTL_S,
  DEFAULT_EXEMPT_PATHS,
  DEFAULT_IN_FLIGHT_BUDGET,
  DEFAULT_IN_FLIGHT_PER_CREDENTIAL,
  DEFAULT_RESERVATION_TTL_S,
  parseConfig,
} from "../../src/config";

function ok(raw: unknown) {
  const result = parseConfig(raw);
  if (!result.ok) throw new Error(`expected a valid config, got ${result.field}: ${result.message}`);
  return result.config;
}

describe("config", () => {
  it("gives every default for an absent or empty config", () => {
    for (const raw of [undefined, null, "", {}, "{}"]) {
      const c = ok(raw);
      expect(c.mode).toBe("enforce");
      expect(c.anonymous).toBe("allow");
      expect(c.exemptPaths).toEqual(DEFAULT_EXEMPT_PATHS);
      expect(c.stripCredential).toBe(false);
      expect(c.forwardMethodOverride).toBe(false);
      expect(c.allowPathParameters).toBe(false);
      expect(c.budgetExhaustedCacheMs).toBe(5_000);
      expect(c.maxRequestBytes).toBe(0);
      expect(c.cacheTtlMs).toBe(DEFAULT_CACHE_TTL_S * 1000);
      expect(c.staleIfErrorMs).toBe(300_000);
      expect(c.policyOnError).toBe("closed");
      expect(c.inFlight).toEqual({ perCredential: DEFAULT_IN_FLIGHT_PER_CREDENTIAL, budget: DEFAULT_IN_FLIGHT_BUDGET, credentialShare: 0.25, tenantShare: 0.5 });
      expect(c.limiterMaxMemoryMib).toBe(16);
      expect(c.usageFlushIntervalMs).toBe(60_000);
      expect(c.reservationTtlS).toBe(DEFAULT_RESERVATION_TTL_S);
      expect(c.auditThresholdRejections).toBe(100);
      expect(c.auditWindowMs).toBe(60_000);
      expect(c.requestLog).toBe("all");
      expect(c.requestLogSample).toBe(0.1);
      expect(c.requestLogRefusalsPerS).toBe(50);
      expect(c.authFailureLimits).toHaveLength(1);
      expect(c.authFailureLimits[0]).toMatchObject({ count: 60, windowS: 60 });
      expect(c.defaultScope).toBe("isolate");
      expect(c.global).toEqual({ maxOvershoot: 0.02, minLeaseMs: 50, onError: "local" });
    }
  });

  it("compiles each limit with its scope, or limiter.default_scope when it names none; the admin token's limits stay per isolate", () => {
    const c = ok({
      limiter: { default_scope: "global" },
      global: { max_overshoot: 0.05, min_lease_ms: 20, on_error: "deny" },
      categories: {
        request: { limits: { key: [{ count: 10, window_s: 1 }], tenant: [{ count: 100, window_s: 1, scope: "isolate" }] } },
        admin: { limits: { admin: [{ count: 5, window_s: 1 }] } },
      },
    });
    expect(c.defaults.request?.key?.[0]?.scope).toBe("global");
    expect(c.defaults.request?.tenant?.[0]?.scope).toBe("isolate");
    expect(c.defaults.admin?.admin?.[0]?.scope).toBe("isolate");
    expect(c.global).toEqual({ maxOvershoot: 0.05, minLeaseMs: 20, onError: "deny" });
    expect(ok({ categories: { request: { limits: { key: [{ count: 10, window_s: 1, scope: "global" }] } } } }).defaults.request?.key?.[0]?.scope).toBe("global");
  });

  it("accepts the JSON-string form", () => {
    const c = ok('{"mode":"shadow","anonymous":"deny","trusted_proxies":["10.0.0.0/8","2001:db8::/32"],"max_request_bytes":1048576}');
    expect(c.mode).toBe("shadow");
    expect(c.anonymous).toBe("deny");
    expect(c.maxRequestBytes).toBe(1048576);
  });

  it("compiles category limits and routes", () => {
    const c = ok({
      categories: { request: { limits: { key: [{ count: 10, window_s: 1, burst: 20 }] } }, upload: { limits: { tenant: [{ count: 5, window_s: 60 }] } } },
      routes: [{ method: "PUT", path: "/objects/:object", charges: { upload: 1 }, quota: "store" }],
    });
    expect(c.defaults.request?.key?.[0]).toMatchObject({ count: 10, windowS: 1, burst: 20 });
    expect(c.defaults.upload?.tenant?.[0]).toMatchObject({ count: 5, windowS: 60, burst: 5 });
    const match = c.routes.match("PUT", "/objects/cat.png");
    expect(match?.quota).toBe("store");
    expect(match?.params).toEqual({ object: "cat.png" });
  });

  it.each([
    [{ mode: "block" }, "mode"],
    [{ anonymous: "maybe" }, "anonymous"],
    [{ trusted_proxies: ["10.0.0.0/8", "not-a-cidr"] }, "trusted_proxies.1"],
    [{ exempt_paths: ["healthz"] }, "exempt_paths.0"],
    [{ strip_credential: "yes" }, "strip_credential"],
    [{ forward_method_override: "true" }, "forward_method_override"],
    [{ allow_path_parameters: 1 }, "allow_path_parameters"],
    [{ budgets: { exhausted_cache_s: -1 } }, "budgets.exhausted_cache_s"],
    [{ budgets: { exhausted_cache_s: 7200 } }, "budgets.exhausted_cache_s"],
    [{ budgets: { lease: 1 } }, "budgets.lease"],
    [{ max_request_bytes: -1 }, "max_request_bytes"],
    [{ max_request_bytes: 1.5 }, "max_request_bytes"],
    [{ cache_ttl_s: 0 }, "cache_ttl_s"],
    [{ stale_if_error_s: -5 }, "stale_if_error_s"],
    [{ categories: { request: { limits: { key: [{ count: 0, window_s: 1 }] } } } }, "categories.request.limits.key.0"],
    [{ categories: { request: { limits: { key: [{ count: 5, window_s: -1 }] } } } }, "categories.request.limits.key.0"],
    [{ categories: { request: { limits: { ip: [{ count: 5 }] } } } }, "categories.request.limits.ip.0"],
    [{ categories: { request: { limits: { key: [{ count: 1, window_s: 1 }, { count: 2, window_s: 2 }, { count: 3, window_s: 3 }, { count: 4, window_s: 4 }] } } } }, "categories.request.limits.key"],
    [{ categories: { Request: { limits: {} } } }, "categories.Request"],
    [{ categories: { request: { limits: { robot: [] } } } }, "categories.request.limits.robot"],
    [{ routes: [{ path: "no-slash" }] }, "routes.0"],
    [{ routes: [{ path: "/x", charges: { upload: -1 } }] }, "routes.0"],
    [{ routes: [{ path: "/x", quota: "hoard" }] }, "routes.0"],
    [{ auth_failures: [{ count: 0, window_s: 60 }] }, "auth_failures.0"],
    [{ in_flight: { per_credential: 0 } }, "in_flight.per_credential"],
    [{ in_flight: { credential_share: 0 } }, "in_flight.credential_share"],
    [{ in_flight: { tenant_share: 1.5 } }, "in_flight.tenant_share"],
    [{ limiter: { max_memory_mib: 0 } }, "limiter.max_memory_mib"],
    [{ usage: { flush_interval_s: 0 } }, "usage.flush_interval_s"],
    [{ reservation_ttl_s: 0 }, "reservation_ttl_s"],
    [{ audit: { threshold_rejections: 0 } }, "audit.threshold_rejections"],
    [{ request_log: 1 }, "request_log"],
    [{ categories: { request: { limits: { key: [{ count: 5, window_s: 1, scope: "everywhere" }] } } } }, "categories.request.limits.key.0"],
    [{ categories: { admin: { limits: { admin: [{ count: 5, window_s: 1, scope: "global" }] } } } }, "categories.admin.limits.admin.0.scope"],
    [{ auth_failures: [{ count: 5, window_s: 60, scope: "global" }] }, "auth_failures.0.scope"],
    [{ limiter: { default_scope: "cluster" } }, "limiter.default_scope"],
    [{ global: { max_overshoot: -0.1 } }, "global.max_overshoot"],
    [{ global: { max_overshoot: 2 } }, "global.max_overshoot"],
    [{ global: { min_lease_ms: 0 } }, "global.min_lease_ms"],
    [{ global: { min_lease_ms: 2.5 } }, "global.min_lease_ms"],
    [{ global: { min_lease_ms: 120_000 } }, "global.min_lease_ms"],
    [{ global: { on_error: "ignore" } }, "global.on_error"],
    [{ policy_on_error: "fail" }, "policy_on_error"],
    [{ global: { max_oveshoot: 0.1 } }, "global.max_oveshoot"],
    [{ unknown_field: true }, ""],
  ])("refuses %j naming %s", (raw, field) => {
    const result = parseConfig(raw);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      if (field === "") expect(result.message).toMatch(/unknown_field|unrecognized/i);
      else expect(result.field).toBe(field);
      expect(result.message.length).toBeGreaterThan(0);
    }
  });

  it.each([
    "https://169.254.169.254/latest/meta-data",
    "https://10.0.0.1/hook",
    "https://172.16.5.4/hook",
    "https://192.168.1.1/hook",
    "https://100.100.100.200/hook",
    "https://0.0.0.0/hook",
    "https://[fd00::1]/hook",
    "https://[fd00:ec2::254]/hook",
    "https://[fe80::1]/hook",
    "https://[::ffff:169.254.169.254]/hook",
    "https://[::ffff:a00:1]/hook",
    "https://[64:ff9b::a00:1]/hook",
    "https://[2002:a00:1::]/hook",
    "https://[::]/hook",
    "https://0xa9fea9fe/hook",
    "https://2852039166/hook",
    "https://metadata.google.internal/computeMetadata/v1/",
    "https://METADATA.GOOGLE.INTERNAL./x",
    "https://metadata/x",
    "https://db.corp.internal/x",
    "https://printer.local/x",
  ])("refuses the non-public webhook %s naming alerts.webhook_url", (url) => {
    const result = parseConfig({ alerts: { webhook_url: url } });
    expect(result).toMatchObject({ ok: false, field: "alerts.webhook_url", message: expect.stringMatching(/non-public/) });
  });

  it.each(["https://hooks.example.com/tollgate", "https://93.184.215.14/hook", "https://[2606:4700::1111]/hook", "http://127.0.0.1:8787/hook", "https://127.0.0.2/hook", "http://localhost:9/hook", "https://[::1]/hook", "http://[::1]:8080/hook"])(
    "accepts the public or loopback webhook %s",
    (url) => {
      expect(ok({ alerts: { webhook_url: url } }).alertWebhookUrl).toBe(url);
    },
  );

  it.each([
    [{ categories: { auth_failures: { limits: { ip: [{ count: 5, window_s: 60 }] } } } }, "categories.auth_failures"],
    [{ categories: { admin: { limits: { key: [{ count: 5, window_s: 1 }] } } } }, "categories.admin.limits.key"],
    [{ categories: { request: { limits: { admin: [{ count: 5, window_s: 1 }] } } } }, "categories.request.limits.admin"],
  ])("refuses %j, a categories entry that could never apply, naming %s", (raw, field) => {
    expect(parseConfig(raw)).toMatchObject({ ok: false, field, message: expect.stringMatching(/auth_failures|never applies/) });
  });

  it("refuses a JSON string that does not parse, or is not an object", () => {
    expect(parseConfig("{mode:")).toEqual({ ok: false, field: "TOLLGATE", message: "is not valid JSON" });
    expect(parseConfig("[1]")).toEqual({ ok: false, field: "TOLLGATE", message: "must be a JSON object" });
  });
});
