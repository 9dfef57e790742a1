// Counting a request in the isolate's traffic rollups (GET /traffic), at its
// end, once its decision is final: two Map updates, no allocation for an
// admitted request. A refused one also names its caller for the heavy-hitter
// sketch: `key:<id>`, `jwt:<hex>`, or `ip:<address or /64>` held only in
// memory (written to D1 as a keyed digest, see src/db/traffic-recorder.ts).
import type { Bindings, Exchange, ExchangeRuntime } from "../exchange";
import { database } from "../db/client";
import type { TrafficFlushOptions } from "../db/traffic-recorder";
import { callerIdOf } from "../identity/caller-id";
import { auditSubject, isReadableSubject } from "../identity/audit-subject";
import { loggedDecision } from "../log/request-log";

const ADMITTED: ReadonlySet<string> = new Set(["admitted", "exempt", "off"]);
/** Decisions that are the gateway's own failure or the origin's, not a refusal of the caller. */
const FAILURES: ReadonlySet<string> = new Set(["origin_unreachable", "internal_error", "config_invalid"]);

/**
 * How a decision counts in GET /traffic: admitted (`shadow:<code>` would
 * have refused and did not), a failure of the gateway or origin, or a
 * refusal of the caller (everything else).
 */
export function decisionKind(decision: string): "admitted" | "failure" | "refused" {
  if (ADMITTED.has(decision) || decision.startsWith("shadow:")) return "admitted";
  return FAILURES.has(decision) ? "failure" : "refused";
}

/** The caller id the sketch counts for a refused request, or null when the request was not refused. */
export function refusedCallerOf(x: Exchange): string | null {
  if (decisionKind(x.decision) !== "refused") return null;
  return callerIdOf(x);
}

/**
 * Counts the request in this isolate's traffic rollups: by its decision
 * (`shadow:<code>` when it went on past a refusal only shadows would make),
 * and once per shadow policy that would have refused it, with its caller.
 */
export function countTraffic(x: Exchange, nowMs: number): void {
  const traffic = x.runtime.traffic;
  const tenant = x.tenant?.slug ?? null;
  traffic.count(nowMs, tenant, loggedDecision(x), refusedCallerOf(x));
  const marks = x.shadowPolicies;
  if (marks === null) return;
  const caller = callerIdOf(x);
  for (const mark of marks) traffic.countShadow(nowMs, tenant, mark.policy, mark.code, caller);
}

/** What a traffic flush needs: the retention, and the keyed digest of addresses (the audit subject, so GET /audit and the traffic lists name a caller alike). */
export function trafficFlushOptionsFor(runtime: Pick<ExchangeRuntime, "keyCheck" | "now">, env: Bindings, retentionMs: number): TrafficFlushOptions {
  return {
    retentionMs,
    digest: (callerKey) => callerSubject(runtime, env, runtime.now(), callerKey),
  };
}

/**
 * A caller key as the audit log names it (src/identity/audit-subject.ts):
 * `key:<id>` as it is, an address or JWT subject as its keyed digest (the
 * deployment's secret made on first use). Traffic, analytics, alerts and
 * sustained-refusal audit events all name one caller through it.
 */
export async function callerSubject(runtime: Pick<ExchangeRuntime, "keyCheck">, env: Bindings, nowMs: number, callerKey: string): Promise<string> {
  if (isReadableSubject(callerKey)) return callerKey;
  const key = await runtime.keyCheck.auditKey(database(env.DB), nowMs, true);
  if (key !== subjectsKey) {
    subjects.clear();
    subjectsKey = key;
  }
  const known = subjects.get(callerKey);
  if (known !== undefined) return known;
  const subject = await auditSubject(key!, callerKey);
  // Bounded by starting over, not by evicting one at a time (a Map steps over its deleted entries from the front).
  if (subjects.size >= MAX_REMEMBERED_SUBJECTS) subjects.clear();
  subjects.set(callerKey, subject);
  return subject;
}

/**
 * Digests this isolate computed lately, for the key they were computed with:
 * with an ANALYTICS binding every anonymous request names its address, and a
 * caller who keeps calling costs one HMAC, not one per request.
 */
const MAX_REMEMBERED_SUBJECTS = 4_096;
const subjects = new Map<string, string>();
let subjectsKey: CryptoKey | null = null;

/** The same, for the request that starts a flush. */
export function trafficFlushOptions(x: Exchange): TrafficFlushOptions {
  return trafficFlushOptionsFor(x.runtime, x.env, x.config.traffic.retentionMs);
}
