// The 429's answer is written from text serialised once (problemWriter), not
// built as an object per answer: it must be what problem() writes, member for
// member, header for header, whatever the decision.
import { describe, expect, it } from "vitest";
import { admit, type Charge } from "../../src/engine/gcra";
import { compileLimits } from "../../src/engine/limit";
import { LimiterTable } from "../../src/engine/limiter-table";
import { type HeaderVersion, rateLimitHeaders, retryAfterSeconds, violatedPolicies } from "../../src/engine/rate-limit-headers";
import { problem } from "../../src/errors";
import { rateLimitedResponse } from "../../src/limits/rate-limit-response";

function reference(decision: ReturnType<typeof admit>, charges: readonly Charge[], version: HeaderVersion): Response {
  const category = charges[decision.deniedChargeIndex]?.category ?? "request";
  const headers: [string, string][] = rateLimitHeaders(decision, charges, version).map(([name, value]): [string, string] => [name, value]);
  headers.push(["retry-after", String(retryAfterSeconds(decision.retryAfterMs))]);
  return problem("rate_limited", {
    detail: `Rate limit exceeded in category "${category}": the same request is admitted in ${decision.retryAfterMs} ms.`,
    extras: { category, retry_after_ms: decision.retryAfterMs, "violated-policies": violatedPolicies(decision, charges) },
    headers,
  });
}

describe("the 429 rate_limited answer", () => {
  it("is what problem() writes, for denials by one limit or several, in every header version", async () => {
    let checked = 0;
    for (const version of ["draft-11", "draft-12"] as HeaderVersion[]) {
      for (const [category, tenantCount] of [
        ["request", 3],
        ["uploads_v2", 1],
        ['odd "quoted" \\ name', 2],
      ] as const) {
        const table = new LimiterTable(1, { seed: 7 });
        const charges: Charge[] = [
          { subject: "key:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", category, limits: compileLimits([{ count: 2, window_s: 1, burst: 2 }]), cost: 1 },
          { subject: "tenant:acme", category, limits: compileLimits([{ count: tenantCount, window_s: 60 }]), cost: 1 },
        ];
        let nowMs = 1_000;
        for (let i = 0; i < 6; i++, nowMs += 7) {
          const decision = admit(table, charges, nowMs);
          if (decision.allowed) continue;
          const fast = rateLimitedResponse(decision, charges, version);
          const slow = reference(decision, charges, version);
          expect(fast.status).toBe(429);
          expect(await fast.text()).toBe(await slow.text());
          expect([...fast.headers]).toEqual([...slow.headers]);
          checked += 1;
        }
      }
    }
    expect(checked).toBeGreaterThan(15);
  });
});
