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

const budget: Json = {
  type: "object",
  properties: {
    owner: { type: "string", description: "key:<id>, tenant:<slug> or org:<slug>" },
    category: { type: "string" },
    period: { type: "string", enum: ["day", "week", "month", "none"] },
    amount: int,
    used: { type: "integer", description: "spent this period, the units leased to isolates included" },
    held_in_leases: { type: "integer", description: "units isolates hold in live leases and have not reported spent" },
    lease_grants: { type: "integer", description: "leases granted in the span" },
    leased_units: { type: "integer", description: "units those leases carried" },
    refused: { type: "integer", description: "asks refused in the span (the budget could not give what waited)" },
    refused_while_held_elsewhere: { type: "integer", description: "of those, refused while other isolates held units of the budget in live leases" },
    counted_since: { type: "string", format: "date-time", description: "the object counts in memory: from the span's start, or from when it last started if later" },
  },
};

export function globalPaths(): Json {
  return {
    "/global/accuracy": {
      get: op(
        "How close global limits and leased budgets stayed to exact in the last `minutes`, from the objects' own records: per ledger with traffic (busiest first, at most `limit`), its calls per second and, per global limit, the units admitted against the exact GCRA's figure and the published bound, over the span and in the busiest minute; per leased budget (of the `limit` busiest quota objects holding budgets), the units held in leases and the refusals made while other isolates held units. Ledgers are found through the directory every ledger with calls registers with every 10 minutes.",
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
                budget_objects_read: int,
                budget_objects_unreachable: { type: "integer", description: "quota objects that did not answer (their budgets left out)" },
                budgets: { type: "array", description: "budgets with lease grants or refusals in the span, those refused while units were held elsewhere first", items: budget },
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
