// The config fields of the answers that help clients: rate_limit_headers,
// a limit's delay_max_ms and limiter.max_delayed, a route's charge_on_status.
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config";

describe("answers config", () => {
  it("defaults rate_limit_headers to draft-11 and accepts draft-12", () => {
    const absent = parseConfig({});
    expect(absent.ok && absent.config.rateLimitHeaders).toBe("draft-11");
    const twelve = parseConfig({ rate_limit_headers: "draft-12" });
    expect(twelve.ok && twelve.config.rateLimitHeaders).toBe("draft-12");
  });

  it("accepts charge_on_status codes and classes", () => {
    const result = parseConfig({ routes: [{ method: "POST", path: "/login", charges: { login_failure: 1 }, charge_on_status: [401, "5xx"] }] });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const route = result.config.routes.match("POST", "/login");
    expect(route?.chargeOnStatus?.spec).toEqual([401, "5xx"]);
  });

  it("compiles delay_max_ms on a limit and defaults limiter.max_delayed to 1000", () => {
    const result = parseConfig({ categories: { request: { limits: { ip: [{ count: 5, window_s: 1, delay_max_ms: 1500 }] } } } });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.config.defaults.request?.ip?.[0]?.delayMaxMs).toBe(1500);
    expect(result.config.limiterMaxDelayed).toBe(1000);
  });

  it.each([
    [{ categories: { request: { limits: { ip: [{ count: 5, window_s: 1, delay_max_ms: 10_001 }] } } } }, "categories.request.limits.ip.0.delay_max_ms"],
    [{ categories: { request: { limits: { ip: [{ count: 5, window_s: 1, delay_max_ms: 200.5 }] } } } }, "categories.request.limits.ip.0.delay_max_ms"],
    [{ categories: { request: { limits: { key: [{ count: 5, window_s: 1, delay_max_ms: -1 }] } } } }, "categories.request.limits.key.0.delay_max_ms"],
    [{ categories: { request: { limits: { key: [{ count: 5, window_s: 1, delay_max_ms: "1s" }] } } } }, "categories.request.limits.key.0.delay_max_ms"],
    [{ limiter: { max_delayed: -1 } }, "limiter.max_delayed"],
    [{ limiter: { max_delayed: 1.5 } }, "limiter.max_delayed"],
    [{ rate_limit_headers: "draft-13" }, "rate_limit_headers"],
    [{ rate_limit_headers: 12 }, "rate_limit_headers"],
    [{ routes: [{ path: "/login", charge_on_status: [99] }] }, "routes.0.charge_on_status.0"],
    [{ routes: [{ path: "/login", charge_on_status: [401, 600] }] }, "routes.0.charge_on_status.1"],
    [{ routes: [{ path: "/login", charge_on_status: [401.5] }] }, "routes.0.charge_on_status.0"],
    [{ routes: [{ path: "/login", charge_on_status: ["6xx"] }] }, "routes.0.charge_on_status.0"],
    [{ routes: [{ path: "/login", charge_on_status: ["4XX"] }] }, "routes.0.charge_on_status.0"],
    [{ routes: [{ path: "/login", charge_on_status: ["client_error"] }] }, "routes.0.charge_on_status.0"],
    [{ routes: [{ path: "/login", charge_on_status: [] }] }, "routes.0.charge_on_status"],
    [{ routes: [{ path: "/login", charge_on_status: "4xx" }] }, "routes.0.charge_on_status"],
  ])("refuses %j naming %s", (raw, field) => {
    const result = parseConfig(raw);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.field).toBe(field);
      expect(result.message.length).toBeGreaterThan(0);
    }
  });
});
