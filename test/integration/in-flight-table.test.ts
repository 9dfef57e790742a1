// The in-flight bounds at their edges, on the table and the slot a request
// takes: the isolate's budget admits exactly that many, and a slot released
// twice (a refusal path and the body's end both releasing) frees one slot,
// not another request's.
import { describe, expect, it } from "vitest";
import { InFlightTable, inFlightBounds, takeSlot } from "../../src/limits/in-flight";
import { exchangeFor, gatewayRequest, runtimeOf, uniqueIp } from "../helpers";
import { testConfig } from "./admin-helpers";

describe("the in-flight table", () => {
  it("holds exactly in_flight.budget requests of the isolate, and one more once one ends", () => {
    const table = new InFlightTable();
    const limits = { budget: 3, perCredential: 10, perTenant: 10 };
    expect(["ip:a", "ip:b", "ip:c", "ip:d"].map((c) => table.tryAcquire(c, null, limits))).toEqual([true, true, true, false]);
    table.release("ip:b", null);
    expect(table.tryAcquire("ip:d", null, limits)).toBe(true);
    expect(table.total).toBe(3);
  });

  it("bounds one tenant at tenant_share of the budget and one credential at the tighter of its count and credential_share", () => {
    expect(inFlightBounds({ budget: 100, perCredential: 512, credentialShare: 0.25, tenantShare: 0.5 })).toEqual({ budget: 100, perCredential: 25, perTenant: 50 });
    expect(inFlightBounds({ budget: 4096, perCredential: 10, credentialShare: 0.25, tenantShare: 0.5 })).toEqual({ budget: 4096, perCredential: 10, perTenant: 2048 });
  });

  it("frees one slot when a request's release runs twice", () => {
    const runtime = runtimeOf(testConfig());
    const table = new InFlightTable();
    const bounds = { budget: 10, perCredential: 10, perTenant: 10 };
    const ip = uniqueIp();
    const first = exchangeFor(runtime, gatewayRequest("/a", { ip }), { clientKey: ip });
    const second = exchangeFor(runtime, gatewayRequest("/b", { ip }), { clientKey: ip });
    expect(takeSlot(first, table, bounds)).toBe(true);
    expect(takeSlot(second, table, bounds)).toBe(true);
    const credential = first.caller.callerKey;
    expect(table.countOf(credential)).toBe(2);
    first.releaseSlot!();
    first.releaseSlot!();
    expect(table.countOf(credential)).toBe(1);
    expect(table.total).toBe(1);
  });
});
