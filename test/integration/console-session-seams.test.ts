// The console session's edges: each role's sessions hang on its own token
// (rotating the auditor's ends every auditor session and leaves the admin's,
// and the other way round), signing out is the console's alone (the header),
// and no cookie may last longer than a session does, however it was signed.
import { describe, expect, it } from "vitest";
import { sessionCookie } from "../../src/admin/console-session";
import { problemOf, runtimeOf } from "../helpers";
import { ADMIN_TOKEN, AUDITOR_TOKEN, adminCall, jsonOf, testConfig } from "./admin-helpers";

const CONFIG = testConfig({ request_log: "off" });
const CONSOLE = { "x-tollgate-console": "1" };
const ROTATED_ADMIN = { ADMIN_TOKEN: "rotated-admin-token-seams-0123456789abcdef" };
const ROTATED_AUDITOR = { AUDITOR_TOKEN: "rotated-auditor-token-seams-0123456789abcd" };

async function signIn(token: string): Promise<string> {
  const response = await adminCall("POST", "/session", CONFIG, { token, headers: CONSOLE });
  await jsonOf(response, 200);
  return (response.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
}

/** What GET /session says of `cookie` under these secrets. */
async function sessionOf(cookie: string, env: Record<string, string> = {}): Promise<Record<string, unknown>> {
  return jsonOf(await adminCall("GET", "/session", CONFIG, { token: null, headers: { ...CONSOLE, cookie }, env }), 200);
}

describe("console sessions and token rotation", () => {
  it("ends every auditor session when the auditor token changes, and no admin session", async () => {
    const auditor = await signIn(AUDITOR_TOKEN);
    const admin = await signIn(ADMIN_TOKEN);
    expect(await sessionOf(auditor, ROTATED_AUDITOR)).toEqual({ signed_in: false, ended: true });
    expect(await sessionOf(admin, ROTATED_AUDITOR)).toMatchObject({ signed_in: true, role: "admin" });
    expect((await adminCall("GET", "/audit", CONFIG, { token: null, headers: { ...CONSOLE, cookie: auditor }, env: ROTATED_AUDITOR })).status).toBe(401);
  });

  it("ends every admin session when the admin token changes, and no auditor session", async () => {
    const auditor = await signIn(AUDITOR_TOKEN);
    const admin = await signIn(ADMIN_TOKEN);
    expect(await sessionOf(admin, ROTATED_ADMIN)).toEqual({ signed_in: false, ended: true });
    expect(await sessionOf(auditor, ROTATED_ADMIN)).toMatchObject({ signed_in: true, role: "auditor" });
    await jsonOf(await adminCall("GET", "/audit", CONFIG, { token: null, headers: { ...CONSOLE, cookie: auditor }, env: ROTATED_ADMIN }), 200);
  });
});

describe("signing out", () => {
  it("refuses DELETE /session without X-Tollgate-Console: 1 and leaves the cookie alone", async () => {
    const cookie = await signIn(ADMIN_TOKEN);
    const refused = await adminCall("DELETE", "/session", CONFIG, { token: null, headers: { cookie } });
    expect(refused.status).toBe(400);
    expect((await problemOf(refused)).code).toBe("invalid_request");
    expect(refused.headers.get("set-cookie")).toBeNull();
    expect(await sessionOf(cookie)).toMatchObject({ signed_in: true });
  });
});

describe("a cookie's expiry", () => {
  it("refuses a correctly signed cookie whose expiry lies further ahead than a session lasts", async () => {
    await signIn(ADMIN_TOKEN); // the runtime of this config exists
    const runtime = runtimeOf(CONFIG);
    const nowMs = Date.now();
    const cookieFrom = async (signedAtMs: number) => (await sessionCookie(runtime, "admin", signedAtMs)).setCookie.split(";")[0] ?? "";
    // Signed a minute or ten days in the future: it would outlive any session signed now.
    for (const aheadMs of [60_000, 10 * 86_400_000]) {
      const cookie = await cookieFrom(nowMs + aheadMs);
      expect(await sessionOf(cookie), `${aheadMs} ms ahead`).toEqual({ signed_in: false, ended: true });
      expect((await adminCall("GET", "/audit", CONFIG, { token: null, headers: { ...CONSOLE, cookie } })).status).toBe(401);
    }
    // One signed a minute ago expires within a session's length: good.
    expect(await sessionOf(await cookieFrom(nowMs - 60_000))).toMatchObject({ signed_in: true });
  });
});
