// charge_on_status's give-back in full: a route charging more than one unit
// gets all of them back on a status it does not name, from its rate limits
// and from the budgets of that category alike.
import { describe, expect, it } from "vitest";
import { clockedGateway, gatewayRequest, unique, uniqueIp } from "../helpers";
import { adminCall, createTenant, mintKey, testConfig } from "./admin-helpers";

function login(ip: string, status: number, key?: string): Request {
  return gatewayRequest("/login", { method: "POST", ip, body: "user=a", headers: { "x-origin-status": String(status), ...(key === undefined ? {} : { authorization: `Bearer ${key}` }) } });
}

describe("a status charge given back", () => {
  it("gives back every unit of a route charging 3: two successes leave room for two failures of 6 per 900 s", async () => {
    const gateway = clockedGateway({
      categories: { login_failure: { limits: { ip: [{ count: 6, window_s: 900 }] } } },
      routes: [{ method: "POST", path: "/login", charges: { login_failure: 3 }, charge_on_status: ["4xx"] }],
    });
    const ip = uniqueIp();
    const answers: number[] = [];
    for (const status of [200, 200, 401, 401, 401]) answers.push((await gateway.call(login(ip, status), { settle: true })).status);
    expect(answers).toEqual([200, 200, 401, 401, 429]);
  });

  it("names only enforced limits in the answer's headers after a give-back, a shadow one beside them kept (found by the contract fuzz)", async () => {
    // The shadow limit (3 per 1 s) is closer to running out than the enforced one (6 per 900 s): still never advertised.
    const gateway = clockedGateway({
      categories: { login_failure: { limits: { ip: [{ count: 6, window_s: 900 }, { count: 3, window_s: 1, shadow: true }] } } },
      routes: [{ method: "POST", path: "/login", charges: { login_failure: 1 }, charge_on_status: ["4xx"] }],
    });
    const ip = uniqueIp();
    const answers: Response[] = [];
    for (const status of [401, 401, 200]) answers.push(await gateway.call(login(ip, status), { settle: true }));
    expect(answers.map((r) => r.status)).toEqual([401, 401, 200]);
    const success = answers[2]!;
    expect(success.headers.get("ratelimit-policy")).not.toContain("login_failure-ip-1s");
    expect(success.headers.get("ratelimit")).not.toContain("login_failure-ip-1s");
    // The enforced limit's figures: two failures spent of 6.
    expect(success.headers.get("ratelimit")).toBe('"login_failure-ip-900s";r=4;t=300');
  });

  it("gives the units back to the budgets too: a success leaves a budget of exactly one charge unspent", async () => {
    const huge = [{ count: 1_000_000, window_s: 1 }];
    const config = testConfig({
      categories: { admin: { limits: { admin: huge } }, request: { limits: { key: huge, tenant: huge } }, login_failure: { limits: { key: huge } } },
      routes: [{ method: "POST", path: "/login", charges: { login_failure: 3 }, charge_on_status: ["4xx"] }],
    });
    const tenant = unique("status-budget");
    await createTenant(config, tenant);
    const { key } = await mintKey(config, tenant);
    const put = await adminCall("PUT", `/tenants/${tenant}/budgets/login_failure`, config, { body: { amount: 3, period: "month" } });
    expect(put.status).toBe(201);
    const gateway = clockedGateway(config);
    const ip = uniqueIp();
    const answers: number[] = [];
    for (const status of [200, 200, 401, 200]) answers.push((await gateway.call(login(ip, status, key), { settle: true })).status);
    // The two successes cost nothing; the failure spends the 3; nothing is left for the next call.
    expect(answers).toEqual([200, 200, 401, 429]);
  });
});
