// Caller operations: explain — which limits apply to a caller,
// from which source, and where it stands under each in this isolate — and
// reset — forget its limiter state. A key's record and the caller's
// override are read from D1 (what is stored now); a tenant's limits and the
// blocks come through this isolate's caches (what this isolate enforces: a
// write made through another isolate shows here within `cache_ttl_s`, one
// made through this one at once); the state is this isolate's limiter
// table. Explain charges nothing.
//
// Reset forgets the caller's own subject only: resetting `ip:A` leaves the
// `anonymous` aggregate every address shares, and resetting a key or JWT
// caller leaves its tenant's subject (isolate table and ledger alike). A
// shared subject is reset by naming it: `tenant:<slug>` or `anonymous`.
import type { Context, Hono } from "hono";
import { keyRecordOf } from "../cache/key-cache";
import { compileStoredKeyLimits } from "../cache/stored-limits";
import type { Config } from "../config";
import { insertAuditEvent } from "../db/audit";
import { getBlock } from "../db/blocks";
import { database } from "../db/client";
import { findKeyById } from "../db/keys";
import { getOverride } from "../db/overrides";
import type { KeyLimits } from "../engine/resolve-limits";
import { parseIp } from "../engine/cidr";
import { type ApplicableLimit, applicableLimits, explainLimits, resetLimits } from "../limits/explain";
import { type ChargedSubject, chargedSubjects } from "../limits/charged-subjects";
import { LIMITS_UNAVAILABLE_RETRY_AFTER_S } from "../limits/rate-limit";
import { problem } from "../errors";
import type { AdminEnv } from "./admin-env";
import { adminAuditSubject } from "./audit-subject-key";
import { callerBudgets } from "./budget-reads";
import { parseCallerKey } from "./caller-keys";
import { keyNotFound, tenantNotFound } from "./not-found";
import { presentBlock, presentOverride } from "./present";
import { stored } from "./storage";

type Ctx = Context<AdminEnv>;

/** A caller as explain sees it: its subjects, its tenant, and the policy keys that may name it. */
interface Described {
  readonly callerKey: string;
  readonly tenant: string | null;
  readonly subjects: readonly ChargedSubject[];
  /** Block targets that would refuse this caller, most specific first. */
  readonly blockTargets: readonly string[];
  /** The parsed address, for network blocks. */
  readonly ip: ReturnType<typeof parseIp>;
}

type Describe = { ok: true; caller: Described } | { ok: false; response: Response };

async function describe(c: Ctx, callerKey: string, override: KeyLimits | null, config: Config, nowMs: number): Promise<Describe> {
  const defaults = config.defaults;
  const db = database(c.env.DB);
  const colon = callerKey.indexOf(":");
  const kind = callerKey.slice(0, colon);
  const value = callerKey.slice(colon + 1);
  switch (kind) {
    case "key": {
      const row = await stored(() => findKeyById(db, value));
      if (row === null) return { ok: false, response: keyNotFound(value) };
      const record = keyRecordOf(row, row.digest, config.defaultScope);
      const tenant = record.tenant;
      // Charged as the gateway charges it: the same subjects and sources (src/limits/rate-limit.ts).
      const subjects = chargedSubjects({ kind: "key", keyId: record.keyId, callerKey, digest: record.digest, tenant, override, keyLimits: record.keyLimits }, defaults);
      return { ok: true, caller: { callerKey, tenant: tenant.slug, subjects, blockTargets: [callerKey, `tenant:${tenant.slug}`], ip: null } };
    }
    case "tenant": {
      const tenant = await stored(() => c.get("runtime").tenants.lookup(() => db, value, nowMs));
      if (tenant === null) return { ok: false, response: tenantNotFound(value) };
      return { ok: true, caller: { callerKey, tenant: value, subjects: [{ kind: "tenant", subject: callerKey, sources: { tenant: tenant.limits, defaults } }], blockTargets: [callerKey], ip: null } };
    }
    case "anonymous":
      // The aggregate every anonymous address shares: named only by itself.
      return { ok: true, caller: { callerKey, tenant: null, subjects: [{ kind: "anonymous", subject: ANONYMOUS, sources: { defaults } }], blockTargets: [], ip: null } };
    case "jwt":
      // The tenant of a JWT caller is named by each token's claim: not known from the caller key alone.
      return { ok: true, caller: { callerKey, tenant: null, subjects: chargedSubjects({ kind: "jwt", callerKey, tenant: null, override }, defaults), blockTargets: [callerKey], ip: null } };
    default: {
      const subjects = chargedSubjects({ kind: "anonymous", callerKey, override }, defaults);
      return { ok: true, caller: { callerKey, tenant: null, subjects, blockTargets: [callerKey], ip: parseIp(value.endsWith("/64") ? value.slice(0, -3) : value) } };
    }
  }
}

interface Resolved {
  readonly caller: Described;
  readonly limits: readonly ApplicableLimit[];
  readonly overrideRow: Awaited<ReturnType<typeof getOverride>>;
}

async function resolve(c: Ctx, raw: string | undefined, nowMs: number): Promise<{ ok: true; value: Resolved } | { ok: false; response: Response }> {
  let callerKey: string = ANONYMOUS;
  if (raw !== ANONYMOUS) {
    // A refused address appears in the traffic lists as its keyed digest (`hmac:<hex>`); this isolate remembers the digests it wrote.
    const digested = typeof raw === "string" && /^hmac:[0-9a-f]{64}$/.test(raw) ? c.get("runtime").traffic.callerOf(raw) : undefined;
    if (digested === null) return { ok: false, response: problem("not_found", { detail: "This digest names no caller this isolate counted recently: explain it by its address (ip:<address>) or try again from the console's traffic view." }) };
    const parsed = parseCallerKey(digested ?? raw, "caller_key", ["ip", "key", "jwt", "tenant"]);
    if (!parsed.ok) return parsed;
    callerKey = parsed.value;
  }
  const db = database(c.env.DB);
  // Only an active override applies; a tenant or the anonymous aggregate is never overridden.
  const overrideRow = callerKey.startsWith("tenant:") || callerKey === ANONYMOUS ? null : await stored(() => getOverride(db, callerKey));
  const active = overrideRow !== null && (overrideRow.expiresAt === null || overrideRow.expiresAt > nowMs);
  // As stored: every isolate applies it within cache_ttl_s.
  const override = active ? compileStoredKeyLimits(overrideRow.limits, "caller_overrides.limits of an override", c.get("config").defaultScope) : null;
  const described = await describe(c, callerKey, override, c.get("config"), nowMs);
  if (!described.ok) return described;
  return { ok: true, value: { caller: described.caller, limits: applicableLimits(c.get("config"), described.caller.subjects), overrideRow } };
}

async function blockOf(c: Ctx, caller: Described, nowMs: number) {
  const db = database(c.env.DB);
  const policy = await c.get("runtime").policy.load(() => db, nowMs);
  let active = null;
  for (const target of caller.blockTargets) {
    active = policy.blockOf(target, nowMs);
    if (active !== null) break;
  }
  if (active === null && caller.ip !== null) active = policy.netBlockOf(caller.ip, nowMs);
  if (active === null) return null;
  const id = active.id;
  const row = await stored(() => getBlock(db, id));
  return row === null ? null : presentBlock(row, nowMs);
}

/**
 * The routes whose charges are taken only when the origin's status matches
 * (`charge_on_status`): they apply to every caller, so explain names them
 * beside the limits of the categories they charge.
 */
function statusChargesOf(config: Config) {
  return config.routes.statusCharged.map((route) => ({ route: config.routePatterns[route.index] ?? null, charges: Object.fromEntries(route.charges), charge_on_status: route.statuses }));
}

const CALLER_ROUTE = "/callers/:caller_key{.+}";
/** The caller key of the aggregate all anonymous addresses share (`DELETE /callers/anonymous/state`). */
const ANONYMOUS = "anonymous";

export function registerCallerRoutes(app: Hono<AdminEnv>): void {
  app.delete(`${CALLER_ROUTE}/state`, async (c) => {
    const nowMs = Date.now();
    const resolved = await resolve(c, c.req.param("caller_key"), nowMs);
    if (!resolved.ok) return resolved.response;
    const { caller } = resolved.value;
    // The caller's own subject comes first (chargedSubjects); its tenant or the anonymous aggregate is shared and stays.
    const own = caller.subjects[0]!.subject;
    const limits = resolved.value.limits.filter((l) => l.subject === own);
    const runtime = c.get("runtime");
    const { held, ledgerStates, ledgers } = await resetLimits(runtime.limiter, c.env.LIMIT_LEDGER, runtime.leases, limits, nowMs);
    const db = database(c.env.DB);
    const subject = await adminAuditSubject(runtime, db, caller.callerKey, nowMs);
    const scope = ledgers === 0 ? "isolate" : "isolate+global";
    await stored(() =>
      insertAuditEvent(db, {
        atMs: nowMs,
        kind: "caller_state_reset",
        actor: c.get("role"),
        tenant: caller.tenant,
        subject,
        // `subjects`: exactly what was forgotten (the caller's own subject, as the audit names it), never a shared one.
        detail: { subjects: [subject], limits: limits.length, states_held: held, scope, ...(ledgers === 0 ? {} : { ledger_states_held: ledgerStates, ledger_reset: ledgerStates !== null }) },
      }).run(),
    );
    if (ledgerStates === null) {
      return problem("limits_unavailable", {
        detail: "This isolate's state was forgotten, but the ledger of a global limit could not be reset; retry (a reset is idempotent).",
        headers: { "retry-after": String(LIMITS_UNAVAILABLE_RETRY_AFTER_S) },
      });
    }
    return c.json({ caller: caller.callerKey, reset: true, limits: limits.length, states_held: held, ...(ledgers === 0 ? {} : { ledger_states_held: ledgerStates }) });
  });

  app.get(CALLER_ROUTE, async (c) => {
    const nowMs = Date.now();
    const resolved = await resolve(c, c.req.param("caller_key"), nowMs);
    if (!resolved.ok) return resolved.response;
    const { caller, limits, overrideRow } = resolved.value;
    const table = c.get("runtime").limiter;
    return c.json({
      caller: caller.callerKey,
      tenant: caller.tenant,
      limits: await explainLimits(table, c.env.LIMIT_LEDGER, limits, nowMs),
      override: overrideRow === null ? null : presentOverride(overrideRow, nowMs),
      block: await blockOf(c, caller, nowMs),
      budgets: await callerBudgets(c.env, database(c.env.DB), caller.callerKey, caller.tenant),
      status_charges: statusChargesOf(c.get("config")),
    });
  });
}
