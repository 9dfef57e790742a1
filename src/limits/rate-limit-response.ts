// The 429 rate_limited answer for a denied decision: problem+json with
// `category` and `retry_after_ms`, `Retry-After` in whole seconds rounded up,
// and the RateLimit headers of the denying limit. Never names the subject.
import type { Charge, Decision } from "../engine/gcra";
import { rateLimitHeaders, retryAfterSeconds } from "../engine/rate-limit-headers";
import { problem } from "../errors";

export function rateLimitedResponse(decision: Decision, charges: readonly Charge[]): Response {
  const category = charges[decision.deniedChargeIndex]?.category ?? "request";
  const headers: [string, string][] = [];
  for (const [name, value] of rateLimitHeaders(decision, charges)) headers.push([name, value]);
  headers.push(["retry-after", String(retryAfterSeconds(decision.retryAfterMs))]);
  return problem("rate_limited", {
    detail: `Rate limit exceeded in category "${category}": the same request is admitted in ${decision.retryAfterMs} ms.`,
    extras: { category, retry_after_ms: decision.retryAfterMs },
    headers,
  });
}
