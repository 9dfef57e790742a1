// The CLI against the real Worker under `wrangler dev` (the e2e harness):
// every command whose endpoint is on this branch — tenants get/put/rm, keys
// mint/ls/revoke, overrides get/put/rm, usage export — with tables, --json,
// and exit codes 0 and 1, and the gateway really changed (a minted key is
// admitted, a revoked one refused).
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliResult, gatewayEnv, jsonOut, runCli, tableRows, tollgate } from "./cli-run";
import { adminCall, gateway, unique } from "./fixture";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "tollgate-cli-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function expectRefused(result: CliResult, message: RegExp): void {
  expect(result.code, result.stderr).toBe(1);
  expect(result.stdout).toBe("");
  expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(result.stderr).toMatch(message);
  expect(result.stderr).not.toMatch(/\n\s+at /);
}

const LIMITS = { request: { key: [{ count: 100, window_s: 60 }] } };
const QUOTA = { bytes: { soft: 800, hard: 1000 }, objects: { hard: 10 } };

function periodOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}

describe("tollgate tenants", () => {
  it("creates a tenant, shows it as a table and as JSON, replaces it from a file, and deletes it", async () => {
    const tenant = unique("cli-t");
    const created = await tollgate("tenants", "put", tenant, "--limits", JSON.stringify(LIMITS), "--quota", JSON.stringify(QUOTA));
    expect(created).toEqual({ code: 0, stdout: `Created tenant ${tenant}.\n`, stderr: "" });

    const shown = await tollgate("tenants", "get", tenant, "--json");
    expect(shown.code).toBe(0);
    expect(jsonOut(shown)).toMatchObject({ tenant, limits: LIMITS, quota: QUOTA, usage: { bytes: 0, objects: 0, reserved_bytes: 0 } });

    const table = await tollgate("tenants", "get", tenant);
    expect(table.stdout).toMatch(new RegExp(`^tenant\\s+${tenant}$`, "m"));
    expect(table.stdout).toMatch(/^quota\s+\{"bytes":\{"soft":800,"hard":1000\},"objects":\{"hard":10\}\}$/m);
    expect(table.stdout).toMatch(/^bytes\s+0$/m);

    const file = join(dir, `${tenant}.json`);
    const replacement = { limits: { request: { tenant: [{ count: 5, window_s: 1 }] } } };
    await writeFile(file, JSON.stringify(replacement));
    const replaced = await tollgate("tenants", "put", tenant, "--body", `@${file}`);
    expect(replaced).toMatchObject({ code: 0, stdout: `Replaced tenant ${tenant} whole; dropped what was not given again: quota {"bytes":{"soft":800,"hard":1000},"objects":{"hard":10}}.\n` });
    // A put replaces the whole tenant: the quota it did not name is gone.
    expect(jsonOut(await tollgate("tenants", "get", tenant, "--json"))).toMatchObject({ limits: replacement.limits, quota: {} });

    expect(await tollgate("tenants", "rm", tenant)).toEqual({ code: 0, stdout: `Deleted tenant ${tenant} and its 0 key(s).\n`, stderr: "" });
    expectRefused(await tollgate("tenants", "get", tenant), new RegExp(`^error: not_found \\(404\\): No tenant named ${tenant}\\.\\n$`));
  });

  it("exits 1 on invalid limits, naming the field, and keeps the previous limits", async () => {
    const tenant = unique("cli-bad");
    expect((await tollgate("tenants", "put", tenant, "--limits", JSON.stringify(LIMITS))).code).toBe(0);
    const refused = await tollgate("tenants", "put", tenant, "--limits", '{"request":{"key":[{"count":0,"window_s":60}]}}');
    expectRefused(refused, /^error: invalid_request \(400\): .*count/);
    expect(jsonOut(await tollgate("tenants", "get", tenant, "--json"))).toMatchObject({ limits: LIMITS });
  });

  it("exits 1 on a limit naming a category nothing defines, passing on the API's message with the known ones, and stores nothing", async () => {
    const tenant = unique("cli-name");
    // This gateway's config defines upload (its PUT /objects route charges it) besides the built-ins.
    const known = "one of message, request, stream_rent, upload";
    expectRefused(await tollgate("tenants", "put", tenant, "--limits", '{"reqest":{"key":[{"count":5,"window_s":60}]}}'), new RegExp(`^error: invalid_request \\(400\\): limits\\.reqest: no category named reqest: ${known}\\n$`));
    expectRefused(await tollgate("tenants", "get", tenant), /^error: not_found \(404\)/);
    expect((await tollgate("tenants", "put", tenant, "--limits", JSON.stringify(LIMITS))).code).toBe(0);
    const minted = jsonOut<{ id: string }>(await tollgate("keys", "mint", tenant, "--name", "n", "--json"));
    expectRefused(await tollgate("overrides", "put", `key:${minted.id}`, "--limits", '{"uplaod":[{"count":5,"window_s":60}]}'), new RegExp(`^error: invalid_request \\(400\\): limits\\.uplaod: no category named uplaod: ${known}\\n$`));
    expectRefused(await tollgate("overrides", "get", `key:${minted.id}`), /^error: not_found \(404\)/);
  });

  it("prints the API's JSON for put and rm with --json", async () => {
    const tenant = unique("cli-j");
    const put = jsonOut(await tollgate("tenants", "put", tenant, "--json"));
    expect(put).toMatchObject({ tenant, limits: {}, quota: {} });
    expect(jsonOut(await tollgate("tenants", "rm", tenant, "--json"))).toEqual({ tenant, deleted: true, keys_deleted: 0 });
  });
});

describe("tollgate keys", () => {
  it("mints a key the gateway admits, lists it without its secret, and revokes it so the gateway refuses it", async () => {
    const tenant = unique("cli-k");
    expect((await tollgate("tenants", "put", tenant)).code).toBe(0);
    const minted = jsonOut<{ id: string; key: string; name: string; tenant: string }>(await tollgate("keys", "mint", tenant, "--name", "ci runner", "--json"));
    expect(minted).toMatchObject({ tenant, name: "ci runner" });
    expect(minted.id).toMatch(/^[0-9a-z]{12}$/);

    const { gatewayUrl } = gateway();
    const call = () => fetch(`${gatewayUrl}/hello`, { headers: { authorization: `Bearer ${minted.key}` } });
    expect((await call()).status).toBe(200);

    const listed = await tollgate("keys", "ls", tenant);
    expect(listed.code).toBe(0);
    expect(listed.stdout.split("\n")[0]).toMatch(/^ID\s+NAME\s+PREFIX\s+CREATED\s+EXPIRES\s+REVOKED\s+LAST USED\s+USES$/);
    const rows = tableRows(listed.stdout);
    expect(rows).toHaveLength(1);
    expect(rows[0]?.slice(0, 2)).toEqual([minted.id, "ci runner"]);
    expect(rows[0]?.[5]).toBe("-");
    const json = await tollgate("keys", "ls", tenant, "--json");
    expect(jsonOut<{ keys: Array<{ id: string }> }>(json).keys.map((k) => k.id)).toEqual([minted.id]);
    expect(json.stdout + listed.stdout).not.toContain(minted.key);

    const revoked = await tollgate("keys", "revoke", minted.id);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toMatch(new RegExp(`^Revoked key ${minted.id} \\(ci runner\\) at \\d{4}-\\d\\d-\\d\\dT`));
    const refused = await call();
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ code: "credential_revoked" });
    expect(tableRows((await tollgate("keys", "ls", tenant)).stdout)[0]?.[5]).toMatch(/^\d{4}-/);
  });

  it("prints the secret once in the table form, with a warning on stderr", async () => {
    const tenant = unique("cli-k2");
    expect((await tollgate("tenants", "put", tenant)).code).toBe(0);
    const minted = await tollgate("keys", "mint", tenant, "--name", "people", "--expires-in", "7d");
    expect(minted.code, minted.stderr).toBe(0);
    const key = /^key\s+(\S+)$/m.exec(minted.stdout)?.[1];
    expect(key).toBeDefined();
    expect(minted.stderr).toBe("The key is shown this once: store it now.\n");
    const expires = /^expires\s+(\S+)$/m.exec(minted.stdout)?.[1] ?? "";
    expect(Date.parse(expires) - Date.now()).toBeGreaterThan(6 * 86_400_000);
    const res = await fetch(`${gateway().gatewayUrl}/hello`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
  });

  it("exits 1 for a tenant that does not exist and for an unknown key id", async () => {
    expectRefused(await tollgate("keys", "mint", unique("nobody"), "--name", "x"), /^error: not_found \(404\): No tenant named /);
    expectRefused(await tollgate("keys", "revoke", "zzzzzzzzzzzz"), /^error: not_found \(404\)/);
  });
});

describe("tollgate overrides", () => {
  it("sets, shows, replaces and deletes a key's override", async () => {
    const tenant = unique("cli-o");
    await adminCall("PUT", `/tenants/${tenant}`, {});
    const key = (await adminCall("POST", `/tenants/${tenant}/keys`, { name: "o" })).body as { id: string };
    const caller = `key:${key.id}`;
    const limits = { request: [{ count: 3, window_s: 1 }] };
    expect(await tollgate("overrides", "put", caller, "--limits", JSON.stringify(limits))).toMatchObject({ code: 0, stdout: `Created the override for ${caller}.\n` });
    expect(jsonOut(await tollgate("overrides", "get", caller, "--json"))).toMatchObject({ caller_key: caller, limits });
    expect((await tollgate("overrides", "get", caller)).stdout).toMatch(/^limits\s+\{"request":\[\{"count":3,"window_s":1\}\]\}$/m);
    expect(await tollgate("overrides", "put", caller, "--body", JSON.stringify({ limits: {} }))).toMatchObject({ code: 0, stdout: `Replaced the override for ${caller}.\n` });
    expect(await tollgate("overrides", "rm", caller)).toMatchObject({ code: 0, stdout: `Deleted the override for ${caller}.\n` });
    expectRefused(await tollgate("overrides", "get", caller), /^error: not_found \(404\)/);
  });

  it("addresses an IPv6 caller by its /64, slash and all", async () => {
    const n = Math.floor(Math.random() * 0xffff).toString(16);
    const created = jsonOut<{ caller_key: string }>(await tollgate("overrides", "put", `ip:2001:db8:${n}:1::5`, "--limits", "{}", "--json"));
    expect(created.caller_key).toBe(`ip:2001:db8:${n}:1::/64`);
    expect((await tollgate("overrides", "get", created.caller_key)).code).toBe(0);
    expect((await tollgate("overrides", "rm", created.caller_key)).code).toBe(0);
  });
});

describe("tollgate usage export", () => {
  async function meteredRequests(tenant: string): Promise<number> {
    const res = await fetch(`${gateway().gatewayUrl}/_tollgate/admin/v1/usage/export?format=ndjson&tenant=${tenant}`, {
      headers: { authorization: `Bearer ${gateway().adminToken}` },
    });
    const rows = (await res.text()).split("\n").filter(Boolean).map((line) => JSON.parse(line) as { metric: string; value: number });
    return rows.find((row) => row.metric === "requests")?.value ?? 0;
  }

  /**
   * Sends requests with a key of a new tenant until D1 holds every one of
   * them (the meter flushes at most every second in e2e, and a flush carries
   * the request that starts it), so nothing of this tenant is left pending
   * and its export no longer changes. Answers how many were sent.
   */
  async function meterSomeRequests(tenant: string): Promise<number> {
    await adminCall("PUT", `/tenants/${tenant}`, {});
    const { key } = (await adminCall("POST", `/tenants/${tenant}/keys`, { name: "meter" })).body as { key: string };
    const deadlineMs = Date.now() + 30_000;
    let sent = 0;
    while (Date.now() < deadlineMs) {
      const res = await fetch(`${gateway().gatewayUrl}/metered`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(200);
      sent += 1;
      // Give a flush this request started time to land before sending another.
      const settleUntilMs = Date.now() + 1_500;
      while (Date.now() < settleUntilMs) {
        if ((await meteredRequests(tenant)) === sent) return sent;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    throw new Error(`the ${sent} metered requests of ${tenant} did not all reach D1 within 30 s`);
  }

  it("writes the API's CSV and NDJSON exactly, to a file or to stdout", async () => {
    const tenant = unique("cli-u");
    const sent = await meterSomeRequests(tenant);
    const period = periodOf(Date.now());
    const direct = await fetch(`${gateway().gatewayUrl}/_tollgate/admin/v1/usage/export?from=${period}&to=${period}&format=csv&tenant=${tenant}`, {
      headers: { authorization: `Bearer ${gateway().adminToken}` },
    });
    const expected = await direct.text();
    // Text cells are quoted by the API's RFC 4180 writer.
    expect(expected).toMatch(new RegExp(`^tenant,period,metric,value,status\\r\\n"${tenant}","${period}","requests",${sent},"provisional"\\r\\n$`));

    const file = join(dir, `${tenant}.csv`);
    const written = await tollgate("usage", "export", "--from", period, "--to", period, "--format", "csv", "--tenant", tenant, "-o", file);
    expect(written.code, written.stderr).toBe(0);
    const rows = expected.trimEnd().split("\r\n").length - 1;
    expect(written.stdout).toBe(`Wrote ${rows} row(s), ${Buffer.byteLength(expected)} bytes, to ${file}.\n`);
    expect(await readFile(file, "utf8")).toBe(expected);

    const ndjson = await tollgate("usage", "export", "--from", period, "--format", "ndjson", "--tenant", tenant);
    expect(ndjson.code).toBe(0);
    const lines = ndjson.stdout.trimEnd().split("\n").map((line) => JSON.parse(line) as { tenant: string; metric: string });
    expect(lines.map((l) => [l.tenant, l.metric])).toContainEqual([tenant, "requests"]);

    const summary = jsonOut(await tollgate("usage", "export", "--from", period, "--tenant", tenant, "-o", join(dir, "x.csv"), "--json"));
    expect(summary).toEqual({ file: join(dir, "x.csv"), format: "csv", rows, bytes: Buffer.byteLength(expected) });
  });

  it("exits 1 with the API's refusal for a range that ends before it starts", async () => {
    expectRefused(await tollgate("usage", "export", "--from", "2026-05", "--to", "2026-04", "-o", join(dir, "never.csv")), /^error: invalid_request \(400\): .*to/);
  });
});

describe("tokens and reachability", () => {
  it("exits 1 with one line for a wrong token", async () => {
    const result = await runCli(["tenants", "get", "acme"], { env: { ...gatewayEnv(), TOLLGATE_ADMIN_TOKEN: "wrong-token-0123456789abcdefghijklmnopq" } });
    expectRefused(result, /^error: admin_unauthorized \(401\)/);
  });

  it("lets the auditor token read and refuses it a write", async () => {
    const tenant = unique("cli-a");
    await adminCall("PUT", `/tenants/${tenant}`, {});
    expect((await runCli(["tenants", "get", tenant], { env: gatewayEnv("auditor") })).code).toBe(0);
    expectRefused(await runCli(["tenants", "rm", tenant], { env: gatewayEnv("auditor") }), /^error: admin_forbidden \(403\)/);
  });

  it("uses --token over the environment's token", async () => {
    const tenant = unique("cli-f");
    await adminCall("PUT", `/tenants/${tenant}`, {});
    const result = await runCli(["tenants", "get", tenant, "--token", gateway().adminToken], { env: { ...gatewayEnv(), TOLLGATE_ADMIN_TOKEN: "wrong-token-0123456789abcdefghijklmnopq" } });
    expect(result.code, result.stderr).toBe(0);
  });

  it("exits 1 with one line when nothing listens at the URL", async () => {
    // A port that was free a moment ago: nothing listens there.
    const { createServer } = await import("node:net");
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0));
      });
    });
    expectRefused(await runCli(["tenants", "ls", "--url", `http://127.0.0.1:${port}`, "--token", "x".repeat(32)]), /^error: could not reach http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED\n$/);
  });
});
