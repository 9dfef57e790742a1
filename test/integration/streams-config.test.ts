// The stream fields of TOLLGATE — strict, bounded, with
// named defaults — and the built-in stream_rent limit.
import { describe, expect, it } from "vitest";
import { DEFAULT_STREAM_RENT_PERIOD_S, DEFAULT_STREAMS_PER_CREDENTIAL, MAX_STREAM_RENT_PERIOD_S, MAX_STREAMS_PER_CREDENTIAL, parseConfig } from "../../src/config";
import { resolveLimits } from "../../src/engine/resolve-limits";
import { chargedSubjects } from "../../src/limits/charged-subjects";
import { categoryCharges, MESSAGE_CATEGORY, STREAM_RENT_CATEGORY } from "../../src/limits/stream-charges";

describe("streams config", () => {
  it("defaults to rent every 60 s and 100 streams per credential", () => {
    const parsed = parseConfig({});
    expect(parsed.ok && parsed.config.streams).toEqual({ rentPeriodMs: DEFAULT_STREAM_RENT_PERIOD_S * 1000, perCredential: DEFAULT_STREAMS_PER_CREDENTIAL });
    expect([DEFAULT_STREAM_RENT_PERIOD_S, DEFAULT_STREAMS_PER_CREDENTIAL]).toEqual([60, 100]);
  });

  it("accepts whole seconds from 1 and a bounded count", () => {
    const parsed = parseConfig({ streams: { rent_period_s: 1, per_credential: 1 } });
    expect(parsed.ok && parsed.config.streams).toEqual({ rentPeriodMs: 1000, perCredential: 1 });
    const largest = parseConfig({ streams: { rent_period_s: MAX_STREAM_RENT_PERIOD_S, per_credential: MAX_STREAMS_PER_CREDENTIAL } });
    expect(largest.ok).toBe(true);
  });

  it.each<[unknown, string]>([
    [{ rent_period_s: 0 }, "streams.rent_period_s"],
    [{ rent_period_s: 0.5 }, "streams.rent_period_s"],
    [{ rent_period_s: 1.5 }, "streams.rent_period_s"],
    [{ rent_period_s: MAX_STREAM_RENT_PERIOD_S + 1 }, "streams.rent_period_s"],
    [{ rent_period_s: "60" }, "streams.rent_period_s"],
    [{ per_credential: 0 }, "streams.per_credential"],
    [{ per_credential: 2.5 }, "streams.per_credential"],
    [{ per_credential: MAX_STREAMS_PER_CREDENTIAL + 1 }, "streams.per_credential"],
    [{ per_credentials: 5 }, "streams.per_credentials"],
  ])("refuses streams %j naming %s", (streams, field) => {
    const parsed = parseConfig({ streams });
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.field).toBe(field);
  });
});

describe("stream limits", () => {
  it("has a built-in stream_rent limit of 120 per 60 s for keys, JWT callers and addresses, and none per tenant", () => {
    for (const kind of ["key", "jwt", "ip"] as const) {
      const limits = resolveLimits(STREAM_RENT_CATEGORY, kind, {});
      expect(limits).toHaveLength(1);
      expect(limits[0]).toMatchObject({ count: 120, windowS: 60 });
    }
    expect(resolveLimits(STREAM_RENT_CATEGORY, "tenant", {})).toEqual([]);
  });

  it("has no built-in message limit: an anonymous caller's message charges carry none", () => {
    const charges = categoryCharges(chargedSubjects({ kind: "anonymous", callerKey: "ip:192.0.2.1", override: null }, {}), MESSAGE_CATEGORY, 1);
    expect(charges.every((c) => c.limits.length === 0)).toBe(true);
  });
});
