// tollgate budgets get|put|topup against the real Worker under `wrangler
// dev`: tables and --json, exit codes 0, 1 and 2, and the gateway really
// spending the budget (credits exhausted → 402, a top-up lets the key in
// again).
import { describe, expect, it } from "vitest";
import { type CliResult, jsonOut, tableRows, tollgate } from "./cli-run";
import { adminCall, gateway, unique } from "./fixture";

function ok(result: CliResult): CliResult {
  expect(result.code, result.stderr).toBe(0);
  return result;
}

function keyed(key: string): Promise<Response> {
  return fetch(`${gateway().gatewayUrl}/budgeted`, { headers: { authorization: `Bearer ${key}` } });
}

describe("tollgate budgets", () => {
  it("puts, lists and tops up credits, and the gateway spends them", async () => {
    const tenant = unique("cli-budget");
    expect((await adminCall("PUT", `/tenants/${tenant}`, {})).status).toBe(201);
    const minted = (await adminCall("POST", `/tenants/${tenant}/keys`, { name: "budget" })).body as { id: string; key: string };

    const put = ok(await tollgate("budgets", "put", `tenant:${tenant}`, "request", "--amount", "1", "--period", "none"));
    expect(put.stdout).toContain(`Created the request budget of tenant:${tenant}`);
    ok(await tollgate("budgets", "put", `key:${minted.id}`, "request", "--amount", "100", "--period", "month", "--thresholds", "0.5,1"));

    const listed = ok(await tollgate("budgets", "get", `tenant:${tenant}`)).stdout;
    expect(listed.split("\n")[0]!.split(/\s{2,}/)).toEqual(["OWNER", "CATEGORY", "PERIOD", "AMOUNT", "USED", "REMAINING", "RESETS"]);
    expect(tableRows(listed)).toEqual([[`tenant:${tenant}`, "request", "none", "1", "0", "1", "-"]]);
    const one = jsonOut<{ thresholds: number[]; period: string }>(ok(await tollgate("budgets", "get", `key:${minted.id}`, "request", "--json")));
    expect(one).toMatchObject({ period: "month", thresholds: [0.5, 1] });

    // The gateway reads the budget with the key's record (cached at most cache_ttl_s).
    expect((await keyed(minted.key)).status).toBe(200);
    const refused = await keyed(minted.key);
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { code: string }).code).toBe("credits_exhausted");

    const topped = ok(await tollgate("budgets", "topup", `tenant:${tenant}`, "request", "--amount", "2", "--reason", "invoice 7"));
    expect(topped.stdout).toContain("3 in all, 2 remaining");
    expect((await keyed(minted.key)).status).toBe(200);
    const after = jsonOut<{ budgets: { owner: string; used: number }[] }>(ok(await tollgate("budgets", "get", `tenant:${tenant}`, "--json")));
    expect(after.budgets).toEqual([expect.objectContaining({ owner: `tenant:${tenant}`, used: 2 })]);
    // explain lists the budgets that apply to the key, after its limits.
    const explained = ok(await tollgate("explain", `key:${minted.id}`)).stdout;
    expect(explained).toMatch(new RegExp(`^BUDGET\\s+CATEGORY\\s+PERIOD\\s+AMOUNT\\s+REMAINING\\s+RESETS$`, "m"));
    // Two requests spent the key's budget; the gateway's lease holds one unit more, counted until the lease ends.
    expect(explained).toMatch(new RegExp(`^key:${minted.id}\\s+request\\s+month\\s+100\\s+97\\s+\\d{4}-`, "m"));
    expect(explained).toMatch(new RegExp(`^tenant:${tenant}\\s+request\\s+none\\s+3\\s+1\\s+-$`, "m"));
  });

  it("says amounts as people read them (50,000 credits), and --json keeps the API's numbers", async () => {
    const tenant = unique("cli-budget-words");
    expect((await adminCall("PUT", `/tenants/${tenant}`, {})).status).toBe(201);
    expect(ok(await tollgate("budgets", "put", `tenant:${tenant}`, "request", "--amount", "50000", "--period", "none")).stdout).toBe(`Created the request budget of tenant:${tenant}: 50,000 credits.\n`);
    expect(ok(await tollgate("budgets", "topup", `tenant:${tenant}`, "request", "--amount", "1200000")).stdout).toBe(`Topped up the request credits of tenant:${tenant}: 1,250,000 in all, 1,250,000 remaining.\n`);
    expect(tableRows(ok(await tollgate("budgets", "get", `tenant:${tenant}`)).stdout)).toEqual([[`tenant:${tenant}`, "request", "none", "1,250,000", "0", "1,250,000", "-"]]);
    const replaced = ok(await tollgate("budgets", "put", `tenant:${tenant}`, "request", "--amount", "2500000", "--period", "month", "--json"));
    expect(jsonOut<{ amount: number; period: string }>(replaced)).toMatchObject({ amount: 2500000, period: "month" });
    expect(ok(await tollgate("budgets", "put", `tenant:${tenant}`, "request", "--amount", "1", "--period", "none")).stdout).toBe(`Replaced the request budget of tenant:${tenant}: 1 credit.\n`);
  });

  it("tops up once for one --idempotency-key, says so when run again, and refuses the key with another amount", async () => {
    const tenant = unique("cli-budget-once");
    expect((await adminCall("PUT", `/tenants/${tenant}`, {})).status).toBe(201);
    ok(await tollgate("budgets", "put", `tenant:${tenant}`, "request", "--amount", "10", "--period", "none"));
    const first = ok(await tollgate("budgets", "topup", `tenant:${tenant}`, "request", "--amount", "5", "--idempotency-key", "invoice-77"));
    expect(first.stdout).toBe(`Topped up the request credits of tenant:${tenant}: 15 in all, 15 remaining.\n`);
    const again = ok(await tollgate("budgets", "topup", `tenant:${tenant}`, "request", "--amount", "5", "--idempotency-key", "invoice-77"));
    expect(again.stdout).toBe(`Already topped up with key invoice-77: nothing added this time. The request credits of tenant:${tenant} then: 15 in all, 15 remaining.\n`);
    // Without a key of its own each run is a new top-up.
    ok(await tollgate("budgets", "topup", `tenant:${tenant}`, "request", "--amount", "1"));
    ok(await tollgate("budgets", "topup", `tenant:${tenant}`, "request", "--amount", "1"));
    const after = jsonOut<{ budgets: { amount: number }[] }>(ok(await tollgate("budgets", "get", `tenant:${tenant}`, "--json")));
    expect(after.budgets).toEqual([expect.objectContaining({ amount: 17 })]);
    const conflict = await tollgate("budgets", "topup", `tenant:${tenant}`, "request", "--amount", "6", "--idempotency-key", "invoice-77");
    expect(conflict.code).toBe(1);
    expect(conflict.stderr).toMatch(/409/);
  });

  it("exits 1 with one line when the gateway refuses, and 2 on a usage error", async () => {
    const tenant = unique("cli-budget-bad");
    expect((await adminCall("PUT", `/tenants/${tenant}`, {})).status).toBe(201);
    ok(await tollgate("budgets", "put", `tenant:${tenant}`, "request", "--amount", "5", "--period", "day"));
    const periodic = await tollgate("budgets", "topup", `tenant:${tenant}`, "request", "--amount", "5");
    expect(periodic.code).toBe(1);
    expect(periodic.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(periodic.stderr).toMatch(/category/);
    const unknown = await tollgate("budgets", "get", `tenant:${unique("nobody")}`);
    expect(unknown.code).toBe(1);
    for (const args of [["budgets", "get", "team:x"], ["budgets", "put", `tenant:${tenant}`, "request", "--amount", "1.5", "--period", "day"], ["budgets", "put", `tenant:${tenant}`, "request", "--amount", "1", "--period", "year"], ["budgets"]]) {
      const result = await tollgate(...args);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
    }
  });
});
