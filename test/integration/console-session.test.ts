// The console's session cookie: signing in exchanges the token for a signed,
// HttpOnly cookie confined to /_tollgate; the admin API takes it only beside
// `X-Tollgate-Console: 1`; it ends after 12 hours or when the token changes.
import { describe, expect, it } from "vitest";
import { SESSION_TTL_MS, sessionCookie } from "../../src/admin/console-session";
import { problemOf, runtimeOf, unique } from "../helpers";
import { ADMIN_TOKEN, AUDITOR_TOKEN, adminCall, jsonOf, testConfig } from "./admin-helpers";

const CONFIG = testConfig();
const CONSOLE = { "x-tollgate-console": "1" };

/** Signs in with `token` and answers the cookie pair (`name=value`) and the whole Set-Cookie header. */
async function signIn(token: string): Promise<{ cookie: string; setCookie: string; body: Record<string, unknown> }> {
  const response = await adminCall("POST", "/session", CONFIG, { token, headers: CONSOLE });
  const body = await jsonOf(response, 200);
  const setCookie = response.headers.get("set-cookie") ?? "";
  return { cookie: setCookie.split(";")[0] ?? "", setCookie, body };
}

describe("the console session", () => {
  it("exchanges the admin token for an HttpOnly, Secure, SameSite=Strict cookie on /_tollgate lasting 12 hours", async () => {
    const { cookie, setCookie, body } = await signIn(ADMIN_TOKEN);
    expect(body.role).toBe("admin");
    const attributes = setCookie.split(";").map((part) => part.trim());
    expect(attributes).toEqual(expect.arrayContaining(["Path=/_tollgate", "Max-Age=43200", "HttpOnly", "Secure", "SameSite=Strict"]));
    expect(cookie.startsWith("tollgate_console=admin.")).toBe(true);
    expect(setCookie).not.toContain(ADMIN_TOKEN);
    const session = await jsonOf(await adminCall("GET", "/session", CONFIG, { token: null, headers: { ...CONSOLE, cookie } }), 200);
    expect(session).toMatchObject({ signed_in: true, role: "admin" });
    await jsonOf(await adminCall("GET", "/audit", CONFIG, { token: null, headers: { ...CONSOLE, cookie } }), 200);
    const tenant = unique("sess");
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}`, CONFIG, { token: null, body: {}, headers: { ...CONSOLE, cookie } }), 201);
  });

  it("refuses the cookie without X-Tollgate-Console: 1, as a cross-site form would send it", async () => {
    const { cookie } = await signIn(ADMIN_TOKEN);
    for (const headers of [{ cookie }, { cookie, "x-tollgate-console": "true" }] as Record<string, string>[]) {
      const refused = await adminCall("PUT", `/tenants/${unique("csrf")}`, CONFIG, { token: null, body: {}, headers });
      expect(refused.status).toBe(401);
      const problem = await problemOf(refused);
      expect(problem.code).toBe("admin_unauthorized");
      expect(String(problem.detail)).toContain("X-Tollgate-Console: 1");
    }
    expect(await jsonOf(await adminCall("GET", "/session", CONFIG, { token: null, headers: { cookie } }), 200)).toMatchObject({ signed_in: false });
  });

  it("gives the auditor a read-only session", async () => {
    const { cookie, body } = await signIn(AUDITOR_TOKEN);
    expect(body.role).toBe("auditor");
    await jsonOf(await adminCall("GET", "/audit", CONFIG, { token: null, headers: { ...CONSOLE, cookie } }), 200);
    const refused = await adminCall("PUT", `/tenants/${unique("sess-aud")}`, CONFIG, { token: null, body: {}, headers: { ...CONSOLE, cookie } });
    expect((await problemOf(refused)).code).toBe("admin_forbidden");
  });

  it("lets the auditor's token write nothing but POST /session, not a route whose path merely ends like it", async () => {
    const lookalike = await adminCall("PUT", "/overrides/ip:192.0.2.7/admin/v1/session", CONFIG, { token: AUDITOR_TOKEN, body: { limits: {} } });
    expect(lookalike.status).toBe(403);
    expect((await problemOf(lookalike)).code).toBe("admin_forbidden");
  });

  it("ends the session when the token changes, and says so", async () => {
    const { cookie } = await signIn(ADMIN_TOKEN);
    const rotated = { ADMIN_TOKEN: "rotated-admin-token-0123456789abcdefghijkl" };
    const refused = await adminCall("GET", "/audit", CONFIG, { token: null, headers: { ...CONSOLE, cookie }, env: rotated });
    expect(refused.status).toBe(401);
    expect(String((await problemOf(refused)).detail)).toContain("session has ended");
    const status = await adminCall("GET", "/session", CONFIG, { token: null, headers: { ...CONSOLE, cookie }, env: rotated });
    expect(await jsonOf(status, 200)).toEqual({ signed_in: false, ended: true });
    expect(status.headers.get("set-cookie")).toContain("Max-Age=0");
  });

  it("ends the session after 12 hours", async () => {
    await signIn(ADMIN_TOKEN); // the runtime of this config exists
    const runtime = runtimeOf(CONFIG);
    const old = await sessionCookie(runtime, "admin", Date.now() - SESSION_TTL_MS - 1_000);
    const cookie = old.setCookie.split(";")[0] ?? "";
    expect((await adminCall("GET", "/audit", CONFIG, { token: null, headers: { ...CONSOLE, cookie } })).status).toBe(401);
    const fresh = await sessionCookie(runtime, "admin", Date.now() - SESSION_TTL_MS + 60_000);
    await jsonOf(await adminCall("GET", "/audit", CONFIG, { token: null, headers: { ...CONSOLE, cookie: fresh.setCookie.split(";")[0] ?? "" } }), 200);
  });

  it("refuses a forged or altered cookie", async () => {
    const { cookie } = await signIn(AUDITOR_TOKEN);
    const promoted = cookie.replace("=auditor.", "=admin.");
    expect((await adminCall("GET", "/audit", CONFIG, { token: null, headers: { ...CONSOLE, cookie: promoted } })).status).toBe(401);
    const longer = cookie.replace(/\.(\d+)\./, (_m, ms: string) => `.${Number(ms) + 1}.`);
    expect((await adminCall("GET", "/audit", CONFIG, { token: null, headers: { ...CONSOLE, cookie: longer } })).status).toBe(401);
  });

  it("does not let a session sign itself in again, and clears the cookie on sign-out", async () => {
    const { cookie } = await signIn(ADMIN_TOKEN);
    expect((await adminCall("POST", "/session", CONFIG, { token: null, headers: { ...CONSOLE, cookie } })).status).toBe(401);
    const out = await adminCall("DELETE", "/session", CONFIG, { token: null, headers: { ...CONSOLE, cookie } });
    expect(out.status).toBe(200);
    expect(out.headers.get("set-cookie")).toMatch(/^tollgate_console=; Path=\/_tollgate; Max-Age=0/);
  });

  it("answers a signed-out console with 200, not a refusal", async () => {
    expect(await jsonOf(await adminCall("GET", "/session", CONFIG, { token: null, headers: CONSOLE }), 200)).toEqual({ signed_in: false, ended: false });
  });
});
