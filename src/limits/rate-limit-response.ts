// The 429 rate_limited answer for a denied decision: problem+json with
// `category`, `retry_after_ms` and `violated-policies` (the names of the
// policies the request did not fit, as RateLimit-Policy names them: the
// draft's problem member), `Retry-After` in whole seconds rounded up, and the
// RateLimit headers. Never names the subject.
import type { Charge, Decision } from "../engine/gcra";
import { type HeaderVersion, rateLimitHeaders, retryAfterSeconds, violatedPolicies } from "../engine/rate-limit-headers";
import { problem } from "../errors";

export function rateLimitedResponse(decision: Decision, charges: readonly Charge[], version: HeaderVersion = "draft-11"): Response {
  const category = charges[decision.deniedChargeIndex]?.category ?? "request";
  const headers: [string, string][] = [];
  for (const [name, value] of rateLimitHeaders(decision, charges, version)) headers.push([name, value]);
  headers.push(["retry-after", String(retryAfterSeconds(decision.retryAfterMs))]);
  return problem("rate_limited", {
    detail: `Rate limit exceeded in category "${category}": the same request is admitted in ${decision.retryAfterMs} ms.`,
    extras: { category, retry_after_ms: decision.retryAfterMs, "violated-policies": violatedPolicies(decision, charges) },
    headers,
  });
}
