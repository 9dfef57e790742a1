// The CLI's command line: --help on every command (swept in-process through
// main(); the bin runs in every other test), --version, and every kind of
// usage error — exit 2, one line on stderr, no stack trace, and nothing sent
// to the gateway (a fake admin API records what arrives).
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliResult, runCli, runCliInProcess } from "./cli-run";
import { type FakeAdmin, startFakeAdmin } from "./fake-admin";

const VERSION = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;

let fake: FakeAdmin;
beforeAll(async () => {
  fake = await startFakeAdmin(() => ({ body: {} }));
});
afterAll(async () => {
  await fake.close();
});

function withFake(args: string[]): Promise<CliResult> {
  return runCli(args, { env: { TOLLGATE_URL: fake.url, TOLLGATE_ADMIN_TOKEN: "t".repeat(40) } });
}

function expectUsageError(result: CliResult, message: RegExp): void {
  expect(result.code, result.stderr).toBe(2);
  expect(result.stdout).toBe("");
  expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(result.stderr).toMatch(/^error: /);
  expect(result.stderr).toMatch(message);
  expect(result.stderr).not.toMatch(/\n\s+at /);
}

/** Every command path, read from the CLI's own help (`tollgate`, `tollgate tenants`, `tollgate tenants ls`, …). */
async function commandPaths(): Promise<string[][]> {
  const names = (help: string) => {
    const section = help.split("\nCommands:\n")[1]?.split("\n\n")[0];
    if (section === undefined) return [];
    return section
      .split("\n")
      .map((line) => /^ {2}(\S+)/.exec(line)?.[1])
      .filter((name): name is string => name !== undefined && name !== "help");
  };
  const paths: string[][] = [[]];
  for (const group of names((await runCliInProcess(["--help"])).stdout)) {
    paths.push([group]);
    for (const sub of names((await runCliInProcess([group, "--help"])).stdout)) paths.push([group, sub]);
  }
  return paths;
}

describe("tollgate --help", () => {
  it("answers every command's --help with its usage on stdout and exit 0", async () => {
    const paths = await commandPaths();
    // tollgate: issue 17's list plus `overrides get` and `reset` (issue 16's reset), issue 30's `tenants set`, `blocks get` and `audit`, and issue 26's `traffic`, `top-refused`, `alerts`, issue 25's `budgets get|put|topup`, and issue 41's `shadow`.
    expect(paths).toHaveLength(40);
    expect(paths.map((p) => p.join(" "))).toEqual(
      expect.arrayContaining([
        "tenants ls", "tenants get", "tenants put", "tenants set", "tenants rm",
        "keys mint", "keys ls", "keys revoke",
        "overrides ls", "overrides put", "overrides rm",
        "blocks ls", "blocks get", "blocks add", "blocks rm",
        "orgs ls", "orgs get", "orgs put", "orgs rm",
        "explain", "reset", "usage export", "usage reconcile", "audit",
        "traffic", "top-refused", "shadow", "alerts",
        "budgets get", "budgets put", "budgets topup",
      ]),
    );
    for (const path of paths) {
      const result = await runCliInProcess([...path, "--help"]);
      const name = ["tollgate", ...path].join(" ");
      expect(result.code, name).toBe(0);
      expect(result.stderr, name).toBe("");
      expect(result.stdout, name).toMatch(new RegExp(`^Usage: ${name} `));
      expect(result.stdout, name).toContain("--json");
    }
  });

  it("prints --help through the bin on stdout with exit 0", async () => {
    const result = await runCli(["tenants", "put", "--help"]);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    expect(result.stdout).toMatch(/^Usage: tollgate tenants put \[options\] <tenant>\n/);
    expect(result.stdout).toContain("--limits <json>");
    expect(result.stdout).toContain("--body <json>");
  });

  it("shows both --limits shapes, each with an example, in the help of every command that takes --limits", async () => {
    for (const path of [["tenants", "put"], ["tenants", "set"], ["keys", "mint"], ["overrides", "put"]]) {
      const { stdout } = await runCliInProcess([...path, "--help"]);
      expect(stdout, path.join(" ")).toContain(`'{"request":{"key":[{"count":100,"window_s":60}]`);
      expect(stdout, path.join(" ")).toContain(`'{"request":[{"count":100,"window_s":60}]`);
      // Every field a limit takes, and where charge_on_status lives (a route's, not a limit's).
      expect(stdout, path.join(" ")).toContain(`A limit is {"count", "window_s", "burst"?, "scope"?: "isolate"|"global", "delay_max_ms"?,\n"shadow"?, "penalty"?}`);
      expect(stdout, path.join(" ")).toMatch(/^ {2}delay_max_ms {2}0 to 10000: hold a request/m);
      expect(stdout, path.join(" ")).toMatch(/^ {2}shadow {8}true: try it without enforcing it/m);
      expect(stdout, path.join(" ")).toMatch(/^ {2}penalty {7}\{"after", "within_s", "block_s"\}/m);
      expect(stdout, path.join(" ")).toContain("--shadow");
      expect(stdout, path.join(" ")).toMatch(/charge_on_status, e\.g\. \["4xx"\] for failed logins\) is a\nroute's field in the TOLLGATE config, not a limit's/);
    }
  });

  it("prints the package version for --version", async () => {
    const result = await runCli(["--version"]);
    expect(result).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: "" });
  });

  it("shows the environment variables in the top-level help", async () => {
    const { stdout } = await runCli(["--help"]);
    expect(stdout).toContain("TOLLGATE_URL");
    expect(stdout).toContain("TOLLGATE_ADMIN_TOKEN");
  });
});

describe("usage errors exit 2 with one line and send nothing", () => {
  const cases: Array<[string, string[], RegExp]> = [
    ["no command", [], /missing command: tollgate tenants\|keys/],
    ["an unknown command", ["tenantz", "ls"], /unknown command 'tenantz'/],
    ["an unknown subcommand", ["keys", "rotate", "x"], /unknown command 'rotate': tollgate keys mint\|ls\|revoke/],
    ["a group without its subcommand", ["orgs"], /missing command: tollgate orgs ls\|get\|put\|rm/],
    ["an unknown flag", ["tenants", "ls", "--all"], /unknown option '--all'/],
    ["a misspelt global flag", ["tenants", "ls", "--jsn"], /unknown option '--jsn' \(Did you mean --json\?\)/],
    ["a missing argument", ["tenants", "get"], /missing required argument 'tenant'/],
    ["a flag without its value", ["tenants", "put", "acme", "--limits"], /option '--limits <json>' argument missing/],
    ["an extra argument", ["keys", "revoke", "abc", "def"], /too many arguments/],
    ["a format not offered", ["usage", "export", "--format", "xlsx"], /Allowed choices are csv, ndjson/],
    ["a month that is not YYYY-MM", ["usage", "export", "--from", "2026-13"], /--from: not a month as YYYY-MM/],
    ["invalid JSON", ["tenants", "put", "acme", "--limits", "{count: 1}"], /--limits: not valid JSON/],
    ["a JSON body that is not an object", ["orgs", "put", "bigco", "--body", "[1]"], /--body: must be a JSON object/],
    ["a missing @file", ["tenants", "put", "acme", "--body", "@/nonexistent/tollgate-body.json"], /--body: cannot read \/nonexistent\/tollgate-body.json \(ENOENT\)/],
    ["keys mint without --name", ["keys", "mint", "acme"], /--name is required/],
    ["overrides put without --limits", ["overrides", "put", "ip:192.0.2.1"], /--limits is required/],
    ["a duration that is not one", ["blocks", "add", "ip:192.0.2.1", "--expires-in", "soon"], /--expires-in: not a duration/],
    ["both expiry flags", ["blocks", "add", "ip:192.0.2.1", "--expires-in", "1h", "--expires-at", "2030-01-01T00:00:00Z"], /give one, not both/],
    ["a path-traversing argument", ["tenants", "rm", ".."], /tenant: not a valid value/],
    ["a key's --limits shape for a tenant", ["tenants", "put", "acme", "--limits", '{"request":[{"count":1,"window_s":1}]}'], /--limits: a tenant's limits name whom each list applies to/],
    ["a tenant's --limits shape for an override", ["overrides", "put", "ip:192.0.2.1", "--limits", '{"request":{"key":[{"count":1,"window_s":1}]}}'], /--limits: a key's or an override's limits are a list per category, e\.g\. \{"request":\[/],
    ["tenants set with nothing to set", ["tenants", "set", "acme"], /name at least one of --org, --no-org, --limits, --quota/],
    ["part of a key for explain", ["explain", "key:tg_abc"], /the 12 characters after tg_/],
    ["a --from that is not a time", ["traffic", "--from", "yesterday"], /--from: not a time like 2026-12-02T10:00:00Z, nor a duration ago like 90m, 24h or 7d: 'yesterday'/],
    ["a time without a zone", ["traffic", "--to", "2026-12-02T10:00:00"], /--to: not a time like/],
    ["--from after --to", ["traffic", "--from", "2026-12-02T10:00:00Z", "--to", "2026-12-02T09:00:00Z"], /--from: must be before --to/],
    ["a span over 31 days", ["traffic", "--from", "2026-01-01T00:00:00Z", "--to", "2026-02-01T00:00:01Z"], /--from, --to: at most 31 days apart/],
    ["--minutes that is not a count", ["top-refused", "--minutes", "0"], /--minutes: not a whole number above 0: '0'/],
    ["--minutes past a week", ["top-refused", "--minutes", "10081"], /--minutes: at most 10080/],
    ["--limit past 200", ["alerts", "--limit", "201"], /--limit: at most 200/],
    ["an audit --limit in exponent form", ["audit", "--limit", "1e3"], /--limit: not a whole number from 1 to 100000: '1e3'/],
  ];

  it.each(cases)("refuses %s", async (_name, args, message) => {
    const before = fake.received.length;
    expectUsageError(await withFake(args), message);
    expect(fake.received.length).toBe(before);
  });

  it("refuses a run without a token, naming the variable", async () => {
    expectUsageError(await runCli(["tenants", "ls"], { env: { TOLLGATE_URL: fake.url } }), /no admin token: set TOLLGATE_ADMIN_TOKEN or pass --token/);
  });

  it("refuses a run without a URL, naming the variable", async () => {
    expectUsageError(await runCli(["tenants", "ls"], { env: { TOLLGATE_ADMIN_TOKEN: "t".repeat(40) } }), /no gateway URL: set TOLLGATE_URL or pass --url/);
  });

  it("refuses plain http:// to a host other than this machine unless --insecure-http", async () => {
    const before = fake.received.length;
    // 0.0.0.0 reaches this machine's listener, yet is no loopback name: the refusal is about the name given.
    const remote = fake.url.replace("127.0.0.1", "0.0.0.0");
    const token = "t".repeat(40);
    for (const url of [remote, "http://gw.example.com", "http://10.0.0.1:8787"]) {
      expectUsageError(await runCli(["tenants", "ls", "--url", url, "--token", token]), /--url: refusing http:\/\/ to .+ unencrypted\. Use https:\/\/, or pass --insecure-http/);
    }
    expect(fake.received.length).toBe(before);
    const insecure = await runCli(["tenants", "ls", "--url", remote, "--token", token, "--insecure-http"]);
    expect(fake.received.length, insecure.stderr).toBe(before + 1);
    // Loopback names need no flag.
    await runCli(["tenants", "ls", "--url", fake.url.replace("127.0.0.1", "localhost"), "--token", token]);
    expect(fake.received.length).toBe(before + 2);
  });

  it("refuses a URL that is not http or https", async () => {
    expectUsageError(await runCli(["tenants", "ls", "--url", "ftp://gw.example", "--token", "x"]), /--url: must be http:\/\/ or https:\/\//);
  });
});
