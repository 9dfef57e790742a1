// A response-priced route with a reserve of 0 charges its category nothing at
// admission, so the admission's RateLimit-Policy lists none of that
// category's policies; the cost the origin's header names is then charged as
// a debt, before the answer goes out. The answer lists those policies too,
// whichever policy stays the closest to running out (it kept the admission's
// headers when another policy stayed tighter: found by the contract fuzz).
import { expect, it } from "vitest";
import { clockedGateway, gatewayRequest, unique } from "../helpers";
import { createTenant, mintKey, testConfig } from "./admin-helpers";

const HUGE = [{ count: 1_000_000, window_s: 1 }];
const CONFIG = testConfig({
  routes: [{ method: "POST", path: "/v1/chat", response_charge: { category: "tokens", header: "x-usage-total-tokens", reserve: 0 } }],
  categories: {
    admin: { limits: { admin: HUGE } },
    // The tenant's request limit stays the tightest: 1 left of a burst of 2 after this request.
    request: { limits: { key: HUGE, tenant: [{ count: 7, window_s: 1, burst: 2 }] } },
    tokens: { limits: { key: [{ count: 20, window_s: 2 }] } },
  },
});

it("lists the priced category's policies in the answer to a debt on a reserve of 0", async () => {
  const tenant = unique("zero-reserve-headers");
  await createTenant(CONFIG, tenant);
  const { key } = await mintKey(CONFIG, tenant);
  const gateway = clockedGateway(CONFIG);
  const request = gatewayRequest("/v1/chat", { method: "POST", ip: "198.51.100.95", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-origin-usage-header": "8" }, body: "{}" });
  const res = await gateway.call(request, { settle: true });
  expect(res.status).toBe(200);
  const policy = res.headers.get("ratelimit-policy") ?? "";
  expect(policy).toContain('"tokens-key-2s"');
  expect(policy).toContain('"request-tenant-1s"');
  // The closest to running out: the tenant's request limit, 1 of its burst of 2 left (the tokens key limit has 12 of 20).
  expect(res.headers.get("ratelimit")).toMatch(/^"request-tenant-1s";r=1;t=1$/);
});
