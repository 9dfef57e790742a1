// Workers Analytics Engine (optional): with an `ANALYTICS` dataset binding,
// one data point per request, written at its end with writeDataPoint (no
// I/O on the request: the runtime sends the points in the background).
//
//   index1  the tenant, or `anonymous`
//   blob1   decision (`admitted`, `exempt`, a refusal's code, `shadow:<code>`)
//   blob2   category: the route's first charged category, else `request`
//   blob3   route pattern (`PUT /objects/:object`), or "" for no route
//   blob4   caller id: `key:<id>`, `jwt:<hex>`, or an address's keyed digest
//           `hmac:<hex>` (never the address); "" when unknown
//   double1 status, double2 bytes in, double3 bytes out, double4 duration
//           ms, double5 cost (1 `request` + the route's charges)
//
// An address's digest needs one HMAC, which is async: that point is written
// from waitUntil once the digest is known. docs/operations.md has the SQL.
import type { Exchange } from "../exchange";
import { ANONYMOUS_TENANT } from "../engine/traffic-counts";
import { keepAlive } from "../utils/wait-until";
import { callerIdOf } from "../identity/caller-id";
import { callerSubject } from "./traffic";

/** What a Workers Analytics Engine dataset binding offers (declared here: wrangler types only sees bindings wrangler.toml names). */
export interface AnalyticsDataset {
  writeDataPoint(point: { indexes?: string[]; blobs?: (string | null)[]; doubles?: number[] }): void;
}

function datasetOf(env: object): AnalyticsDataset | null {
  const binding = (env as { ANALYTICS?: unknown }).ANALYTICS;
  return typeof binding === "object" && binding !== null && typeof (binding as AnalyticsDataset).writeDataPoint === "function" ? (binding as AnalyticsDataset) : null;
}

/** Writes the request's data point when the Worker has an ANALYTICS binding. Never throws. */
export function writeAnalytics(x: Exchange, status: number, bytesOut: number | null, nowMs: number): void {
  const dataset = datasetOf(x.env);
  if (dataset === null) return;
  const route = x.route;
  const category = route !== null && route.charges.length > 0 ? route.charges[0]![0] : "request";
  let cost = 1;
  if (route !== null) for (const [, n] of route.charges) cost += n;
  const pattern = route === null ? "" : (x.config.routePatterns[route.index] ?? "");
  const point = (caller: string) => ({
    indexes: [x.tenant?.slug ?? ANONYMOUS_TENANT],
    blobs: [x.decision, category, pattern, caller],
    doubles: [status, x.declaredBytes ?? 0, bytesOut ?? 0, nowMs - x.startedAtMs, cost],
  });
  const write = (caller: string) => {
    try {
      dataset.writeDataPoint(point(caller));
    } catch {
      // Analytics is optional: a full or broken dataset never fails a request.
    }
  };
  const callerKey = callerIdOf(x);
  if (callerKey === null) {
    write("");
    return;
  }
  if (!callerKey.startsWith("ip:")) {
    write(callerKey);
    return;
  }
  const runtime = x.runtime;
  const env = x.env;
  keepAlive(
    x.ctx,
    (async () => {
      try {
        write(await callerSubject(runtime, env, nowMs, callerKey));
      } catch {
        write("");
      }
    })(),
  );
}
