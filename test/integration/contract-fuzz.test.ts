// The gateway against the contract's model (test/model/): random configs
// that combine the features, random request sequences, run through the real
// data plane on a held clock against the recording origin and through the
// model; any difference fails, with the shrunk case printed as a test to
// paste below. `npm test` runs a fixed seed; `npm run fuzz -- --runs N
// --seed S` runs more (scripts/fuzz.mjs). The scenarios with per-policy
// shadow are contract-fuzz-shadow.test.ts; both use contract-fuzz-run.ts.
import { describe, it } from "vitest";
import { scenarioArb } from "./contract-fuzz-cases";
import { agreesOnAll, expectAgreement, RUNS, SEED } from "./contract-fuzz-run";

describe("the gateway against the contract's model", () => {
  it(`agrees on ${RUNS} random configs and request sequences (seed ${SEED})`, { timeout: 60 * 60_000 }, async () => {
    await agreesOnAll(scenarioArb, RUNS);
  });
});

describe("pinned cases (a failing case the fuzz prints goes here)", () => {
  it("agrees on a shadow-mode request its limits would have refused: RateLimit names the limit with the longest wait, as the 429 would", async () => {
    // Seed 5, run 1 of the shadow scenarios, shrunk (a slip of the comparison, not of the gateway): the answer describes
    // the denial enforce would have made, which names the limit that decides the wait, not the one with least room.
    await expectAgreement({"config":{"mode":"shadow","allow_path_parameters":false,"max_request_bytes":0,"categories":{"request":{"limits":{"key":[{"count":2,"window_s":1,"shadow":true},{"count":4,"window_s":30,"shadow":true}],"ip":[{"count":2,"window_s":1,"shadow":true},{"count":4,"window_s":30,"shadow":true}]}},"upload":{"limits":{"key":[{"count":1,"window_s":1,"shadow":true},{"count":2,"window_s":30,"shadow":true}],"tenant":[{"count":2,"window_s":1,"shadow":true}],"ip":[{"count":1,"window_s":1,"shadow":true},{"count":2,"window_s":30,"shadow":true}]}},"tokens":{"limits":{"key":[{"count":10,"window_s":1,"burst":22}],"tenant":[{"count":24,"window_s":1,"burst":1},{"count":40,"window_s":30,"shadow":true}]}}},"routes":[{"method":"POST","path":"/v1/chat","response_charge":{"category":"tokens","header":"x-usage-total-tokens","reserve":10}}]},"tenants":[{"name":"t0","org":null,"quota":null},{"name":"t1","org":null,"quota":null}],"keys":[{"name":"kA","tenant":"t0"},{"name":"kB","tenant":"t0"}],"budgets":[{"owner":{"kind":"key","name":"kA"},"category":"request","amount":1,"period":"month","shadow":true}],"steps":[{"kind":"send","requests":[{"method":"POST","path":"/v1/chat","bodyBytes":3,"credential":"kA","hangUp":false,"origin":{"status":200,"cost":21,"delayMs":190}},{"method":"POST","path":"/v1/chat","bodyBytes":3,"credential":"kA","hangUp":false,"origin":{"status":200,"cost":null,"delayMs":120}}]},{"kind":"send","requests":[{"method":"POST","path":"/v1/chat","bodyBytes":3,"credential":"kA","hangUp":false,"origin":{"status":200,"cost":null,"delayMs":0}}]},{"kind":"advance","ms":1}]});
  });

  it("agrees on a priced cost of 0 below its reserve: RateLimit names none of the priced category's limits, the tightest of them included", async () => {
    // Seed 12345, run 119 of the shadow scenarios, shrunk: the refund's figures were read over every charge, and the
    // category's tenant limit (burst 3), charged nothing at a cost of 0, was named and listed.
    await expectAgreement({"config":{"mode":"enforce","allow_path_parameters":false,"max_request_bytes":0,"categories":{"upload":{"limits":{"key":[{"count":1,"window_s":1,"shadow":true}],"tenant":[{"count":2,"window_s":1,"shadow":true}],"ip":[{"count":1,"window_s":1,"shadow":true},{"count":2,"window_s":30,"shadow":true}]}},"tokens":{"limits":{"key":[{"count":10,"window_s":1,"shadow":true},{"count":20,"window_s":30,"shadow":true}],"tenant":[{"count":20,"window_s":1,"burst":3}]}}},"routes":[{"method":"POST","path":"/v1/chat","response_charge":{"category":"tokens","header":"x-usage-total-tokens","reserve":1}}]},"tenants":[{"name":"t0","org":null,"quota":null},{"name":"t1","org":null,"quota":null}],"keys":[{"name":"kA","tenant":"t0"},{"name":"kB","tenant":"t0"}],"budgets":[{"owner":{"kind":"key","name":"kA"},"category":"request","amount":1,"period":"month","shadow":true}],"steps":[{"kind":"send","requests":[{"method":"POST","path":"/v1/chat","bodyBytes":3,"credential":"kA","hangUp":false,"origin":{"status":200,"cost":null,"delayMs":120}},{"method":"POST","path":"/v1/chat","bodyBytes":3,"credential":"kA","hangUp":false,"origin":{"status":200,"cost":null,"delayMs":190}}]},{"kind":"topup","budget":0,"amount":1,"elsewhere":false},{"kind":"send","requests":[{"method":"POST","path":"/v1/chat","bodyBytes":3,"credential":"kA","hangUp":false,"origin":{"status":200,"cost":0,"delayMs":0}}]},{"kind":"send","requests":[{"method":"POST","path":"/v1/chat","bodyBytes":3,"credential":"kA","hangUp":false,"origin":{"status":200,"cost":null,"delayMs":0}}]},{"kind":"send","requests":[{"method":"GET","path":"/objects/a","credential":"kA","bodyBytes":0,"origin":{"status":200,"cost":null,"delayMs":0},"hangUp":true}]},{"kind":"send","requests":[{"method":"GET","path":"/objects/a","credential":"kA","bodyBytes":0,"origin":{"status":200,"cost":null,"delayMs":0},"hangUp":true}]},{"kind":"send","requests":[{"method":"GET","path":"/objects/a","credential":"kA","bodyBytes":0,"origin":{"status":200,"cost":null,"delayMs":50},"hangUp":true},{"method":"GET","path":"/objects/a","credential":"kA","bodyBytes":0,"origin":{"status":200,"cost":null,"delayMs":190},"hangUp":true}]}]});
  });

  it("agrees on a shadow-mode status charge its limits would have refused: the budget gives it back when the status does not match", async () => {
    // Seed 694254097, run 184: the budget kept the charge (used 1, the model 0).
    await expectAgreement({
      config: { mode: "shadow", categories: { request: { limits: { key: [{ count: 1, window_s: 60 }] } } }, routes: [{ method: "POST", path: "/login", charges: { login: 1 }, charge_on_status: [401] }] },
      tenants: [
        { name: "t0", org: null, quota: null },
        { name: "t1", org: null, quota: null },
      ],
      keys: [
        { name: "kA", tenant: "t0" },
        { name: "kB", tenant: "t0" },
      ],
      budgets: [{ owner: { kind: "key", name: "kA" }, category: "login", amount: 1, period: "month" }],
      steps: [
        { kind: "send", requests: [{ method: "GET", path: "/things", credential: "kA", bodyBytes: 0, hangUp: false, origin: { status: 200, cost: null, delayMs: 0 } }] },
        { kind: "send", requests: [{ method: "POST", path: "/login", credential: "kA", bodyBytes: 3, hangUp: false, origin: { status: 500, cost: null, delayMs: 0 } }] },
      ],
    });
  });

  it("agrees on a burst after a budget refusal: a refusal the isolate remembers gives its rate-limit charge back before the next request is rate limited", async () => {
    // Seed 12345, run 191, shrunk: the model had every rate limit of a burst run before any budget was decided, but a
    // remembered refusal needs no object call, so it is decided (and its charge given back) in the same turn.
    await expectAgreement({
      config: { mode: "enforce", categories: { request: { limits: { key: [{ count: 2, window_s: 1 }] } } }, routes: [] },
      tenants: [
        { name: "t0", org: null, quota: null },
        { name: "t1", org: null, quota: null },
      ],
      keys: [
        { name: "kA", tenant: "t0" },
        { name: "kB", tenant: "t0" },
      ],
      budgets: [{ owner: { kind: "key", name: "kA" }, category: "request", amount: 1, period: "month" }],
      steps: [
        { kind: "send", requests: [{ method: "GET", path: "/things", credential: "kA", bodyBytes: 0, hangUp: false, origin: { status: 200, cost: null, delayMs: 0 } }] },
        { kind: "send", requests: [{ method: "GET", path: "/things", credential: "kA", bodyBytes: 0, hangUp: false, origin: { status: 200, cost: null, delayMs: 0 } }] },
        {
          kind: "send",
          requests: [
            { method: "GET", path: "/things", credential: "kA", bodyBytes: 0, hangUp: false, origin: { status: 200, cost: null, delayMs: 50 } },
            { method: "GET", path: "/things", credential: "kA", bodyBytes: 0, hangUp: false, origin: { status: 200, cost: null, delayMs: 190 } },
          ],
        },
      ],
    });
  });

  it("agrees on a budget spent again two days after its lease ended: the lease's unspent units go back", async () => {
    // Seed 12345, run 191, as found: the tenant's budget read one over (the lease's close came after the object had
    // dropped its row, a day after it ended).
    await expectAgreement({
      config: { mode: "enforce", categories: {}, routes: [] },
      tenants: [
        { name: "t0", org: null, quota: null },
        { name: "t1", org: null, quota: null },
      ],
      keys: [
        { name: "kA", tenant: "t0" },
        { name: "kB", tenant: "t0" },
      ],
      budgets: [{ owner: { kind: "tenant", name: "t0" }, category: "request", amount: 40, period: "none" }],
      steps: [
        { kind: "send", requests: [{ method: "GET", path: "/things", credential: "kA", bodyBytes: 0, hangUp: false, origin: { status: 200, cost: null, delayMs: 0 } }] },
        { kind: "send", requests: [{ method: "GET", path: "/things", credential: "kA", bodyBytes: 0, hangUp: false, origin: { status: 200, cost: null, delayMs: 0 } }] },
        { kind: "advance", ms: 2 * 86_400_000 },
        { kind: "send", requests: [{ method: "GET", path: "/things", credential: "kA", bodyBytes: 0, hangUp: false, origin: { status: 200, cost: null, delayMs: 0 } }] },
      ],
    });
  });

  it("agrees on credits topped up after a refusal: through the isolate at once, through another once its memory of the refusal ends", async () => {
    const get = { method: "GET", path: "/things", credential: "kA", bodyBytes: 0, hangUp: false, origin: { status: 200, cost: null, delayMs: 0 } } as const;
    await expectAgreement({
      config: { mode: "enforce", categories: {}, routes: [] },
      tenants: [
        { name: "t0", org: null, quota: null },
        { name: "t1", org: null, quota: null },
      ],
      keys: [
        { name: "kA", tenant: "t0" },
        { name: "kB", tenant: "t0" },
      ],
      budgets: [{ owner: { kind: "key", name: "kA" }, category: "request", amount: 1, period: "none" }],
      steps: [
        { kind: "send", requests: [get] },
        { kind: "send", requests: [get] },
        { kind: "topup", budget: 0, amount: 1 },
        { kind: "send", requests: [get] },
        { kind: "send", requests: [get] },
        { kind: "topup", budget: 0, amount: 1, elsewhere: true },
        { kind: "send", requests: [get] },
        { kind: "advance", ms: 5000 },
        { kind: "send", requests: [get] },
      ],
    });
  });

  it("agrees on a debt on a response-priced reserve of 0 while another policy stays the tightest: the answer lists the priced category's policies", async () => {
    // Seed 694254097, run 49, once the cases sent a priced route's requests more often (reduced): RateLimit-Policy kept the admission's list.
    await expectAgreement({
      config: {
        mode: "enforce",
        categories: { request: { limits: { tenant: [{ count: 7, window_s: 1, burst: 2 }] } }, tokens: { limits: { key: [{ count: 20, window_s: 2 }] } } },
        routes: [{ method: "POST", path: "/v1/chat", response_charge: { category: "tokens", header: "x-usage-total-tokens", reserve: 0 } }],
      },
      tenants: [
        { name: "t0", org: null, quota: null },
        { name: "t1", org: null, quota: null },
      ],
      keys: [
        { name: "kA", tenant: "t0" },
        { name: "kB", tenant: "t0" },
      ],
      budgets: [],
      steps: [{ kind: "send", requests: [{ method: "POST", path: "/v1/chat", credential: "kA", bodyBytes: 3, hangUp: false, origin: { status: 200, cost: 8, delayMs: 0 } }] }],
    });
  });

  it("agrees on two first uploads of one name at once: they hold the larger size and one object between them", async () => {
    // Found (seed 694254097) once the cases sent a route's request in bursts more often: the model counted each upload's growth.
    await expectAgreement({
      config: { mode: "enforce", categories: {}, routes: [{ method: "PUT", path: "/objects/:object", quota: "store" }] },
      tenants: [
        { name: "t0", org: null, quota: { bytes: { hard: 6 }, objects: { hard: 1 } } },
        { name: "t1", org: null, quota: null },
      ],
      keys: [
        { name: "kA", tenant: "t0" },
        { name: "kB", tenant: "t0" },
      ],
      budgets: [],
      steps: [
        {
          kind: "send",
          requests: [
            { method: "PUT", path: "/objects/a", credential: "kA", bodyBytes: 4, hangUp: false, origin: { status: 200, cost: null, delayMs: 190 } },
            { method: "PUT", path: "/objects/a", credential: "kA", bodyBytes: 6, hangUp: false, origin: { status: 200, cost: null, delayMs: 50 } },
          ],
        },
      ],
    });
  });

  it("agrees on a store route spelled with an escaped letter", async () => {
    await expectAgreement({
      config: { mode: "enforce", categories: { upload: { limits: { key: [{ count: 1, window_s: 60 }] } } }, routes: [{ method: "PUT", path: "/objects/:object", quota: "store", charges: { upload: 1 } }] },
      tenants: [
        { name: "t0", org: null, quota: { bytes: { hard: 10 } } },
        { name: "t1", org: null, quota: null },
      ],
      keys: [
        { name: "kA", tenant: "t0" },
        { name: "kB", tenant: "t0" },
      ],
      budgets: [],
      steps: [
        { kind: "send", requests: [{ method: "PUT", path: "/%6Fbjects/a", credential: "kA", bodyBytes: 4, hangUp: false, origin: { status: 200, cost: null, delayMs: 0 } }] },
        { kind: "send", requests: [{ method: "PUT", path: "//OBJECTS/b/", credential: "kA", bodyBytes: 4, hangUp: false, origin: { status: 200, cost: null, delayMs: 0 } }] },
      ],
    });
  });
});
