// The 429 rate_limited answer for a denied decision: problem+json with
// `category`, `retry_after_ms` and `violated-policies` (the names of the
// policies the request did not fit, as RateLimit-Policy names them: the
// draft's problem member), `Retry-After` in whole seconds rounded up, and the
// RateLimit headers. Never names the subject.
import type { Charge, Decision } from "../engine/gcra";
import { deniedPolicies, type HeaderVersion, retryAfterSeconds } from "../engine/rate-limit-headers";
import { problemWriter } from "../errors";

const writeRateLimited = problemWriter("rate_limited");

/** The answer, written as problem() would write it (a test compares them) without building its body as an object first. */
export function rateLimitedResponse(decision: Decision, charges: readonly Charge[], version: HeaderVersion = "draft-11"): Response {
  const category = charges[decision.deniedChargeIndex]?.category ?? "request";
  const retryAfterMs = decision.retryAfterMs;
  const denied = deniedPolicies(decision, charges, version);
  const headers: Record<string, string> = {};
  for (const [name, value] of denied.headers) headers[name.toLowerCase()] = value;
  headers["retry-after"] = String(retryAfterSeconds(retryAfterMs));
  const categoryJson = JSON.stringify(category);
  return writeRateLimited(
    `Rate limit exceeded in category "${category}": the same request is admitted in ${retryAfterMs} ms.`,
    `,"category":${categoryJson},"retry_after_ms":${retryAfterMs},"violated-policies":${JSON.stringify(denied.violated)}`,
    headers,
  );
}
