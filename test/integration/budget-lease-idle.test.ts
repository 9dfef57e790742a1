// A lease that ended while its isolate spent nothing of any budget for more
// than a day: the object keeps an ended lease's row only a day for its close,
// so the close the isolate sends with its next budgeted request found no row
// and the lease's unspent units stayed counted in `used` for good, as if the
// isolate had been lost. The isolate closes a slot's ended lease in the same
// call as its ask for a new one, and the object takes a call's closes before
// it forgets the rows that ended a day ago.
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { clockedGateway, gatewayRequest, unique } from "../helpers";
import { adminCall, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

const HUGE = [{ count: 1_000_000, window_s: 1 }];
const CONFIG = testConfig({ categories: { admin: { limits: { admin: HUGE } }, request: { limits: { key: HUGE, tenant: HUGE } } } });
const DAY_MS = 86_400_000;

it("gives back the unspent units of a lease closed two days after it ended", async () => {
  const tenant = unique("lease-idle");
  await createTenant(CONFIG, tenant);
  const { key } = await mintKey(CONFIG, tenant);
  // Credits: no period ends while the clock moves on.
  expect((await adminCall("PUT", `/tenants/${tenant}/budgets/request`, CONFIG, { body: { amount: 40, period: "none" } })).status).toBe(201);
  const gateway = clockedGateway(CONFIG);
  const get = () => gatewayRequest("/things", { ip: "198.51.100.94", headers: { authorization: `Bearer ${key}` } });
  // The second request asks again and is granted more than it needs (its demand doubles): the lease ends with units unspent.
  for (let i = 0; i < 2; i++) expect((await gateway.call(get(), { settle: true })).status).toBe(200);
  gateway.clock.nowMs += 2 * DAY_MS;
  expect((await gateway.call(get(), { settle: true })).status).toBe(200);
  await gateway.runtime.budgetLeases.closeAll({ tenant: env.TENANT_QUOTA, org: env.ORG_QUOTA }, null, gateway.clock.nowMs, () => {});
  const budget = await jsonOf<{ used: number; leased: number }>(await adminCall("GET", `/tenants/${tenant}/budgets/request`, CONFIG), 200);
  expect(budget).toMatchObject({ used: 3, leased: 0 });
});
