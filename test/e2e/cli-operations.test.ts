// The CLI's caller and org commands against the real Worker under `wrangler
// dev`: tenants ls (over several real pages), overrides ls/put with
// --expires-in and --reason (one that expires while the test watches),
// blocks ls/add/rm, orgs ls/get/put/rm, explain and reset — tables, --json,
// exit codes 0, 1 and 2, and the gateway's behaviour really changed (a
// blocked key gets 403, an override's limit applies until it expires).
import { describe, expect, it } from "vitest";
import { type CliResult, gatewayEnv, jsonOut, runCli, tableRows, tollgate } from "./cli-run";
import { adminCall, gateway, unique } from "./fixture";

function expectRefused(result: CliResult, message: RegExp): void {
  expect(result.code, result.stderr).toBe(1);
  expect(result.stdout).toBe("");
  expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(result.stderr).toMatch(message);
  expect(result.stderr).not.toMatch(/\n\s+at /);
}

function ok(result: CliResult): CliResult {
  expect(result.code, result.stderr).toBe(0);
  return result;
}

/** A tenant (optional body) and one key of it. */
async function tenantWithKey(body: Record<string, unknown> = {}): Promise<{ tenant: string; id: string; key: string }> {
  const tenant = unique("ops");
  expect((await adminCall("PUT", `/tenants/${tenant}`, body)).status).toBe(201);
  const minted = (await adminCall("POST", `/tenants/${tenant}/keys`, { name: "ops" })).body as { id: string; key: string };
  return { tenant, id: minted.id, key: minted.key };
}

function keyed(key: string, path = "/ops", init: RequestInit = {}): Promise<Response> {
  return fetch(`${gateway().gatewayUrl}${path}`, { ...init, headers: { authorization: `Bearer ${key}`, ...init.headers } });
}

/** Polls `check` every 200 ms until it is true or the deadline passes. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadlineMs = Date.now() + timeoutMs;
  while (Date.now() < deadlineMs) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`);
}

describe("tollgate tenants ls", () => {
  it("follows the gateway's pages (50 a page) and lists every tenant once, in slug order, with its org", async () => {
    const prefix = unique("ls");
    const org = unique("ls-org");
    expect((await adminCall("PUT", `/orgs/${org}`, {})).status).toBe(201);
    const slugs = Array.from({ length: 55 }, (_, i) => `${prefix}-${String(i).padStart(2, "0")}`);
    for (let i = 0; i < slugs.length; i += 11) {
      await Promise.all(slugs.slice(i, i + 11).map(async (slug, j) => expect((await adminCall("PUT", `/tenants/${slug}`, (i + j) % 2 === 0 ? { org } : {})).status).toBe(201)));
    }

    const listed = jsonOut<{ tenants: Array<{ tenant: string; org: string | null }>; next_cursor: null }>(ok(await tollgate("tenants", "ls", "--json")));
    expect(listed.next_cursor).toBeNull();
    const all = listed.tenants.map((t) => t.tenant);
    expect(new Set(all).size).toBe(all.length);
    expect([...all].sort()).toEqual(all);
    expect(listed.tenants.length).toBeGreaterThan(50);
    const mine = listed.tenants.filter((t) => t.tenant.startsWith(`${prefix}-`));
    expect(mine.map((t) => t.tenant)).toEqual(slugs);
    expect(mine.map((t) => t.org)).toEqual(slugs.map((_, i) => (i % 2 === 0 ? org : null)));

    // --no-usage: one call per page, not one per tenant of the whole shared database (cli-operator.test.ts checks the usage columns).
    const table = ok(await tollgate("tenants", "ls", "--no-usage"));
    expect(table.stdout.split("\n")[0]).toMatch(/^TENANT\s+ORG\s+QUOTA\s+UPDATED$/);
    const rows = tableRows(table.stdout).filter((row) => row[0]?.startsWith(`${prefix}-`));
    expect(rows.map((row) => row.slice(0, 2))).toEqual(slugs.map((slug, i) => [slug, i % 2 === 0 ? org : "-"]));
  });
});

describe("tollgate overrides ls and put --expires-in --reason", () => {
  it("sets a time-boxed override the gateway applies, lists it active, and shows it inactive once it expired", async () => {
    const { id, key } = await tenantWithKey({ limits: { request: { key: [{ count: 100, window_s: 60 }] } } });
    const caller = `key:${id}`;
    const beforeMs = Date.now();
    const put = jsonOut<{ caller_key: string; active: boolean; expires_at: string; reason: string }>(
      ok(await tollgate("overrides", "put", caller, "--limits", '{"request":[{"count":1,"window_s":60}]}', "--expires-in", "15s", "--reason", "ticket 4711", "--json")),
    );
    expect(put).toMatchObject({ caller_key: caller, active: true, reason: "ticket 4711" });
    const expiresMs = Date.parse(put.expires_at);
    expect(expiresMs).toBeGreaterThanOrEqual(beforeMs + 15_000);
    expect(expiresMs).toBeLessThanOrEqual(Date.now() + 15_000);

    // The override's 1 a minute applies while active (15 s leaves room for a slow machine)…
    expect((await keyed(key)).status).toBe(200);
    expect((await keyed(key)).status).toBe(429);
    const table = ok(await tollgate("overrides", "ls"));
    expect(table.stdout.split("\n")[0]).toMatch(/^CALLER KEY\s+ACTIVE\s+SHADOW\s+EXPIRES\s+REASON\s+LIMITS$/);
    expect(tableRows(table.stdout).find((row) => row[0] === caller)).toEqual([caller, "true", "false", put.expires_at, "ticket 4711", '{"request":[{"count":1,"window_s":60}]}']);
    const shown = ok(await tollgate("explain", caller));
    expect(shown.stdout).toMatch(/^override\s+\{"request":\[\{"count":1,"window_s":60\}\]\} \(active\) until \S+ reason: ticket 4711$/m);
    expect(shown.stdout).toMatch(/^request\s+key\s+override\s+isolate\s+1\/60s\s+0\s+\d+$/m);

    // …and stops applying once expired: the tenant's 100 a minute again.
    const listedInactive = async () => {
      const { overrides } = jsonOut<{ overrides: Array<{ caller_key: string; active: boolean }> }>(await tollgate("overrides", "ls", "--json"));
      return overrides.find((o) => o.caller_key === caller)?.active === false;
    };
    await until("the override listed inactive", listedInactive, 40_000);
    expect((await keyed(key)).status).toBe(200);
    const after = ok(await tollgate("explain", caller));
    expect(after.stdout).toMatch(/^override\s+.* \(expired\) until /m);
    expect(after.stdout).toMatch(/^request\s+key\s+tenant\s+isolate\s+100\/60s\s+\d+\s+\d+$/m);
  }, 90_000);

  it("exits 1 with the API's refusal for a tenant: caller and for an expiry in the past", async () => {
    expectRefused(await tollgate("overrides", "put", "tenant:acme", "--limits", "{}"), /^error: invalid_request \(400\): .*tenant: overrides are not supported/);
    expectRefused(await tollgate("overrides", "put", "ip:192.0.2.1", "--limits", "{}", "--expires-at", "2020-01-01T00:00:00Z"), /^error: invalid_request \(400\): expires_at: must be in the future/);
  });
});

describe("tollgate blocks ls|add|rm", () => {
  it("blocks a key so the gateway answers 403 blocked, lists the block, and removes it so the key works again", async () => {
    const { tenant, id, key } = await tenantWithKey();
    expect((await keyed(key)).status).toBe(200);

    const added = ok(await tollgate("blocks", "add", `key:${id}`, "--reason", "abuse report 12"));
    const blockId = /^Blocked key:\S+ \(block (\d+)\)\.\n$/.exec(added.stdout)?.[1];
    expect(blockId, added.stdout).toBeDefined();
    const refused = await keyed(key);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: "blocked" });

    const timed = jsonOut<{ id: number; target: string; active: boolean; expires_at: string }>(ok(await tollgate("blocks", "add", `tenant:${tenant}`, "--expires-in", "1h", "--json")));
    expect(timed).toMatchObject({ target: `tenant:${tenant}`, active: true });
    expect(Date.parse(timed.expires_at) - Date.now()).toBeGreaterThan(3_500_000);

    const table = ok(await tollgate("blocks", "ls"));
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+TARGET\s+ACTIVE\s+SHADOW\s+EXPIRES\s+REASON\s+CREATED$/);
    const rows = tableRows(table.stdout);
    expect(rows.find((row) => row[0] === blockId)?.slice(0, 6)).toEqual([blockId, `key:${id}`, "true", "false", "-", "abuse report 12"]);
    expect(rows.find((row) => row[0] === String(timed.id))?.slice(0, 5)).toEqual([String(timed.id), `tenant:${tenant}`, "true", "false", timed.expires_at]);
    const listed = jsonOut<{ blocks: Array<{ id: number }> }>(ok(await tollgate("blocks", "ls", "--json")));
    expect(listed.blocks.map((b) => b.id)).toEqual(expect.arrayContaining([Number(blockId), timed.id]));

    // Explain names the block that refuses the caller: its own before its tenant's.
    expect(ok(await tollgate("explain", `key:${id}`)).stdout).toMatch(new RegExp(`^block\\s+block ${blockId} of key:${id} \\(active\\) reason: abuse report 12$`, "m"));

    // By its target, as `blocks add` took it (issue 40: this was "id: is not a block id").
    expect(ok(await tollgate("blocks", "rm", `key:${id}`)).stdout).toBe(`Removed block ${blockId} (key:${id}).\n`);
    expect((await keyed(key)).status).toBe(403); // the tenant's block still applies
    expect(jsonOut(ok(await tollgate("blocks", "rm", String(timed.id), "--json")))).toEqual({ id: timed.id, target: `tenant:${tenant}`, deleted: true });
    expect((await keyed(key)).status).toBe(200);
    expectRefused(await tollgate("blocks", "rm", String(timed.id)), /^error: not_found \(404\): No block with id \d+\.\n$/);
  });

  it("matches an address against a network block in explain, and refuses a bad target with exit 1 naming the field", async () => {
    const third = 1 + Math.floor(Math.random() * 250);
    const added = jsonOut<{ id: number; target: string }>(ok(await tollgate("blocks", "add", `net:198.51.${third}.77/24`, "--expires-in", "10m", "--reason", "stuffing", "--json")));
    expect(added.target).toBe(`net:198.51.${third}.0/24`);
    const explained = jsonOut<{ block: { id: number; target: string } | null }>(ok(await tollgate("explain", `ip:198.51.${third}.9`, "--json")));
    expect(explained.block).toMatchObject({ id: added.id, target: added.target });
    ok(await tollgate("blocks", "rm", String(added.id)));
    expectRefused(await tollgate("blocks", "add", "host:example.com"), /^error: invalid_request \(400\): target: /);
  });

  it("exits 2 without a target, sending nothing", async () => {
    const result = await tollgate("blocks", "add");
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: missing required argument 'target'\n$/);
  });
});

describe("tollgate orgs ls|get|put|rm", () => {
  it("creates an org, puts a tenant in it, shows the tenant's stored bytes in the org, refuses to delete it while named, then deletes it", async () => {
    const org = unique("org");
    const created = jsonOut(ok(await tollgate("orgs", "put", org, "--quota", '{"bytes":{"soft":800,"hard":1000}}', "--json")));
    expect(created).toMatchObject({ org, quota: { bytes: { soft: 800, hard: 1000 } } });
    expect(ok(await tollgate("orgs", "put", org, "--quota", '{"bytes":{"hard":2000}}')).stdout).toBe(`Replaced org ${org}.\n`);

    const tenant = unique("org-t");
    expect(ok(await tollgate("tenants", "put", tenant, "--org", org)).stdout).toBe(`Created tenant ${tenant}.\n`);
    const { key } = (await adminCall("POST", `/tenants/${tenant}/keys`, { name: "org" })).body as { key: string };
    const upload = await keyed(key, `/objects/${unique("o")}`, { method: "PUT", body: new Uint8Array(300) });
    expect(upload.status).toBe(200);

    const shown = ok(await tollgate("orgs", "get", org));
    expect(shown.stdout).toMatch(new RegExp(`^org\\s+${org}$`, "m"));
    expect(shown.stdout).toMatch(/^quota\s+\{"bytes":\{"hard":2000\}\}$/m);
    expect(shown.stdout).toMatch(/^usage\s+\{"bytes":300,"objects":1,"reserved_bytes":0\}$/m);
    expect(shown.stdout).toMatch(/^tenant count\s+1$/m);
    expect(shown.stdout).toMatch(new RegExp(`^tenants\\s+${tenant}$`, "m"));
    expect(jsonOut(ok(await tollgate("orgs", "get", org, "--json")))).toMatchObject({ org, tenant_count: 1, tenants: [tenant], usage: { bytes: 300, objects: 1 } });

    const table = ok(await tollgate("orgs", "ls"));
    expect(table.stdout.split("\n")[0]).toMatch(/^ORG\s+TENANTS\s+QUOTA\s+CREATED\s+UPDATED$/);
    expect(tableRows(table.stdout).find((row) => row[0] === org)?.slice(0, 3)).toEqual([org, "1", '{"bytes":{"hard":2000}}']);
    const listed = jsonOut<{ orgs: Array<{ org: string; tenant_count: number }> }>(ok(await tollgate("orgs", "ls", "--json")));
    expect(listed.orgs.find((o) => o.org === org)).toMatchObject({ tenant_count: 1 });

    expectRefused(await tollgate("orgs", "rm", org), new RegExp(`^error: conflict \\(409\\): The org ${org} still has 1 tenant\\(s\\); `));
    // A whole-tenant put without --org takes the tenant out of the org.
    ok(await tollgate("tenants", "put", tenant));
    expect(ok(await tollgate("orgs", "rm", org)).stdout).toBe(`Deleted org ${org}.\n`);
    expectRefused(await tollgate("orgs", "get", org), new RegExp(`^error: not_found \\(404\\): No org named ${org}\\.\\n$`));
  });

  it("exits 1 for a tenant put naming an org that does not exist", async () => {
    expectRefused(await tollgate("tenants", "put", unique("t"), "--org", unique("no-org")), /^error: invalid_request \(400\): org: no org named /);
  });
});

describe("tollgate explain and reset", () => {
  it("shows where a key stands after spends, and reset gives it its full limit back", async () => {
    const { tenant, id, key } = await tenantWithKey({ limits: { request: { key: [{ count: 5, window_s: 60 }] } } });
    const caller = `key:${id}`;
    for (let i = 0; i < 2; i += 1) expect((await keyed(key)).status).toBe(200);

    const explained = jsonOut<{ caller: string; tenant: string; limits: Array<Record<string, unknown>>; override: null; block: null }>(ok(await tollgate("explain", caller, "--json")));
    expect(explained).toMatchObject({ caller, tenant, override: null, block: null });
    expect(explained.limits).toContainEqual(expect.objectContaining({ category: "request", subject: "key", source: "tenant", scope: "isolate", limit: { count: 5, window_s: 60 }, remaining: 3 }));

    const table = ok(await tollgate("explain", caller));
    expect(table.stdout).toMatch(new RegExp(`^caller\\s+${caller}\\n+tenant\\s+${tenant}\\noverride\\s+-\\nblock\\s+-\\n`));
    expect(table.stdout).toMatch(/^CATEGORY\s+SUBJECT\s+SOURCE\s+SCOPE\s+LIMIT\s+REMAINING\s+RESET MS$/m);
    expect(table.stdout).toMatch(/^request\s+key\s+tenant\s+isolate\s+5\/60s\s+3\s+\d+$/m);

    const reset = ok(await tollgate("reset", caller));
    expect(reset.stdout).toMatch(new RegExp(`^Reset ${caller}: forgot [1-9]\\d* limiter state\\(s\\) held under its [1-9]\\d* limit\\(s\\), on the isolate that answered\\.\\n$`));
    const afterReset = jsonOut<{ limits: Array<Record<string, unknown>> }>(ok(await tollgate("explain", caller, "--json")));
    expect(afterReset.limits).toContainEqual(expect.objectContaining({ category: "request", subject: "key", source: "tenant", remaining: 5 }));
    expect(jsonOut(ok(await tollgate("reset", caller, "--json")))).toMatchObject({ caller, reset: true });
  });

  it("explains a tenant and an address, and exits 1 for an unknown key or a caller key it cannot read", async () => {
    const { tenant } = await tenantWithKey({ limits: { request: { tenant: [{ count: 50, window_s: 1 }] } } });
    const byTenant = jsonOut<{ caller: string; tenant: string; limits: Array<Record<string, unknown>> }>(ok(await tollgate("explain", `tenant:${tenant}`, "--json")));
    expect(byTenant).toMatchObject({ caller: `tenant:${tenant}`, tenant });
    expect(byTenant.limits).toContainEqual(expect.objectContaining({ category: "request", subject: "tenant", source: "tenant", limit: { count: 50, window_s: 1 } }));
    const byIp = jsonOut<{ caller: string; tenant: null }>(ok(await tollgate("explain", "ip:2001:db8:7:8::1", "--json")));
    expect(byIp).toMatchObject({ caller: "ip:2001:db8:7:8::/64", tenant: null });

    expectRefused(await tollgate("explain", "key:zzzzzzzzzzzz"), /^error: not_found \(404\)/);
    expectRefused(await tollgate("explain", "host:example"), /^error: invalid_request \(400\): caller_key: /);
  });

  it("lets the auditor token explain but not reset", async () => {
    const { id } = await tenantWithKey();
    expect((await runCli(["explain", `key:${id}`], { env: gatewayEnv("auditor") })).code).toBe(0);
    expectRefused(await runCli(["reset", `key:${id}`], { env: gatewayEnv("auditor") }), /^error: admin_forbidden \(403\)/);
  });
});
