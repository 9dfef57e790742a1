// What the CLI sends, and its handling of answers the real gateway is hard
// to make give (several pages, repeated cursors, HTML errors, unknown
// shapes, a 204): run against a fake admin API that records each request and
// answers the shapes docs/design.md documents. Every command also runs
// against the real Worker: cli-gateway.test.ts, cli-operations.test.ts,
// cli-reconcile.test.ts.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type CliResult, jsonOut, runCli, tableRows } from "./cli-run";
import { type FakeAdmin, type FakeAnswer, problemAnswer, type Received, startFakeAdmin } from "./fake-admin";

const TOKEN = "fake-admin-token-0123456789abcdefghijkl";
let fake: FakeAdmin;
let route: (request: Received) => FakeAnswer = () => ({ body: {} });

beforeAll(async () => {
  fake = await startFakeAdmin((request) => route(request));
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  fake.received.length = 0;
});

function cli(...args: string[]): Promise<CliResult> {
  return runCli(args, { env: { TOLLGATE_URL: fake.url, TOLLGATE_ADMIN_TOKEN: TOKEN } });
}

function only(): Received {
  expect(fake.received).toHaveLength(1);
  return fake.received[0] as Received;
}

function expectRefused(result: CliResult, message: RegExp): void {
  expect(result.code, result.stderr).toBe(1);
  expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(result.stderr).toMatch(message);
  expect(result.stderr).not.toMatch(/\n\s+at /);
}

const TENANT_PAGES: Record<string, unknown> = {
  "": { tenants: [{ tenant: "acme", org: "bigco", created_at: "2026-01-01T00:00:00.000Z" }, { tenant: "beta", org: null }], next_cursor: "c1" },
  c1: { tenants: [{ tenant: "gamma", org: "bigco" }], next_cursor: null },
};

describe("the admin client", () => {
  it("sends the token as a Bearer header and asks for JSON", async () => {
    route = () => ({ body: { tenants: [], next_cursor: null } });
    expect((await cli("tenants", "ls")).code).toBe(0);
    expect(only().headers).toMatchObject({ authorization: `Bearer ${TOKEN}`, accept: "application/json" });
  });

  it("lets --url and --token override the environment", async () => {
    route = () => ({ body: { tenants: [], next_cursor: null } });
    const result = await runCli(["tenants", "ls", "--url", fake.url, "--token", "flag-token-0123456789abcdefghijklmnop"], {
      env: { TOLLGATE_URL: "http://127.0.0.1:9", TOLLGATE_ADMIN_TOKEN: TOKEN },
    });
    expect(result.code, result.stderr).toBe(0);
    expect(only().headers.authorization).toBe("Bearer flag-token-0123456789abcdefghijklmnop");
  });

  it("prints a problem's code, status and detail on one line and exits 1", async () => {
    route = () => problemAnswer(409, "org_in_use", "Org bigco is named by 2 tenants.\nMove them first.");
    const result = await cli("orgs", "rm", "bigco");
    expectRefused(result, /^error: org_in_use \(409\): Org bigco is named by 2 tenants\. Move them first\.\n$/);
    expect(result.stdout).toBe("");
  });

  it("describes a non-problem error without echoing its body", async () => {
    route = () => ({ status: 502, body: "<html><body>Bad gateway <script>x</script></body></html>", contentType: "text/html" });
    const result = await cli("tenants", "ls");
    expectRefused(result, /^error: http:\/\/127\.0\.0\.1:\d+ answered HTTP 502 without a problem\+json body: it does not look like a Tollgate admin API \(check TOLLGATE_URL or --url\)\n$/);
    expect(result.stderr).not.toContain("<html>");
  });

  it("refuses a list answer without its list rather than print nothing", async () => {
    route = () => ({ body: { items: [] } });
    expectRefused(await cli("blocks", "ls"), /is not answering as a Tollgate admin API does \(its answer has no "blocks" list\): check TOLLGATE_URL or --url/);
  });

  it("stops following a cursor that repeats", async () => {
    route = () => ({ body: { overrides: [], next_cursor: "same" } });
    expectRefused(await cli("overrides", "ls"), /bad next_cursor/);
    expect(fake.received).toHaveLength(2);
  });
});

describe("tenants (GET /tenants, org)", () => {
  it("ls follows next_cursor and prints every tenant with its org (--no-usage: no call per tenant)", async () => {
    route = (r) => ({ body: TENANT_PAGES[r.query.cursor ?? ""] });
    const table = await cli("tenants", "ls", "--no-usage");
    expect(table.code, table.stderr).toBe(0);
    expect(fake.received.map((r) => [r.method, r.path, r.query])).toEqual([
      ["GET", "/tenants", {}],
      ["GET", "/tenants", { cursor: "c1" }],
    ]);
    expect(table.stdout.split("\n")[0]).toMatch(/^TENANT\s+ORG\s+QUOTA\s+UPDATED$/);
    expect(tableRows(table.stdout).map((row) => row.slice(0, 2))).toEqual([["acme", "bigco"], ["beta", "-"], ["gamma", "bigco"]]);

    const json = jsonOut<{ tenants: Array<{ tenant: string }>; next_cursor: null }>(await cli("tenants", "ls", "--json", "--no-usage"));
    expect(json.tenants.map((t) => t.tenant)).toEqual(["acme", "beta", "gamma"]);
    expect(json.next_cursor).toBeNull();
  });

  it("put --org asks whether the tenant exists, then sends the org with the limits and quota", async () => {
    route = (r) => (r.method === "GET" ? { status: 404, body: { code: "not_found", detail: "No tenant named acme." } } : { status: 201, body: { tenant: "acme", org: "bigco" } });
    const result = await cli("tenants", "put", "acme", "--org", "bigco", "--quota", '{"bytes":{"hard":1000}}');
    expect(result).toMatchObject({ code: 0, stdout: "Created tenant acme.\n" });
    expect(fake.received.map((r) => [r.method, r.path])).toEqual([["GET", "/tenants/acme"], ["PUT", "/tenants/acme"]]);
    expect(fake.received[1]).toMatchObject({ method: "PUT", path: "/tenants/acme", body: { org: "bigco", quota: { bytes: { hard: 1000 } } } });
  });

  it("says 'No tenants.' for an empty list", async () => {
    route = () => ({ body: { tenants: [], next_cursor: null } });
    expect((await cli("tenants", "ls")).stdout).toBe("No tenants.\n");
  });
});

describe("overrides (GET /overrides, expiry and reason)", () => {
  it("ls prints each override with active, expiry and reason", async () => {
    route = () => ({
      body: {
        overrides: [
          { caller_key: "key:k7m2q9x4a1bc", limits: { request: [{ count: 200, window_s: 60 }] }, active: true, expires_at: "2030-01-01T00:00:00.000Z", reason: "launch day" },
          { caller_key: "ip:192.0.2.7", limits: {}, active: false, expires_at: "2020-01-01T00:00:00.000Z", reason: null },
        ],
        next_cursor: null,
      },
    });
    const result = await cli("overrides", "ls");
    expect(result.code, result.stderr).toBe(0);
    expect(only()).toMatchObject({ method: "GET", path: "/overrides" });
    expect(tableRows(result.stdout)).toEqual([
      ["key:k7m2q9x4a1bc", "true", "-", "2030-01-01T00:00:00.000Z", "launch day", '{"request":[{"count":200,"window_s":60}]}'],
      ["ip:192.0.2.7", "false", "-", "2020-01-01T00:00:00.000Z", "-", "{}"],
    ]);
  });

  it("put --expires-in 1h --reason sends expires_at an hour ahead and the reason", async () => {
    route = () => ({ status: 201, body: { caller_key: "key:k7m2q9x4a1bc" } });
    const beforeMs = Date.now();
    const result = await cli("overrides", "put", "key:k7m2q9x4a1bc", "--limits", '{"request":[{"count":200,"window_s":60}]}', "--expires-in", "1h", "--reason", "launch day");
    const afterMs = Date.now();
    expect(result).toMatchObject({ code: 0, stdout: "Created the override for key:k7m2q9x4a1bc.\n" });
    const { body } = only() as { body: { limits: unknown; expires_at: string; reason: string } };
    expect(body.limits).toEqual({ request: [{ count: 200, window_s: 60 }] });
    expect(body.reason).toBe("launch day");
    const expiresMs = Date.parse(body.expires_at);
    expect(expiresMs).toBeGreaterThanOrEqual(beforeMs + 3_600_000);
    expect(expiresMs).toBeLessThanOrEqual(afterMs + 3_600_000);
  });
});

describe("--shadow and the shadow traffic (trying a policy before it is enforced)", () => {
  it("tenants set --shadow marks every limit it sends as shadow, and needs --limits", async () => {
    route = () => ({ body: { tenant: "acme" } });
    const result = await cli("tenants", "set", "acme", "--limits", '{"request":{"key":[{"count":20,"window_s":60}],"tenant":[{"count":500,"window_s":60}]}}', "--shadow");
    expect(result.code, result.stderr).toBe(0);
    expect(only()).toMatchObject({ method: "PUT", path: "/tenants/acme/limits", body: { limits: { request: { key: [{ count: 20, window_s: 60, shadow: true }], tenant: [{ count: 500, window_s: 60, shadow: true }] } } } });
    const bare = await cli("tenants", "set", "acme", "--shadow");
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain("--shadow marks the limits of --limits; give --limits");
  });

  it("keys mint --shadow marks the key's limits as shadow", async () => {
    route = () => ({ status: 201, body: { id: "k7m2q9x4a1bc", key: "tg_k7m2q9x4a1bc_secret", tenant: "acme", name: "ci" } });
    expect((await cli("keys", "mint", "acme", "--name", "ci", "--limits", '{"request":[{"count":5,"window_s":1}]}', "--shadow")).code).toBe(0);
    expect(only()).toMatchObject({ body: { name: "ci", limits: { request: [{ count: 5, window_s: 1, shadow: true }] } } });
  });

  it("overrides put --shadow sends shadow: true and says it made a shadow override", async () => {
    route = (r) => ({ status: 201, body: { caller_key: "key:k7m2q9x4a1bc", ...(r.body as object) } });
    const result = await cli("overrides", "put", "key:k7m2q9x4a1bc", "--limits", '{"request":[{"count":1,"window_s":60}]}', "--shadow");
    expect(result).toMatchObject({ code: 0, stdout: "Created the shadow override for key:k7m2q9x4a1bc.\n" });
    expect(only()).toMatchObject({ method: "PUT", path: "/overrides/key:k7m2q9x4a1bc", body: { limits: { request: [{ count: 1, window_s: 60 }] }, shadow: true } });
  });

  it("blocks add --shadow sends shadow: true; get shows a penalty's policy", async () => {
    route = (r) => ({ status: 201, body: { id: 9, ...(r.body as object) } });
    expect(await cli("blocks", "add", "net:198.51.100.0/24", "--shadow")).toMatchObject({ code: 0, stdout: "Shadow-blocked net:198.51.100.0/24 (block 9).\n" });
    expect(only()).toMatchObject({ method: "POST", path: "/blocks", body: { target: "net:198.51.100.0/24", shadow: true } });
    fake.received.length = 0;
    route = () => ({ body: { id: 12, target: "ip:192.0.2.7", active: true, shadow: false, penalty: "request-ip-60s", expires_at: "2030-01-01T00:00:00.000Z", reason: "penalty:request-ip-60s", created_at: "2029-12-31T23:55:00.000Z" } });
    const shown = await cli("blocks", "get", "12");
    expect(shown.stdout).toMatch(/^penalty\s+request-ip-60s$/m);
  });

  it("budgets put --shadow sends shadow: true, and get marks the budget's period as shadow", async () => {
    route = (r) => ({ status: 201, body: { owner: "tenant:acme", category: "tokens", period: "month", amount: 500000, used: 0, remaining: 500000, shadow: true, ...(r.body as object) } });
    const put = await cli("budgets", "put", "tenant:acme", "tokens", "--amount", "500000", "--period", "month", "--shadow");
    expect(put).toMatchObject({ code: 0, stdout: "Created the shadow tokens budget of tenant:acme: 500,000 per month.\n" });
    expect(only()).toMatchObject({ method: "PUT", path: "/tenants/acme/budgets/tokens", body: { amount: 500000, period: "month", shadow: true } });
    fake.received.length = 0;
    route = () => ({ body: { owner: "tenant:acme", category: "tokens", period: "month", amount: 500000, used: 10, remaining: 499990, thresholds: [0.8, 1], shadow: true, period_start: null, resets_at: null } });
    expect((await cli("budgets", "get", "tenant:acme", "tokens")).stdout).toMatch(/^period\s+month \(shadow\)$/m);
  });

  it("shadow lists each shadow policy with what it would have refused and whom", async () => {
    route = () => ({
      body: {
        minutes: 15,
        since: "2030-01-01T00:00:00.000Z",
        policies: [
          { policy: "request-key-60s", would_refuse: 4, decisions: { rate_limited: 4 }, tenants: { acme: 4 }, callers: [{ caller: "key:k7m2q9x4a1bc", tenant: "acme", would_refuse: 3, overcount_at_most: 0, explain: "/_tollgate/admin/v1/callers/key%3Ak7m2q9x4a1bc" }, { caller: "key:b8n3r0y5b2cd", tenant: "acme", would_refuse: 1, overcount_at_most: 0, explain: "" }] },
        ],
      },
    });
    const result = await cli("shadow", "--minutes", "15");
    expect(result.code, result.stderr).toBe(0);
    expect(only()).toMatchObject({ method: "GET", path: "/traffic/shadow", query: { minutes: "15" } });
    expect(tableRows(result.stdout)).toEqual([["request-key-60s", "4", "acme 4", "key:k7m2q9x4a1bc 3, key:b8n3r0y5b2cd 1"]]);
    route = () => ({ body: { minutes: 60, since: "2030-01-01T00:00:00.000Z", policies: [] } });
    expect((await cli("shadow")).stdout).toBe("No shadow policy would have refused anything in the last 60 minute(s).\n");
  });

  it("explain marks a shadow limit and shows a penalty", async () => {
    route = () => ({
      body: {
        caller: "key:k7m2q9x4a1bc",
        tenant: "acme",
        limits: [
          { category: "request", subject: "key", source: "tenant", scope: "isolate", limit: { count: 100, window_s: 60 }, remaining: 99, reset_ms: 600 },
          { category: "request", subject: "key", source: "override", scope: "isolate", shadow: true, limit: { count: 5, window_s: 60, penalty: { after: 3, within_s: 60, block_s: 300 } }, remaining: 4, reset_ms: 12000 },
        ],
        override: { limits: {}, active: true, shadow: true },
        block: { id: 4, target: "key:k7m2q9x4a1bc", active: true, shadow: false, penalty: "request-key-60s", expires_at: "2030-01-01T00:05:00.000Z" },
      },
    });
    const result = await cli("explain", "key:k7m2q9x4a1bc");
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^request\s+key\s+override\s+isolate\s+5\/60s penalty 3 in 60s: block 300s \(shadow\)\s+4\s+12000$/m);
    expect(result.stdout).toMatch(/^block\s+block 4 of key:k7m2q9x4a1bc \(active\) penalty of request-key-60s until 2030-01-01T00:05:00.000Z$/m);
  });
});

describe("blocks (POST/GET /blocks, DELETE /blocks/{id})", () => {
  it("add sends the target, expiry and reason and prints the new id", async () => {
    route = (r) => ({ status: 201, body: { id: "blk1", ...(r.body as object) } });
    const result = await cli("blocks", "add", "net:203.0.113.0/24", "--expires-at", "2030-01-01T00:00:00Z", "--reason", "credential stuffing");
    expect(result).toMatchObject({ code: 0, stdout: "Blocked net:203.0.113.0/24 (block blk1, until 2030-01-01T00:00:00Z).\n" });
    expect(only()).toMatchObject({
      method: "POST",
      path: "/blocks",
      body: { target: "net:203.0.113.0/24", expires_at: "2030-01-01T00:00:00Z", reason: "credential stuffing" },
    });
  });

  it("add --json prints the API's answer as is", async () => {
    const answer = { id: "blk2", target: "ip:192.0.2.9", expires_at: null, reason: null, created_at: "2026-01-01T00:00:00.000Z" };
    route = () => ({ status: 201, body: answer });
    expect(jsonOut(await cli("blocks", "add", "ip:192.0.2.9", "--json"))).toEqual(answer);
  });

  it("ls lists every page", async () => {
    route = (r) =>
      r.query.cursor === undefined
        ? { body: { blocks: [{ id: "blk1", target: "tenant:acme", active: true }], next_cursor: "n" } }
        : { body: { blocks: [{ id: "blk2", target: "jwt:ab12", active: false }], next_cursor: null } };
    const result = await cli("blocks", "ls");
    expect(tableRows(result.stdout).map((row) => row.slice(0, 3))).toEqual([["blk1", "tenant:acme", "true"], ["blk2", "jwt:ab12", "false"]]);
  });

  it("rm takes a 204 with no body as done", async () => {
    route = () => ({ status: 204, body: "" });
    expect(await cli("blocks", "rm", "9")).toMatchObject({ code: 0, stdout: "Removed block 9.\n" });
  });

  it("rm deletes by id", async () => {
    route = () => ({ body: { id: 1, deleted: true } });
    expect(await cli("blocks", "rm", "1")).toMatchObject({ code: 0, stdout: "Removed block 1.\n" });
    expect(only()).toMatchObject({ method: "DELETE", path: "/blocks/1" });
  });

  /** Two pages of blocks; `net:198.51.100.0/24` is blocked twice (as an older gateway could hold it). */
  function blockPages(r: Received): FakeAnswer {
    if (r.method === "DELETE") {
      const id = Number(r.path.slice("/blocks/".length));
      return { body: { id, target: id === 4 ? "key:k7m2q9x4a1bc" : "net:198.51.100.0/24", deleted: true } };
    }
    return r.query.cursor === undefined
      ? { body: { blocks: [{ id: 3, target: "net:198.51.100.0/24", active: true }, { id: 4, target: "key:k7m2q9x4a1bc", active: true }], next_cursor: "n" } }
      : { body: { blocks: [{ id: 8, target: "net:198.51.100.0/24", active: false }], next_cursor: null } };
  }

  it("rm takes a target: it finds the block with that target on every page and removes it by id", async () => {
    route = blockPages;
    expect(await cli("blocks", "rm", "key:k7m2q9x4a1bc")).toMatchObject({ code: 0, stdout: "Removed block 4 (key:k7m2q9x4a1bc).\n" });
    expect(fake.received.map((r) => `${r.method} ${r.path}${r.query.cursor === undefined ? "" : `?cursor=${r.query.cursor}`}`)).toEqual(["GET /blocks", "GET /blocks?cursor=n", "DELETE /blocks/4"]);
  });

  it("rm of a target blocked more than once removes every such block and says how many", async () => {
    route = blockPages;
    expect(await cli("blocks", "rm", "net:198.51.100.0/24")).toMatchObject({ code: 0, stdout: "2 blocks had the target net:198.51.100.0/24; removed all of them: 3, 8.\n" });
    expect(fake.received.filter((r) => r.method === "DELETE").map((r) => r.path)).toEqual(["/blocks/3", "/blocks/8"]);
    fake.received.length = 0;
    expect(jsonOut(await cli("blocks", "rm", "net:198.51.100.0/24", "--json"))).toEqual({ blocks: [{ id: 3, target: "net:198.51.100.0/24", deleted: true }, { id: 8, target: "net:198.51.100.0/24", deleted: true }] });
  });

  it("rm of a target no block has exits 1 and points at `blocks ls`; anything else is a usage error", async () => {
    route = blockPages;
    const none = await cli("blocks", "rm", "ip:192.0.2.1");
    expectRefused(none, /^error: no block has the target ip:192\.0\.2\.1: run `tollgate blocks ls` to see every block with its id and target\n$/);
    expect(fake.received.some((r) => r.method === "DELETE")).toBe(false);
    fake.received.length = 0;
    const junk = await cli("blocks", "rm", "blk1");
    expect(junk.code).toBe(2);
    expect(junk.stderr).toMatch(/expected a block id \(a number, as `tollgate blocks ls` shows it\) or a target such as ip:203\.0\.113\.7, not 'blk1'/);
    expect(fake.received).toEqual([]);
  });
});

describe("orgs (PUT/GET/DELETE /orgs/{org}, GET /orgs)", () => {
  it("put sends the quota, get and ls read, rm deletes", async () => {
    route = (r) => {
      if (r.method === "PUT") return { status: 201, body: { org: "bigco", ...(r.body as object) } };
      if (r.path === "/orgs") return { body: { orgs: [{ org: "bigco", quota: { bytes: { hard: 5000 } } }], next_cursor: null } };
      if (r.method === "GET") return { body: { org: "bigco", quota: { bytes: { hard: 5000 } }, usage: { bytes: 1200, objects: 3 } } };
      return { body: { org: "bigco", deleted: true } };
    };
    expect(await cli("orgs", "put", "bigco", "--quota", '{"bytes":{"hard":5000}}')).toMatchObject({ code: 0, stdout: "Created org bigco.\n" });
    expect(fake.received[0]).toMatchObject({ method: "PUT", path: "/orgs/bigco", body: { quota: { bytes: { hard: 5000 } } } });

    const shown = await cli("orgs", "get", "bigco");
    expect(shown.stdout).toMatch(/^usage\s+\{"bytes":1200,"objects":3\}$/m);
    expect(jsonOut(await cli("orgs", "get", "bigco", "--json"))).toMatchObject({ usage: { bytes: 1200 } });

    expect(tableRows((await cli("orgs", "ls")).stdout)[0]?.slice(0, 3)).toEqual(["bigco", "-", '{"bytes":{"hard":5000}}']);
    expect(await cli("orgs", "rm", "bigco")).toMatchObject({ code: 0, stdout: "Deleted org bigco.\n" });
    expect(fake.received.map((r) => `${r.method} ${r.path}`)).toEqual(["PUT /orgs/bigco", "GET /orgs/bigco", "GET /orgs/bigco", "GET /orgs", "DELETE /orgs/bigco"]);
  });
});

describe("explain (GET /callers/{caller_key})", () => {
  const EXPLAINED = {
    caller: "key:k7m2q9x4a1bc",
    tenant: "acme",
    limits: [
      { category: "request", subject: "key", source: "tenant", scope: "isolate", limit: { count: 7, window_s: 60 }, remaining: 5, reset_ms: 17143 },
      { category: "upload", subject: "tenant", source: "builtin", scope: "global", limit: { count: 10, window_s: 1, burst: 20 }, remaining: 20, reset_ms: 0 },
    ],
    override: null,
    block: null,
  };

  it("prints each limit with its source, scope and state", async () => {
    route = () => ({ body: EXPLAINED });
    const result = await cli("explain", "key:k7m2q9x4a1bc");
    expect(result.code, result.stderr).toBe(0);
    expect(only()).toMatchObject({ method: "GET", path: "/callers/key:k7m2q9x4a1bc" });
    expect(result.stdout).toMatch(/^tenant\s+acme$/m);
    expect(result.stdout).toMatch(/^override\s+-$/m);
    expect(result.stdout).toMatch(/^CATEGORY\s+SUBJECT\s+SOURCE\s+SCOPE\s+LIMIT\s+REMAINING\s+RESET MS$/m);
    expect(result.stdout).toMatch(/^request\s+key\s+tenant\s+isolate\s+7\/60s\s+5\s+17143$/m);
    expect(result.stdout).toMatch(/^upload\s+tenant\s+builtin\s+global\s+10\/1s burst 20\s+20\s+0$/m);
    expect(jsonOut(await cli("explain", "key:k7m2q9x4a1bc", "--json"))).toEqual(EXPLAINED);
    expect(result.stdout).not.toContain("charge_on_status");
  });

  it("shows a limit's delay_max_ms and the routes charged only on the origin's status", async () => {
    const held = {
      ...EXPLAINED,
      limits: [{ category: "request", subject: "key", source: "tenant", scope: "isolate", limit: { count: 5, window_s: 1, delay_max_ms: 750 }, remaining: 5, reset_ms: 0 }],
      status_charges: [{ route: "POST /login", charges: { login_failure: 1 }, charge_on_status: ["4xx", 500] }],
    };
    route = () => ({ body: held });
    const result = await cli("explain", "key:k7m2q9x4a1bc");
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^request\s+key\s+tenant\s+isolate\s+5\/1s holds 750ms\s+5\s+0$/m);
    expect(result.stdout).toContain("Charged only when the origin's status matches (charge_on_status):\n");
    expect(result.stdout).toMatch(/^ROUTE\s+CHARGES\s+ON STATUS$/m);
    expect(result.stdout).toMatch(/^POST \/login\s+login_failure 1\s+4xx, 500$/m);
  });

  it("keeps an IPv6 /64 caller as one path segment with its slash", async () => {
    route = () => ({ body: { ...EXPLAINED, caller: "ip:2001:db8:1:2::/64" } });
    expect((await cli("explain", "ip:2001:db8:1:2::/64")).code).toBe(0);
    expect(only().path).toBe("/callers/ip:2001:db8:1:2::/64");
  });

  it("encodes anything else that could leave the segment", async () => {
    route = () => ({ body: EXPLAINED });
    await cli("explain", "tenant:a/../../tenants?x=#");
    expect(only().path).toBe("/callers/tenant:a%2F..%2F..%2Ftenants%3Fx%3D%23");
  });
});

describe("usage reconcile (POST /usage/reconcile[?apply=true]), paging and statuses", () => {
  // The real answer's shape (src/admin/reconcile.ts); cli-reconcile.test.ts runs it against the Worker.
  const page = (tenants: unknown[], extra: Record<string, unknown> = {}) => ({
    body: { metric: "bytes_stored", apply: false, checked: 100, drifting: tenants.length, tenants, next_cursor: null, ...extra },
  });
  const drift = (tenant: string, status = "drift") => ({ tenant, status, metered_bytes: 900, quota_bytes: 1000, drift_bytes: 100 });

  it("follows next_cursor across pages, asking each with the same apply and tenant, and folds the pages into one answer", async () => {
    route = (r) =>
      r.query.cursor === undefined
        ? page([drift("acme", "adjusted")], { apply: true, next_cursor: "acme" })
        : page([drift("zeta", "adjusted")], { apply: true, checked: 7 });
    const result = await cli("usage", "reconcile", "--apply", "--json");
    expect(result.code, result.stderr).toBe(0);
    expect(fake.received.map((r) => [r.method, r.path, r.query])).toEqual([
      ["POST", "/usage/reconcile", { apply: "true" }],
      ["POST", "/usage/reconcile", { apply: "true", cursor: "acme" }],
    ]);
    expect(jsonOut(result)).toEqual({
      metric: "bytes_stored",
      apply: true,
      checked: 107,
      drifting: 2,
      tenants: [drift("acme", "adjusted"), drift("zeta", "adjusted")],
      next_cursor: null,
    });
  });

  it("lists a recent drift, says to wait and run again, and exits 1", async () => {
    route = () => page([{ ...drift("acme", "recent"), wait_s: 42 }]);
    const result = await cli("usage", "reconcile");
    expectRefused(result, /^error: 1 tenant\(s\) stored or deleted bytes within the metering flush interval, so their drift may close by itself and was not counted as drift: wait 42 s and run again\n$/);
  });

  it("exits 1 when a tenant changed while checked or its quota object did not answer, even with --apply", async () => {
    route = () => page([drift("acme", "changed"), { tenant: "beta", status: "unavailable", metered_bytes: 5, quota_bytes: null, drift_bytes: null }], { apply: true, drifting: 1 });
    const result = await cli("usage", "reconcile", "--apply");
    expectRefused(result, /^error: 1 tenant\(s\) metered more while checked and were not adjusted; run it again; 1 tenant\(s\) could not be checked \(quota object unavailable\); run it again\n$/);
    expect(tableRows(result.stdout).slice(0, 2)).toEqual([
      ["acme", "changed", "900", "1000", "100"],
      ["beta", "unavailable", "5", "-", "-"],
    ]);
  });

  it("refuses an answer of another shape instead of reporting no drift", async () => {
    route = () => ({ body: { applied: false, drift: [] } });
    expectRefused(await cli("usage", "reconcile"), /the answer has no "checked", "drifting" and "tenants"/);
    route = () => page([{ tenant: "acme", status: "fine" }]);
    expectRefused(await cli("usage", "reconcile"), /a status this CLI does not know/);
  });
});
