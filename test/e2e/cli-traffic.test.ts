// `tollgate traffic`, `tollgate top-refused` and `tollgate alerts` against
// the Worker under wrangler dev: refusals made through the gateway come back
// with the counts GET /traffic answers, as a table and as --json; the caller
// refused most is one `tollgate explain` accepts; alerts show their state
// and attempts; the auditor token reads all three; the API's refusals exit 1.
import { describe, expect, it } from "vitest";
import { type CliResult, gatewayEnv, jsonOut, runCli, tableRows, tollgate } from "./cli-run";
import { adminCall } from "./fixture";
import { insertAlert, makeRefusals, refusalsRecorded, type TrafficMinute } from "./traffic-arrange";

function expectDone(result: CliResult): void {
  expect(result.code, result.stderr).toBe(0);
  expect(result.stderr).toBe("");
}

describe("tollgate traffic", () => {
  it("prints a tenant's requests per minute by decision, as the API counts them, as a table and as --json", async () => {
    const made = await makeRefusals("cli-traffic", 2, 5);
    const minutes = await refusalsRecorded(made);

    const json = await tollgate("traffic", "--tenant", made.tenant, "--json");
    expectDone(json);
    const answer = jsonOut<{ tenant: string; from: string; to: string; minutes: TrafficMinute[] }>(json);
    expect(answer.tenant).toBe(made.tenant);
    expect(answer.minutes).toEqual(minutes);
    expect(Date.parse(answer.to) - Date.parse(answer.from)).toBe(3_600_000);

    const table = await tollgate("traffic", "--tenant", made.tenant);
    expectDone(table);
    expect(table.stdout.split("\n")[0]).toMatch(/^MINUTE\s+ADMITTED\s+REFUSED\s+DECISIONS$/);
    const rows = tableRows(table.stdout.split("\n\n")[0] ?? "");
    expect(rows).toEqual(minutes.map((m) => [m.minute.replace(":00.000Z", "Z"), String(m.admitted), String(m.refused), expect.stringContaining("rate_limited")]));
    expect(table.stdout).toMatch(new RegExp(`\\n2 admitted, 5 refused for ${made.tenant} from \\S+ to \\S+\\.\\n$`));

    // A day back, with a duration for --from: the same requests.
    const day = jsonOut<{ from: string; minutes: TrafficMinute[] }>(await tollgate("traffic", "--tenant", made.tenant, "--from", "24h", "--json"));
    expect(day.minutes).toEqual(minutes);
    expect(Date.now() - Date.parse(day.from)).toBeGreaterThan(23.9 * 3_600_000);
  });

  it("says when there is nothing in the range, and passes on the API's refusal with exit 1", async () => {
    const quiet = await tollgate("traffic", "--tenant", "anonymous", "--from", "2020-01-01T00:00:00Z", "--to", "2020-01-01T01:00:00Z");
    expect(quiet).toEqual({ code: 0, stdout: "No requests counted for anonymous from 2020-01-01T00:00Z to 2020-01-01T01:00Z.\n", stderr: "" });

    const refused = await tollgate("traffic", "--tenant", "Not_A_Slug");
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toMatch(/^error: invalid_request \(400\): tenant: .*\n$/);
  });
});

describe("tollgate top-refused", () => {
  it("lists the caller refused most with its count, a caller explain accepts", async () => {
    const made = await makeRefusals("cli-top", 1, 12);
    await refusalsRecorded(made);
    const api = (await adminCall("GET", "/traffic/top-refused?minutes=10")).body as { callers: Array<{ caller: string; refused: number }> };
    expect(api.callers.find((c) => c.caller === made.caller)?.refused).toBe(12);

    const json = jsonOut<{ minutes: number; callers: Array<{ caller: string; tenant: string; refused: number; overcount_at_most: number }> }>(await tollgate("top-refused", "--minutes", "10", "--json"));
    expect(json.minutes).toBe(10);
    expect(json.callers.find((c) => c.caller === made.caller)).toMatchObject({ tenant: made.tenant, refused: 12, overcount_at_most: 0 });

    const table = await tollgate("top-refused", "--minutes", "10");
    expectDone(table);
    expect(table.stdout.split("\n")[0]).toMatch(/^CALLER\s+TENANT\s+REFUSED\s+OVERCOUNT$/);
    expect(tableRows(table.stdout.split("\n\n")[0] ?? "")).toContainEqual([made.caller, made.tenant, "12", "0"]);
    expect(table.stdout).toMatch(/\nWhy one is refused: tollgate explain <caller>\n$/);

    const explained = await tollgate("explain", made.caller, "--json");
    expectDone(explained);
    expect(jsonOut(explained)).toMatchObject({ caller: made.caller, tenant: made.tenant });
  });
});

describe("tollgate alerts", () => {
  it("lists recent alerts with their state and attempts, every attempt in --json", async () => {
    const made = await makeRefusals("cli-alerts", 1, 1);
    const retried = await insertAlert({ type: "quota.soft_exceeded", tenant: made.tenant, caller: made.caller, state: "delivered", attempts: [{ outcome: "http_503", status: 503 }, { outcome: "timeout", status: null }, { outcome: "delivered", status: 200 }] });
    const pending = await insertAlert({ type: "ledger.unavailable", tenant: made.tenant, caller: made.caller, state: "pending", attempts: [] });

    const json = jsonOut<{ alerts: Array<{ id: string; state: string; attempts: unknown[]; body: { id: string } }> }>(await tollgate("alerts", "--limit", "200", "--json"));
    expect(json.alerts.find((a) => a.id === retried.id)).toMatchObject({
      state: "delivered",
      body: { id: retried.id },
      attempts: [{ attempt: 1, outcome: "http_503", status: 503 }, { attempt: 2, outcome: "timeout", status: null }, { attempt: 3, outcome: "delivered", status: 200 }],
    });

    const table = await tollgate("alerts", "--limit", "200");
    expectDone(table);
    expect(table.stdout.split("\n")[0]).toMatch(/^RAISED\s+TYPE\s+TENANT\s+STATE\s+ATTEMPTS\s+ID$/);
    const rows = tableRows(table.stdout);
    expect(rows).toContainEqual([expect.any(String), "quota.soft_exceeded", made.tenant, "delivered", "3 (http_503, timeout, delivered)", retried.id]);
    expect(rows).toContainEqual([expect.any(String), "ledger.unavailable", made.tenant, "pending", "0", pending.id]);
  });
});

describe("reading traffic with the auditor token", () => {
  it("runs all three commands", async () => {
    for (const args of [["traffic"], ["top-refused"], ["alerts", "--limit", "1"]]) {
      const result = await runCli([...args, "--json"], { env: gatewayEnv("auditor") });
      expectDone(result);
      expect(jsonOut(result)).toBeTypeOf("object");
    }
  });
});
