import { describe, expect, it } from "vitest";
import { PROBLEMS, type ProblemCode, problem } from "../../src/errors";

// docs/design.md: the status of every code.
const EXPECTED: Record<ProblemCode, number> = {
  invalid_request: 400,
  invalid_path: 400,
  ambiguous_credential: 400,
  credential_required: 401,
  invalid_credential: 401,
  credential_revoked: 401,
  credential_expired: 401,
  admin_unauthorized: 401,
  quota_exceeded: 403,
  admin_forbidden: 403,
  blocked: 403,
  tenant_unknown: 403,
  not_found: 404,
  conflict: 409,
  length_required: 411,
  request_too_large: 413,
  rate_limited: 429,
  too_many_in_flight: 429,
  too_many_streams: 429,
  auth_failures: 429,
  config_invalid: 500,
  internal_error: 500,
  origin_unreachable: 502,
  quota_unavailable: 503,
  auth_unavailable: 503,
  admin_disabled: 503,
  admin_unavailable: 503,
  limits_unavailable: 503,
  budget_exhausted: 429,
  credits_exhausted: 402,
  budget_unavailable: 503,
  policy_unavailable: 503,
};

describe("problem+json", () => {
  it("maps every code to its status", () => {
    expect(Object.fromEntries(Object.entries(PROBLEMS).map(([code, info]) => [code, info.status]))).toEqual(EXPECTED);
  });

  it.each(Object.keys(EXPECTED) as ProblemCode[])("writes %s as RFC 9457 with code and hint", async (code) => {
    const res = problem(code, { detail: "Something specific." });
    expect(res.status).toBe(EXPECTED[code]);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ type: `https://tollgate.dev/problems/${code}`, status: EXPECTED[code], detail: "Something specific.", code });
    expect(typeof body.title).toBe("string");
    expect(typeof body.hint).toBe("string");
    expect((body.hint as string).length).toBeGreaterThan(10);
  });

  it("adds extension members but never lets them replace the standard ones", async () => {
    const res = problem("rate_limited", { detail: "d", extras: { category: "request", retry_after_ms: 1834, status: 200, code: "x" }, headers: { "retry-after": "2" } });
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ status: 429, code: "rate_limited", category: "request", retry_after_ms: 1834 });
    expect(res.headers.get("retry-after")).toBe("2");
  });
});
