import { describe, expect, it, vi } from "vitest";
import { problemOf, unique, uniqueIp } from "../helpers";
import { ADMIN_TOKEN, AUDITOR_TOKEN, adminCall, jsonOf, testConfig } from "./admin-helpers";

const CONFIG = testConfig();

async function refusedWith(response: Response, status: number, code: string): Promise<Record<string, unknown>> {
  expect(response.status).toBe(status);
  const body = await problemOf(response);
  expect(body.code).toBe(code);
  return body;
}

describe("admin authentication", () => {
  it("answers 401 admin_unauthorized without a token", async () => {
    const response = await adminCall("GET", "/audit", CONFIG, { token: null });
    await refusedWith(response, 401, "admin_unauthorized");
    expect(response.headers.get("www-authenticate")).toContain("Bearer");
  });

  it("answers 401 for a wrong token, a same-length wrong token, a prefix and a suffix of the right one", async () => {
    const sameLength = ADMIN_TOKEN.slice(0, -1) + (ADMIN_TOKEN.endsWith("9") ? "8" : "9");
    for (const token of ["wrong", sameLength, ADMIN_TOKEN.slice(0, 10), ADMIN_TOKEN.slice(5), `${ADMIN_TOKEN}x`, `x${ADMIN_TOKEN}`]) {
      const body = await refusedWith(await adminCall("GET", "/audit", CONFIG, { token }), 401, "admin_unauthorized");
      expect(JSON.stringify(body)).not.toContain(token);
    }
  });

  it("refuses an address with 429 auth_failures after 60 wrong tokens, before comparing, while other addresses go on", async () => {
    const ip = uniqueIp();
    for (let i = 0; i < 60; i++) {
      await refusedWith(await adminCall("GET", "/audit", CONFIG, { token: `wrong-${i}`, headers: { "cf-connecting-ip": ip } }), 401, "admin_unauthorized");
    }
    const refused = await adminCall("GET", "/audit", CONFIG, { headers: { "cf-connecting-ip": ip } });
    const body = await refusedWith(refused, 429, "auth_failures");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(body)).not.toContain(ip);
    expect((await adminCall("GET", "/audit", CONFIG, { headers: { "cf-connecting-ip": uniqueIp() } })).status).toBe(200);
  });

  it("answers 401 for another scheme than Bearer", async () => {
    await refusedWith(await adminCall("GET", "/audit", CONFIG, { token: null, headers: { authorization: `Basic ${btoa(`admin:${ADMIN_TOKEN}`)}` } }), 401, "admin_unauthorized");
  });

  it("never accepts a token in the query string, even the right one, and says so", async () => {
    for (const name of ["token", "access_token", "api_key"]) {
      const withoutHeader = await refusedWith(await adminCall("GET", `/audit?${name}=${ADMIN_TOKEN}`, CONFIG, { token: null }), 401, "admin_unauthorized");
      expect(String(withoutHeader.detail)).toMatch(/query string/);
      expect(JSON.stringify(withoutHeader)).not.toContain(ADMIN_TOKEN);
      // Refused even next to a valid header: the URL has already leaked it.
      await refusedWith(await adminCall("GET", `/audit?${name}=${ADMIN_TOKEN}`, CONFIG), 401, "admin_unauthorized");
    }
  });

  it("lets the auditor read but not write", async () => {
    const tenant = unique("aud");
    await jsonOf(await adminCall("GET", "/audit", CONFIG, { token: AUDITOR_TOKEN }), 200);
    await jsonOf(await adminCall("GET", "/openapi.json", CONFIG, { token: AUDITOR_TOKEN }), 200);
    await refusedWith(await adminCall("PUT", `/tenants/${tenant}`, CONFIG, { token: AUDITOR_TOKEN, body: {} }), 403, "admin_forbidden");
    await refusedWith(await adminCall("GET", `/tenants/${tenant}`, CONFIG, { token: AUDITOR_TOKEN }), 404, "not_found");
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}`, CONFIG, { body: {} }), 201);
    await jsonOf(await adminCall("GET", `/tenants/${tenant}`, CONFIG, { token: AUDITOR_TOKEN }), 200);
    await refusedWith(await adminCall("DELETE", `/tenants/${tenant}`, CONFIG, { token: AUDITOR_TOKEN }), 403, "admin_forbidden");
    await refusedWith(await adminCall("POST", `/tenants/${tenant}/keys`, CONFIG, { token: AUDITOR_TOKEN, body: { name: "x" } }), 403, "admin_forbidden");
  });

  it("answers 503 admin_disabled when no ADMIN_TOKEN is set, whatever is sent", async () => {
    for (const token of [ADMIN_TOKEN, AUDITOR_TOKEN, null]) {
      await refusedWith(await adminCall("GET", "/audit", CONFIG, { token, env: { ADMIN_TOKEN: undefined } }), 503, "admin_disabled");
    }
    await refusedWith(await adminCall("GET", "/audit", CONFIG, { env: { ADMIN_TOKEN: "" } }), 503, "admin_disabled");
  });

  it("rate limits each token on its own under the admin category: exactly the burst, then 429 with the exact delay", async () => {
    // The default admin limit (10/s, burst 20), with a token no other test uses, on a clock held
    // still (the admin API reads Date.now): no refill between calls, so the figures are exact.
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      const defaults = {};
      const token = `t-${unique("admin-token")}-long-enough-for-the-32-minimum`;
      for (let i = 0; i < 20; i++) await jsonOf(await adminCall("GET", "/audit?limit=1", defaults, { token, env: { ADMIN_TOKEN: token } }), 200);
      const refused = await adminCall("GET", "/audit?limit=1", defaults, { token, env: { ADMIN_TOKEN: token } });
      const body = await refusedWith(refused, 429, "rate_limited");
      expect(body.category).toBe("admin");
      expect(body.retry_after_ms).toBe(100);
      expect(refused.headers.get("retry-after")).toBe("1");
      // Another token is metered on its own.
      await jsonOf(await adminCall("GET", "/audit?limit=1", defaults, { token: AUDITOR_TOKEN, env: { ADMIN_TOKEN: token } }), 200);
      // A tenth of a second later, one more call fits, and only one.
      vi.setSystemTime(Date.now() + 100);
      await jsonOf(await adminCall("GET", "/audit?limit=1", defaults, { token, env: { ADMIN_TOKEN: token } }), 200);
      await refusedWith(await adminCall("GET", "/audit?limit=1", defaults, { token, env: { ADMIN_TOKEN: token } }), 429, "rate_limited");
    } finally {
      vi.useRealTimers();
    }
  });

  it("answers not_found for an unknown admin path, after authentication", async () => {
    await refusedWith(await adminCall("GET", "/nope", CONFIG), 404, "not_found");
    await refusedWith(await adminCall("GET", "/nope", CONFIG, { token: "wrong" }), 401, "admin_unauthorized");
  });
});
