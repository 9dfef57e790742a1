// The request-log line is written field by field for speed; it
// must be exactly the text JSON.stringify gives for the RequestLogLine object
// in every case: each caller kind, shadow decisions, strings that need
// escaping, a body size or none.
import { describe, expect, it } from "vitest";
import type { Caller, TenantInfo } from "../../src/exchange";
import { loggedDecision, REQUEST_LOG_FORMAT_VERSION, type RequestLogLine, requestLogLine } from "../../src/log/request-log";
import { exchangeFor, runtimeOf } from "../helpers";
import { testConfig } from "../integration/admin-helpers";

const runtime = runtimeOf(testConfig({}));

function reference(x: ReturnType<typeof exchangeFor>, status: number, bytesOut: number | null, nowMs: number): string {
  const caller = x.caller;
  const line: RequestLogLine = {
    level: "info",
    event: "request",
    format_version: REQUEST_LOG_FORMAT_VERSION,
    at_unix_ms: x.startedAtMs,
    tenant: x.tenant?.slug ?? null,
    key_id: caller.kind === "key" ? caller.keyId : null,
    method: x.method,
    path: x.path,
    status,
    decision: loggedDecision(x),
    duration_ms: nowMs - x.startedAtMs,
    bytes_in: x.declaredBytes ?? 0,
    bytes_out: bytesOut,
  };
  if (x.ledgerError) line.ledger_error = true;
  if (x.shadowPolicies !== null) line.shadow_policies = x.shadowPolicies.map((m) => ({ policy: m.policy, code: m.code }));
  return JSON.stringify(line);
}

function tenant(slug: string): TenantInfo {
  return { slug, limits: null, quota: null, org: null };
}

const callers: [string, Caller][] = [
  ["anonymous", { kind: "anonymous", callerKey: "ip:203.0.113.7", override: null }],
  ["a key", { kind: "key", keyId: "abcdefghjkmn", callerKey: "key:abcdefghjkmn", digest: "0".repeat(64), tenant: tenant("acme"), override: null, keyLimits: null }],
  ["a JWT with a tenant", { kind: "jwt", callerKey: `jwt:${"a".repeat(64)}`, tenant: tenant("org-7"), override: null }],
  ["a JWT without one", { kind: "jwt", callerKey: `jwt:${"b".repeat(64)}`, tenant: null, override: null }],
  ["a tenant slug that needs escaping", { kind: "key", keyId: "k\"\\\n\u2028", callerKey: "key:x", digest: "1".repeat(64), tenant: tenant('we"ird\\\u0001'), override: null, keyLimits: null }],
];

describe("requestLogLine", () => {
  for (const [name, caller] of callers) {
    it(`writes the same text as JSON.stringify for ${name}`, () => {
      for (const [path, init] of [
        ["/v1/items", { method: "GET" }],
        ["/objects/%22quoted%22/\u00e9", { method: "PUT", headers: { "content-length": "256" }, body: "x".repeat(256) }],
      ] as const) {
        const x = exchangeFor(runtime, new Request(`https://gateway.test${path}?q=secret`, init));
        x.caller = caller;
        for (const [status, bytesOut, decision, shadow, ledgerError, policies] of [
          [200, 2, "admitted", null, false, null],
          [200, null, "admitted", ["rate_limited"], false, null],
          [429, 313, "rate_limited", null, false, null],
          [200, 2, "admitted", null, true, null],
          [502, null, "origin_unreachable", null, false, null],
          [200, 2, "admitted", null, false, [{ code: "rate_limited", policy: "request-key-60s" }, { code: "blocked", policy: "penalty:request-ip-5s" }]],
          [200, 2, "admitted", null, true, [{ code: "budget_exhausted", policy: "budget-tokens-tenant-month" }]],
        ] as const) {
          x.decision = decision;
          x.shadow = shadow === null ? null : [...shadow];
          x.ledgerError = ledgerError;
          x.shadowPolicies = policies === null ? null : [...policies];
          const line = requestLogLine(x, status, bytesOut, x.startedAtMs + 17);
          expect(line).toBe(reference(x, status, bytesOut, x.startedAtMs + 17));
          expect(JSON.parse(line)).not.toHaveProperty("q");
          // A request only shadow policies would have refused is logged as their first refusal.
          if (policies !== null) expect(JSON.parse(line).decision).toBe(`shadow:${policies[0]!.code}`);
        }
      }
    });
  }
});
