// A gateway of its own for the console tests that need a configuration the
// shared one has not (a login route charged only on failures, a search
// category), configured as an operator's API product would be. Started by
// the file that uses it (`startDemoGateway()` in beforeAll, `stop()` after),
// like traffic-alerts.test.ts's.
import { type RunningGateway, startGateway } from "./gateway";

/** wrangler.toml's routes, and two an API product adds: logins charged only when they fail, and a priced search. */
export const DEMO_TOLLGATE: Readonly<Record<string, unknown>> = {
  routes: [
    { method: "PUT", path: "/objects/:object", charges: { upload: 1 }, quota: "store" },
    { method: "DELETE", path: "/objects/:object", quota: "release" },
    { method: "POST", path: "/login", charges: { login_failure: 1 }, charge_on_status: ["4xx"] },
    { method: "GET", path: "/v1/search", charges: { search: 1 } },
  ],
  categories: {
    admin: { limits: { admin: [{ count: 10_000, window_s: 1 }] } },
    login_failure: { limits: { ip: [{ count: 5, window_s: 900 }] } },
    search: { limits: { key: [{ count: 20, window_s: 1 }] } },
  },
};

export interface DemoGateway extends RunningGateway {
  /** An admin API call as the admin token, answering the status and the JSON body. */
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }>;
}

/** Starts the demo gateway (wrangler dev, a fresh D1, the recording origin). */
export async function startDemoGateway(): Promise<DemoGateway> {
  const gw = await startGateway({ timeoutMs: 150_000, tollgate: DEMO_TOLLGATE });
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${gw.gatewayUrl}/_tollgate/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${gw.adminToken}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text === "" ? null : (JSON.parse(text) as unknown) };
  };
  return { ...gw, admin };
}
