// GET /global/accuracy through the Worker: requests through two clocked
// gateways (two isolates) over the real LimitLedger, then the report read
// from the ledgers found through their directory — admitted units against
// the exact GCRA figure and the bound, refusals, calls per second; a key
// named by its id, an address never named; a leased budget's units held in
// leases and its refusals while another isolate held some; the auditor; bad
// parameters; an unreachable directory.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { boundUnits, leaseMsFor } from "../../src/engine/lease-types";
import { trafficFlushOptionsFor } from "../../src/limits/traffic";
import { compileLimit } from "../../src/engine/limit";
import { clockedGateway, eventually, gatewayRequest, problemOf, uniqueIp } from "../helpers";
import { adminCall, AUDITOR_TOKEN, jsonOf, tenantWithKey, testConfig } from "./admin-helpers";

const PER_MINUTE = { count: 120, window_s: 60, burst: 10, scope: "global" as const };
const KEY_LIMIT = { count: 600, window_s: 60, burst: 5, scope: "global" as const };

interface Limit {
  category: string;
  limit: { count: number; window_s: number; burst: number };
  lease_ms: number;
  admitted: number;
  exact: number;
  bound: number;
  within_bound: boolean;
  granted: number;
  given_back: number;
  asks: number;
  refused_asks: number;
  busiest_minute: { admitted: number; exact: number; bound: number; within_bound: boolean };
}
interface Ledger {
  caller: string | null;
  kind: string;
  tenant: string | null;
  explain: string | null;
  calls: number;
  calls_per_s: number;
  peak_calls_per_s: number;
  limits: Limit[];
}
interface BudgetFigures {
  owner: string;
  category: string;
  period: string;
  amount: number;
  used: number;
  held_in_leases: number;
  lease_grants: number;
  leased_units: number;
  refused: number;
  refused_while_held_elsewhere: number;
  counted_since: string;
}
interface Report {
  minutes: number;
  settings: { max_overshoot: number; min_lease_ms: number };
  ledgers_seen: number;
  unreachable: number;
  ledgers: Ledger[];
  budgets: BudgetFigures[];
}

const config = testConfig({
  categories: {
    admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } },
    request: { limits: { tenant: [PER_MINUTE], key: [KEY_LIMIT], ip: [{ count: 3, window_s: 60, scope: "global" }] } },
  },
});

describe("GET /global/accuracy", () => {
  it("reports each global limit's admitted units against the exact figure and the bound, with its ledger's calls, naming a key by its id and never an address", async () => {
    const { tenant, key, id } = await tenantWithKey(config, {}, "acc");
    const start = Date.now();
    const isolates = [clockedGateway(config, {}, start), clockedGateway(config, {}, start)];
    const keyed = () => gatewayRequest("/things", { ip: "198.51.100.80", headers: { authorization: `Bearer ${key}` } });
    let ok = 0;
    // One request at a time, alternating isolates, 10 ms apart: each ask is a single exact spend (too little traffic for a larger lease).
    for (let i = 0; i < 14; i++) {
      const gateway = isolates[i % 2]!;
      gateway.clock.nowMs = start + i * 10;
      if ((await gateway.call(keyed(), { settle: true })).status === 200) ok++;
    }
    // The key's burst (5) binds first.
    expect(ok).toBe(5);
    const ip = uniqueIp();
    for (let i = 0; i < 4; i++) await isolates[0]!.call(gatewayRequest("/things", { ip }), { settle: true });

    // Each ledger tells the directory in the background of its first grant.
    let report: Report = { minutes: 0, settings: { max_overshoot: 0, min_lease_ms: 0 }, ledgers_seen: 0, unreachable: 0, ledgers: [], budgets: [] };
    await eventually(async () => {
      report = await jsonOf<Report>(await adminCall("GET", "/global/accuracy?limit=200", config), 200);
      return [`key:${id}`, `tenant:${tenant}`].every((caller) => report.ledgers.some((l) => l.caller === caller)) && report.ledgers.some((l) => l.kind === "ip");
    }, "the key's, the tenant's and an address's ledgers in the report");
    expect(report.minutes).toBe(60);
    expect(report.settings).toEqual({ max_overshoot: 0.02, min_lease_ms: 50 });
    expect(report.unreachable).toBe(0);
    expect(JSON.stringify(report)).not.toContain(ip);

    const keyLedger = report.ledgers.find((l) => l.caller === `key:${id}`)!;
    expect(keyLedger).toMatchObject({ kind: "key", tenant, explain: `/_tollgate/admin/v1/callers/key%3A${id}` });
    const keyLimit = keyLedger.limits[0]!;
    const compiled = compileLimit(KEY_LIMIT);
    const leaseMs = leaseMsFor(compiled, 0.02, 50);
    // Every ask was a single spend, all of it spent: what the ledger granted is what was admitted.
    expect(keyLimit).toMatchObject({ category: "request", limit: { count: 600, window_s: 60, burst: 5 }, lease_ms: leaseMs, admitted: 5, granted: 5, given_back: 0, within_bound: true });
    expect(keyLimit.refused_asks).toBeGreaterThan(0);
    // The exact figure for the minutes with traffic (one or two whole minutes), and the bound L·C/W above it.
    expect([boundUnits(compiled, 60_000, 0), boundUnits(compiled, 120_000, 0)]).toContain(keyLimit.exact);
    expect(keyLimit.bound - keyLimit.exact).toBe(boundUnits(compiled, 0, leaseMs) - compiled.burst);
    expect(keyLimit.busiest_minute).toEqual({ at: expect.any(String), admitted: 5, exact: boundUnits(compiled, 60_000, 0), bound: boundUnits(compiled, 60_000, leaseMs), within_bound: true });
    expect(keyLedger.calls).toBeGreaterThanOrEqual(keyLimit.asks);
    expect(keyLedger.calls_per_s).toBeGreaterThan(0);
    expect(keyLedger.peak_calls_per_s).toBeGreaterThan(0);

    // The tenant's ledger was asked alongside the key's: units it granted to requests the key's limit then
    // refused sit unspent in a lease, and count as admitted until they go back (never under the truth).
    const tenantLedger = report.ledgers.find((l) => l.caller === `tenant:${tenant}`)!;
    expect(tenantLedger).toMatchObject({ kind: "tenant", tenant });
    expect(tenantLedger.limits[0]!.admitted).toBeGreaterThanOrEqual(5);
    expect(tenantLedger.limits[0]!.admitted).toBe(tenantLedger.limits[0]!.granted - tenantLedger.limits[0]!.given_back);
    expect(tenantLedger.limits[0]!.within_bound).toBe(true);

    // An address's ledger is there, unnamed.
    expect(report.ledgers.some((l) => l.kind === "ip" && l.caller === null && l.explain === null && l.limits[0]!.limit.count === 3)).toBe(true);
  });

  it("reports a leased budget's units held in leases and the refusals made while another isolate held some", async () => {
    const budgetConfig = testConfig();
    const { tenant, key } = await tenantWithKey(budgetConfig, {}, "accb");
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}/budgets/request`, budgetConfig, { body: { amount: 4, period: "none" } }), 201);
    const start = Date.now();
    const [a, b] = [clockedGateway(budgetConfig, {}, start), clockedGateway(budgetConfig, {}, start)];
    const keyed = () => gatewayRequest("/things", { ip: "198.51.100.81", headers: { authorization: `Bearer ${key}` } });
    // A: a lease of 1, then (its demand doubling) one of 2, of which it spends 1. B: the last unit, then a refusal while A holds one.
    const statuses: number[] = [];
    for (const [gateway, at] of [[a, 0], [a, 10], [b, 20], [b, 30]] as const) {
      gateway.clock.nowMs = start + at;
      statuses.push((await gateway.call(keyed(), { settle: true })).status);
    }
    expect(statuses).toEqual([200, 200, 200, 402]);
    for (const gateway of [a, b]) await gateway.runtime.traffic.flushNow(database(env.DB), gateway.clock.nowMs, trafficFlushOptionsFor(gateway.runtime, env as never, 86_400_000));

    const report = await jsonOf<Report>(await adminCall("GET", "/global/accuracy?limit=200", budgetConfig), 200);
    const budget = report.budgets.find((x) => x.owner === `tenant:${tenant}`);
    expect(budget).toEqual({
      owner: `tenant:${tenant}`,
      category: "request",
      period: "none",
      amount: 4,
      used: 4,
      // A's lease of 2, neither unit reported spent yet.
      held_in_leases: 2,
      lease_grants: 3,
      leased_units: 4,
      refused: 1,
      refused_while_held_elsewhere: 1,
      counted_since: expect.any(String),
    });
  });

  it("lets the auditor read, and names a bad parameter", async () => {
    expect((await adminCall("GET", "/global/accuracy?minutes=5&limit=1", config, { token: AUDITOR_TOKEN })).status).toBe(200);
    const openapi = await jsonOf<{ paths: Record<string, unknown> }>(await adminCall("GET", "/openapi.json", config), 200);
    expect(Object.keys(openapi.paths)).toContain("/global/accuracy");
    for (const [query, field] of [
      ["minutes=0", "minutes"],
      ["minutes=61", "minutes"],
      ["limit=201", "limit"],
      ["limit=x", "limit"],
      ["tenant=a", "tenant"],
    ]) {
      const res = await adminCall("GET", `/global/accuracy?${query}`, config);
      expect(res.status, query).toBe(400);
      expect((await problemOf(res)).field, query).toBe(field);
    }
  });

  it("answers 503 limits_unavailable with Retry-After when the directory cannot be read", async () => {
    const failing = {
      idFromName: (name: string) => env.LIMIT_LEDGER.idFromName(name),
      get: () => ({
        ledgers: () => {
          throw new Error("Durable Object reset because its code was updated.");
        },
      }),
    };
    const res = await adminCall("GET", "/global/accuracy", config, { env: { LIMIT_LEDGER: failing } });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    expect((await problemOf(res)).code).toBe("limits_unavailable");
  });
});
