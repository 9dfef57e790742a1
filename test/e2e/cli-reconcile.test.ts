// `tollgate usage reconcile [--apply]` against the real Worker under
// `wrangler dev`: uploads through the gateway are metered into D1, a metering
// row is removed on purpose (`wrangler d1 execute --local`, as an operator
// would), and the CLI reports the drift (exit 1), applies it (exit 0: one
// adjustment row, audited, visible in the export) and finds nothing the
// second time (exit 0).
//
// The D1 is shared by every e2e file, and a tenant that uploads shows drift
// until its meter flushes (up to usage.flush_interval_s = 1 s here): every
// --apply is scoped to this file's tenant with --tenant, so no other file's
// passing drift is ever corrected.
import { describe, expect, it } from "vitest";
import { type CliResult, gatewayEnv, jsonOut, runCli, tableRows, tollgate } from "./cli-run";
import { adminCall, d1Execute, gateway, unique } from "./fixture";

interface ExportRow {
  tenant: string;
  period: string;
  metric: string;
  value: number;
  status: string;
}

interface Report {
  metric: string;
  apply: boolean;
  checked: number;
  drifting: number;
  tenants: Array<{ tenant: string; status: string; metered_bytes: number; quota_bytes: number | null; drift_bytes: number | null }>;
  next_cursor: null;
}

async function exported(tenant: string): Promise<ExportRow[]> {
  const res = await fetch(`${gateway().gatewayUrl}/_tollgate/admin/v1/usage/export?format=ndjson&tenant=${tenant}`, {
    headers: { authorization: `Bearer ${gateway().adminToken}` },
  });
  expect(res.status).toBe(200);
  return (await res.text()).split("\n").filter(Boolean).map((line) => JSON.parse(line) as ExportRow);
}

async function meteredBytesStored(tenant: string): Promise<number | undefined> {
  return (await exported(tenant)).find((row) => row.metric === "bytes_stored")?.value;
}

/**
 * Sends a request with the key now and then until the export shows `bytes`
 * stored for the tenant: the meter flushes on the first request after its
 * interval, so a quiet tenant's last upload would otherwise stay pending.
 */
async function untilMetered(tenant: string, key: string, bytes: number): Promise<void> {
  const deadlineMs = Date.now() + 30_000;
  while (Date.now() < deadlineMs) {
    if ((await meteredBytesStored(tenant)) === bytes) return;
    await fetch(`${gateway().gatewayUrl}/flush`, { headers: { authorization: `Bearer ${key}` } });
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  throw new Error(`bytes_stored of ${tenant} did not reach ${bytes} in D1 within 30 s`);
}

function expectDrift(result: CliResult, count: number): void {
  expect(result.code, result.stderr).toBe(1);
  expect(result.stderr).toBe(`error: drift in ${count} tenant(s), each older than the metering flush interval; run 'tollgate usage reconcile --apply' to append adjustment rows\n`);
}

describe("tollgate usage reconcile", () => {
  it("reports a removed metering row (exit 1), applies one adjustment (exit 0), and finds no drift the second time (exit 0)", async () => {
    const tenant = unique("rec");
    expect((await adminCall("PUT", `/tenants/${tenant}`, {})).status).toBe(201);
    const { key } = (await adminCall("POST", `/tenants/${tenant}/keys`, { name: "rec" })).body as { key: string };
    for (const [object, bytes] of [["a.bin", 100], ["b.bin", 250]] as const) {
      const res = await fetch(`${gateway().gatewayUrl}/objects/${tenant}-${object}`, { method: "PUT", headers: { authorization: `Bearer ${key}` }, body: new Uint8Array(bytes) });
      expect(res.status).toBe(200);
    }
    await untilMetered(tenant, key, 350);

    // Metering agrees with the quota object.
    const agreed = await tollgate("usage", "reconcile", "--tenant", tenant);
    expect(agreed).toEqual({ code: 0, stdout: "No drift: metering agrees with the quota objects of all 1 tenant(s) checked.\n", stderr: "" });

    // A metering row lost: the month's bytes_stored.
    await d1Execute(`DELETE FROM usage_monthly WHERE tenant = '${tenant}' AND metric = 'bytes_stored'`);
    expect(await meteredBytesStored(tenant)).toBeUndefined();

    const found = await tollgate("usage", "reconcile", "--tenant", tenant);
    expectDrift(found, 1);
    expect(found.stdout.split("\n")[0]).toMatch(/^TENANT\s+STATUS\s+METERED BYTES\s+QUOTA BYTES\s+DRIFT BYTES$/);
    expect(tableRows(found.stdout)).toEqual([[tenant, "drift", "0", "350", "350"], ["Checked 1 tenant(s): 1 drifting."]]);
    const foundJson = await tollgate("usage", "reconcile", "--tenant", tenant, "--json");
    expectDrift(foundJson, 1);
    expect(jsonOut<Report>(foundJson)).toEqual({
      metric: "bytes_stored",
      apply: false,
      checked: 1,
      drifting: 1,
      tenants: [{ tenant, status: "drift", metered_bytes: 0, quota_bytes: 350, drift_bytes: 350 }],
      next_cursor: null,
    });

    // Every tenant, every page: this one is among the drifting ones (others may be mid-flush).
    const everyone = await tollgate("usage", "reconcile", "--json");
    expect(everyone.code).toBe(1);
    const all = jsonOut<Report>(everyone);
    expect(all.checked).toBeGreaterThanOrEqual(1);
    expect(all.tenants).toContainEqual({ tenant, status: "drift", metered_bytes: 0, quota_bytes: 350, drift_bytes: 350 });

    // The auditor may read the export but not reconcile, not even a dry run (it is a POST).
    const auditor = await runCli(["usage", "reconcile", "--tenant", tenant], { env: gatewayEnv("auditor") });
    expect(auditor.code).toBe(1);
    expect(auditor.stderr).toMatch(/^error: admin_forbidden \(403\)/);

    const applied = await tollgate("usage", "reconcile", "--tenant", tenant, "--apply");
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stderr).toBe("");
    expect(tableRows(applied.stdout)).toEqual([[tenant, "adjusted", "0", "350", "350"], ["Checked 1 tenant(s): 1 drifting, 1 adjustment row(s) appended."]]);

    const again = await tollgate("usage", "reconcile", "--tenant", tenant, "--apply", "--json");
    expect(again.code, again.stderr).toBe(0);
    expect(jsonOut<Report>(again)).toEqual({ metric: "bytes_stored", apply: true, checked: 1, drifting: 0, tenants: [], next_cursor: null });
    expect((await tollgate("usage", "reconcile", "--tenant", tenant)).code).toBe(0);

    // The adjustment is a row of its own (the metering rows stay as they were), summed into the month's export figure.
    const [adjustments] = await d1Execute(`SELECT period, metric, value, attribution FROM usage_adjustments WHERE tenant = '${tenant}'`);
    const period = new Date().toISOString().slice(0, 7);
    expect(adjustments).toEqual([{ period, metric: "bytes_stored", value: 350, attribution: "reconciliation" }]);
    expect((await exported(tenant)).find((row) => row.metric === "bytes_stored")).toEqual({ tenant, period, metric: "bytes_stored", value: 350, status: "provisional" });
    const audit = (await adminCall("GET", `/audit?tenant=${tenant}&kind=usage_reconciled`)).body as { events: Array<{ actor: string; detail: Record<string, unknown> }> };
    expect(audit.events).toHaveLength(1);
    expect(audit.events[0]).toMatchObject({ actor: "admin", detail: { metric: "bytes_stored", metered_bytes: 0, quota_bytes: 350, adjustment: 350, attribution: "reconciliation" } });
  });

  it("exits 1 for --tenant naming no tenant, rather than report that nothing drifts", async () => {
    const nobody = unique("nobody");
    const result = await tollgate("usage", "reconcile", "--tenant", nobody);
    expect(result).toEqual({ code: 1, stdout: "", stderr: `error: no tenant named ${nobody}: nothing was checked\n` });
  });

  it("exits 2 for a bad flag and 1 for a tenant slug the API refuses", async () => {
    const bad = await tollgate("usage", "reconcile", "--aply");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error: unknown option '--aply'/);
    const refused = await tollgate("usage", "reconcile", "--tenant", "Not A Slug");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error: invalid_request \(400\): tenant/);
  });
});
