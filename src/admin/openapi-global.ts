// The OpenAPI path of GET /global/accuracy.
import { DEFAULT_ACCURACY_LEDGERS, DEFAULT_ACCURACY_MINUTES, MAX_ACCURACY_LEDGERS, MAX_ACCURACY_MINUTES } from "./global-accuracy";
import { COMMON_ERRORS, type Json, jsonContent, op, problemResponse } from "./openapi-parts";

const iso: Json = { type: "string", format: "date-time" };
const int: Json = { type: "integer" };
const measured = (what: string): Json => ({
  admitted: { type: "integer", description: `units ${what}: granted in leases less those given back (every admitted unit is in it; a unit that expired unspent without going back too)` },
  exact: { type: "integer", description: "what one exact GCRA admits at most over the same span: B + Δ·C/W" },
  bound: { type: "integer", description: "the published bound: the exact figure + L·C/W" },
  within_bound: { type: "boolean" },
});
const limit: Json = {
  type: "object",
  properties: {
    category: { type: "string" },
    limit: { type: "object", properties: { count: int, window_s: { type: "number" }, burst: int } },
    lease_ms: { type: "integer", description: "L: global.max_overshoot × W, at least global.min_lease_ms" },
    ...measured("admitted in the minutes with traffic (Δ: from `from` to the end of its last minute)"),
    granted: int,
    given_back: int,
    asks: int,
    refused_asks: int,
    from: iso,
    busiest_minute: { type: "object", properties: { at: iso, ...measured("admitted in its busiest minute (Δ = 60 s)") } },
  },
};
const ledger: Json = {
  type: "object",
  properties: {
    caller: { type: ["string", "null"], description: "key:<id>, tenant:<slug>, jwt:<hex>, anonymous; null for an address (never named) or a key deleted since" },
    kind: { type: "string", enum: ["key", "tenant", "jwt", "anonymous", "ip", "other"] },
    tenant: { type: ["string", "null"] },
    explain: { type: ["string", "null"], description: "the caller's explain path (null when it is not named)" },
    calls: { type: "integer", description: "calls the ledger served in the span" },
    calls_per_s: { type: "number", description: "calls over the span from its first call in it (at least a minute)" },
    peak_calls_per_s: { type: "integer", description: "the most calls it served in one second (by its callers' clocks)" },
    limits: { type: "array", items: limit },
  },
};

export function globalPaths(): Json {
  return {
    "/global/accuracy": {
      get: op(
        "How close global limits stayed to exact in the last `minutes`, from the ledgers' own records: per ledger with traffic (busiest first, at most `limit`), its calls per second and, per global limit, the units admitted against the exact GCRA's figure and the published bound, over the span and in the busiest minute. Ledgers are found through the directory every ledger with calls registers with every 10 minutes.",
        {
          "200": {
            description: "the report",
            content: jsonContent({
              type: "object",
              properties: {
                minutes: int,
                since: iso,
                to: iso,
                settings: { type: "object", properties: { max_overshoot: { type: "number" }, min_lease_ms: int } },
                ledgers_seen: { type: "integer", description: "ledgers with calls in the span, listed or not" },
                ledgers_read: int,
                unreachable: { type: "integer", description: "listed ledgers that did not answer (left out)" },
                ledgers: { type: "array", items: ledger },
                budgets: { type: "array", description: "leased budgets: units held in leases and refusals made while units were held elsewhere (empty while budgets do not lease)", items: { type: "object" } },
              },
            }),
          },
          "400": problemResponse("invalid_request: `minutes` or `limit`"),
          ...COMMON_ERRORS,
          "503": problemResponse("limits_unavailable: the directory of ledgers could not be read (Retry-After); admin_unavailable or admin_disabled"),
        },
        {
          parameters: [
            { name: "minutes", in: "query", schema: { type: "integer", minimum: 1, maximum: MAX_ACCURACY_MINUTES, default: DEFAULT_ACCURACY_MINUTES } },
            { name: "limit", in: "query", description: "ledgers read at most", schema: { type: "integer", minimum: 1, maximum: MAX_ACCURACY_LEDGERS, default: DEFAULT_ACCURACY_LEDGERS } },
          ],
        },
      ),
    },
  };
}
