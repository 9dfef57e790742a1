// The CLI as an operator trips over it (issue 30), against the real Worker
// under `wrangler dev`: `tenants put` says what a replacement dropped and
// `tenants set` changes only what it names; refusals name CLI commands, not
// API paths; `explain` takes a whole key by its id; a URL that is not a
// Tollgate says so; `tollgate audit`, `blocks get`, and usage and quota
// columns in `tenants ls`.
import { describe, expect, it } from "vitest";
import { type CliResult, jsonOut, runCli, tableRows, tollgate } from "./cli-run";
import { adminCall, gateway, unique } from "./fixture";

function ok(result: CliResult): CliResult {
  expect(result.code, result.stderr).toBe(0);
  return result;
}

function refused(result: CliResult, message: RegExp): void {
  expect(result.code, result.stderr).toBe(1);
  expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(result.stderr).toMatch(message);
}

const LIMITS = { request: { key: [{ count: 100, window_s: 60, burst: 150, scope: "global" }] } };

describe("tenants put and set", () => {
  it("put says it replaced the tenant whole and names what it dropped", async () => {
    const tenant = unique("put");
    const org = unique("put-org");
    expect((await adminCall("PUT", `/orgs/${org}`, { quota: {} })).status).toBe(201);
    expect((await adminCall("PUT", `/tenants/${tenant}`, { org, limits: LIMITS, quota: { bytes: { hard: 1000 } } })).status).toBe(201);
    const replaced = ok(await tollgate("tenants", "put", tenant, "--quota", '{"bytes":{"hard":2000}}'));
    expect(replaced.stdout).toContain(`Replaced tenant ${tenant} whole; dropped what was not given again: org ${org}; limits {"request":`);
    expect(replaced.stderr).toContain(`tollgate tenants set ${tenant}`);
    const after = jsonOut(ok(await tollgate("tenants", "get", tenant, "--json")));
    expect(after).toMatchObject({ org: null, limits: {}, quota: { bytes: { hard: 2000 } } });
    expect(ok(await tollgate("tenants", "put", unique("put-new"))).stdout).toMatch(/^Created tenant /);
  });

  it("set changes only the fields it names, and --no-org takes the tenant out of its org", async () => {
    const tenant = unique("set");
    const org = unique("set-org");
    expect((await adminCall("PUT", `/orgs/${org}`, { quota: {} })).status).toBe(201);
    expect((await adminCall("PUT", `/tenants/${tenant}`, { org, limits: LIMITS, quota: { bytes: { hard: 1000 } } })).status).toBe(201);
    expect(ok(await tollgate("tenants", "set", tenant, "--quota", '{"objects":{"hard":5}}')).stdout).toBe(`Set quota of tenant ${tenant}; everything else is unchanged.\n`);
    expect(jsonOut(ok(await tollgate("tenants", "get", tenant, "--json")))).toMatchObject({ org, limits: LIMITS, quota: { objects: { hard: 5 } } });
    ok(await tollgate("tenants", "set", tenant, "--no-org"));
    expect(jsonOut(ok(await tollgate("tenants", "get", tenant, "--json")))).toMatchObject({ org: null, limits: LIMITS, quota: { objects: { hard: 5 } } });
  });

  it("refuses a tenant's --limits in a key's shape, saying which shape it expected, and sends nothing", async () => {
    const result = await tollgate("tenants", "set", unique("shape"), "--limits", '{"request":[{"count":1,"window_s":1}]}');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--limits: a tenant's limits name whom each list applies to \("key", "jwt" or "tenant"\), e\.g\. \{"request":\{"key":\[/);
  });
});

describe("refusals in the CLI's words", () => {
  it("names 'tollgate orgs put' for a missing org and 'tollgate tenants set <tenant> --no-org' for an org in use", async () => {
    const missing = unique("no-org");
    refused(await tollgate("tenants", "put", unique("t"), "--org", missing), new RegExp(`create it with 'tollgate orgs put ${missing}'`));
    const org = unique("busy-org");
    expect((await adminCall("PUT", `/orgs/${org}`, { quota: {} })).status).toBe(201);
    expect((await adminCall("PUT", `/tenants/${unique("member")}`, { org })).status).toBe(201);
    const inUse = await tollgate("orgs", "rm", org);
    refused(inUse, /'tollgate tenants set <tenant> --no-org'/);
    expect(inUse.stderr).not.toMatch(/PUT \/tenants/);
  });

  it("says a URL that is not a Tollgate admin API is not one", async () => {
    const result = await runCli(["tenants", "ls"], { env: { TOLLGATE_URL: gateway().originUrl, TOLLGATE_ADMIN_TOKEN: "t".repeat(40) } });
    refused(result, /is not answering as a Tollgate admin API does .*check TOLLGATE_URL or --url/);
  });
});

describe("explain with a whole key", () => {
  it("takes the id out of tg_<id>_<secret> and never prints or sends the secret", async () => {
    const tenant = unique("ex");
    expect((await adminCall("PUT", `/tenants/${tenant}`, {})).status).toBe(201);
    const { id, key } = (await adminCall("POST", `/tenants/${tenant}/keys`, { name: "whole" })).body as { id: string; key: string };
    const result = ok(await tollgate("explain", `key:${key}`));
    expect(result.stdout).toMatch(new RegExp(`^caller\\s+key:${id}\\n`));
    expect(result.stderr).toContain(`Took the key id ${id} from the full key; its secret was not sent.`);
    expect(result.stdout + result.stderr).not.toContain(key);
    const bad = await tollgate("explain", "key:tg_short");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("the 12 characters after tg_");
  });
});

describe("audit, blocks get, tenants ls", () => {
  it("shows the audit log filtered by tenant and kind, a block by id, and usage and quota columns", async () => {
    const tenant = unique("cols");
    ok(await tollgate("tenants", "put", tenant, "--quota", '{"bytes":{"hard":5000}}'));
    ok(await tollgate("tenants", "set", tenant, "--limits", JSON.stringify(LIMITS)));
    const events = jsonOut<{ events: Array<{ kind: string; tenant: string }> }>(ok(await tollgate("audit", "--tenant", tenant, "--json")));
    expect(events.events.map((e) => e.kind)).toEqual(["tenant_limits_set", "tenant_created"]);
    const table = ok(await tollgate("audit", "--tenant", tenant, "--kind", "tenant_limits_set"));
    expect(tableRows(table.stdout).map((row) => row[1])).toEqual(["tenant_limits_set"]);

    const address = `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.7`;
    const added = jsonOut<{ id: number }>(ok(await tollgate("blocks", "add", `ip:${address}`, "--reason", "cli get", "--json")));
    const shown = ok(await tollgate("blocks", "get", String(added.id)));
    expect(shown.stdout).toMatch(new RegExp(`^id\\s+${added.id}\\ntarget\\s+ip:${address.replaceAll(".", "\\.")}\\n`));
    const blockEvents = jsonOut<{ events: Array<{ kind: string; detail: { target?: string } }> }>(ok(await tollgate("audit", "--caller", `ip:${address}`, "--json")));
    expect(blockEvents.events).toMatchObject([{ kind: "block_created", detail: { target: `ip:${address}` } }]);
    ok(await tollgate("blocks", "rm", String(added.id)));

    const ls = ok(await tollgate("tenants", "ls"));
    expect(ls.stdout.split("\n")[0]).toMatch(/^TENANT\s+ORG\s+BYTES\s+OBJECTS\s+QUOTA\s+UPDATED$/);
    const row = tableRows(ls.stdout).find((r) => r[0] === tenant);
    expect(row?.slice(0, 5)).toEqual([tenant, "-", "0/5000", "0", "bytes hard 5000"]);
  });
});
