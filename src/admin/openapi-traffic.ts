// The OpenAPI paths of traffic and alerts: GET /traffic, GET /traffic/top-refused, GET /traffic/shadow, GET /alerts.
import { COMMON_ERRORS, type Json, jsonContent, op, problemResponse } from "./openapi-parts";
import { TENANT_SLUG } from "./schemas";
import { DEFAULT_ALERTS_PAGE, DEFAULT_TOP_REFUSED_MINUTES, MAX_ALERTS_PAGE, MAX_TOP_REFUSED_MINUTES, MAX_TRAFFIC_SPAN_DAYS, SHADOW_TOP_CALLERS, TOP_REFUSED_LIMIT } from "./traffic";

const iso: Json = { type: "string", format: "date-time" };
const minute: Json = {
  type: "object",
  properties: {
    minute: iso,
    admitted: { type: "integer", description: "admitted, exempt, off and shadow decisions" },
    refused: { type: "integer", description: "refusals of the caller (every other decision but origin_unreachable, internal_error and config_invalid)" },
    decisions: { type: "object", additionalProperties: { type: "integer" }, description: "requests by decision: admitted, exempt, a refusal's code, shadow:<code>" },
  },
};

export function trafficPaths(): Json {
  return {
    "/traffic": {
      get: op(
        "Requests per UTC minute by decision, summed over isolates (each isolate flushes with metering; this read first flushes its own). Minutes with no request are left out.",
        { "200": { description: "the series", content: jsonContent({ type: "object", properties: { from: iso, to: iso, tenant: { type: ["string", "null"] }, minutes: { type: "array", items: minute } } }) }, "400": problemResponse("invalid_request: `from`, `to` or `tenant`"), ...COMMON_ERRORS },
        {
          parameters: [
            { name: "from", in: "query", description: "ISO 8601 with a zone; default an hour before `to`", schema: iso },
            { name: "to", in: "query", description: `ISO 8601 with a zone, after \`from\`, at most ${MAX_TRAFFIC_SPAN_DAYS} days after it; default now`, schema: iso },
            { name: "tenant", in: "query", description: "one tenant, or `anonymous` for requests without one; default all", schema: { type: "string", pattern: `${TENANT_SLUG.source}|^anonymous$` } },
          ],
        },
      ),
    },
    "/traffic/top-refused": {
      get: op(
        `The ${TOP_REFUSED_LIMIT} callers refused most in the last \`minutes\`, from each isolate's heavy-hitter sketch: \`refused\` is at most \`overcount_at_most\` above the truth. Callers are explain-able ids (an address as its keyed digest \`hmac:<hex>\`, which explain accepts on an isolate that counted it).`,
        {
          "200": {
            description: "the callers",
            content: jsonContent({ type: "object", properties: { minutes: { type: "integer" }, since: iso, callers: { type: "array", items: { type: "object", properties: { caller: { type: "string" }, tenant: { type: ["string", "null"] }, refused: { type: "integer" }, overcount_at_most: { type: "integer" }, explain: { type: "string" } } } } } }),
          },
          "400": problemResponse("invalid_request: `minutes`"),
          ...COMMON_ERRORS,
        },
        { parameters: [{ name: "minutes", in: "query", schema: { type: "integer", minimum: 1, maximum: MAX_TOP_REFUSED_MINUTES, default: DEFAULT_TOP_REFUSED_MINUTES } }] },
      ),
    },
    "/traffic/shadow": {
      get: op(
        `What each shadow policy (a limit, budget or block with \`shadow: true\`) would have refused in the last \`minutes\`, summed over isolates: how many requests, by code and tenant, and the ${SHADOW_TOP_CALLERS} callers it would have refused most (explain-able ids; an address as its keyed digest). Policies are named as RateLimit-Policy names them (\`request-key-60s\`), \`budget-<category>-<owner kind>-<period>\` for a budget, \`block-<id>\` or \`penalty:<policy>\` for a block.`,
        {
          "200": {
            description: "the shadow policies, the one that would have refused most first",
            content: jsonContent({
              type: "object",
              properties: {
                minutes: { type: "integer" },
                since: iso,
                policies: {
                  type: "array",
                  items: {
                    type: "object",
                    properties: {
                      policy: { type: "string" },
                      would_refuse: { type: "integer" },
                      decisions: { type: "object", additionalProperties: { type: "integer" }, description: "requests by the code it would have answered" },
                      tenants: { type: "object", additionalProperties: { type: "integer" }, description: "requests by tenant (`anonymous` for none)" },
                      callers: { type: "array", items: { type: "object", properties: { caller: { type: "string" }, tenant: { type: ["string", "null"] }, would_refuse: { type: "integer" }, overcount_at_most: { type: "integer" }, explain: { type: "string" } } } },
                    },
                  },
                },
              },
            }),
          },
          "400": problemResponse("invalid_request: `minutes`"),
          ...COMMON_ERRORS,
        },
        { parameters: [{ name: "minutes", in: "query", schema: { type: "integer", minimum: 1, maximum: MAX_TOP_REFUSED_MINUTES, default: DEFAULT_TOP_REFUSED_MINUTES } }] },
      ),
    },
    "/alerts": {
      get: op(
        "The newest alerts sent to alerts.webhook_url, each with its state (pending, delivered, failed: the webhook answered a 4xx other than 408/429, expired: still failing 24 h after it was raised) and every delivery attempt",
        {
          "200": {
            description: "the alerts",
            content: jsonContent({
              type: "object",
              properties: {
                alerts: {
                  type: "array",
                  items: {
                    type: "object",
                    properties: {
                      id: { type: "string" },
                      type: { type: "string", enum: ["quota.soft_exceeded", "quota.hard_exceeded", "budget.threshold", "rate_limit.sustained", "block.hit", "ledger.unavailable"] },
                      at: iso,
                      tenant: { type: ["string", "null"] },
                      state: { type: "string", enum: ["pending", "delivered", "failed", "expired"] },
                      attempts: { type: "array", items: { type: "object", properties: { attempt: { type: "integer" }, at: iso, outcome: { type: "string" }, status: { type: ["integer", "null"] } } } },
                      body: { type: "object", description: "what the webhook receives" },
                    },
                  },
                },
              },
            }),
          },
          "400": problemResponse("invalid_request: `limit`"),
          ...COMMON_ERRORS,
        },
        { parameters: [{ name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: MAX_ALERTS_PAGE, default: DEFAULT_ALERTS_PAGE } }] },
      ),
    },
  };
}
