// @ts-check
// #/traffic?tenant=: who is being admitted and refused right now. Requests
// per minute by decision for the last hour and (in ten-minute steps) the
// last day, from GET /traffic, for all tenants or one (`anonymous` for
// requests without one); the callers refused most in the last hour, each
// linking to its explanation; what each shadow policy (a limit, budget or
// block tried with `shadow: true`) would have refused in the last hour, and
// whom; and the recent alerts with their delivery state and every attempt. Reading flushes the answering isolate's counts
// first, so the last minute is there; other isolates' arrive with their
// next flush.
import { detailFields, rawJson } from "../detail-fields.js";
import { el, formatCount, table, time } from "../dom.js";
import { field, input } from "../forms.js";
import { clockLabel, decisionClasses, kindOf, legend, stackedChart } from "../traffic-chart.js";
import { link, page, refused, searchForm, section, valueOf } from "../view.js";

/** @typedef {{ minute: string, admitted: number, refused: number, decisions: Record<string, number> }} Minute */
/** @typedef {{ from: string, to: string, minutes: Minute[] }} Series */
/** @typedef {{ caller: string, tenant: string | null, refused: number, overcount_at_most: number }} Refused */
/** @typedef {{ caller: string, tenant: string | null, would_refuse: number, overcount_at_most: number }} ShadowCaller */
/** @typedef {{ policy: string, would_refuse: number, decisions: Record<string, number>, tenants: Record<string, number>, callers: ShadowCaller[] }} ShadowPolicy */
/** @typedef {{ attempt: number, at: string, outcome: string, status: number | null }} Attempt */
/** @typedef {{ id: string, type: string, at: string, tenant: string | null, state: string, attempts: Attempt[], body: any }} Alert */
/** @typedef {import("../traffic-chart.js").Slot} Slot */

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** The day's chart in steps of this many minutes: 144 bars fit a page, 1,440 would not. */
const DAY_STEP_MINUTES = 10;
const TOP_REFUSED_MINUTES = 60;
const ALERTS_SHOWN = 20;

/** A delivery state's badge colour. */
const STATE_CLASS = /** @type {Record<string, string>} */ ({ delivered: "ok", pending: "warn", failed: "bad", expired: "bad" });

/**
 * The series in slots of `slotMs` from the answer's `from` (rounded down)
 * to its `to`: every slot present, empty ones too, so the time axis is even.
 * @param {Series} series
 * @param {number} slotMs
 * @returns {Slot[]}
 */
function slotsOf(series, slotMs) {
  const fromMs = Date.parse(series.from);
  const toMs = Date.parse(series.to);
  const firstMs = fromMs - (fromMs % slotMs);
  /** @type {Slot[]} */
  const slots = [];
  for (let startMs = firstMs; startMs < toMs; startMs += slotMs) slots.push({ startMs, admitted: 0, refused: 0, decisions: new Map() });
  for (const minute of series.minutes) {
    const slot = slots[Math.floor((Date.parse(minute.minute) - firstMs) / slotMs)];
    if (slot === undefined) continue;
    slot.admitted += minute.admitted;
    slot.refused += minute.refused;
    for (const [decision, n] of Object.entries(minute.decisions)) slot.decisions.set(decision, (slot.decisions.get(decision) ?? 0) + n);
  }
  return slots;
}

/**
 * Each decision's total over the series, in the order the bars stack:
 * admitted ones first, then refusals busiest first, then the gateway's own failures.
 * @param {Series} series
 * @returns {[string, number][]}
 */
function decisionTotals(series) {
  /** @type {Map<string, number>} */
  const totals = new Map();
  for (const minute of series.minutes) for (const [decision, n] of Object.entries(minute.decisions)) totals.set(decision, (totals.get(decision) ?? 0) + n);
  const rank = { admitted: 0, refused: 1, error: 2 };
  return [...totals.entries()].sort((a, b) => rank[kindOf(a[0])] - rank[kindOf(b[0])] || (a[0] === "admitted" ? -1 : b[0] === "admitted" ? 1 : 0) || b[1] - a[1] || a[0].localeCompare(b[0]));
}

/**
 * A chart of one series with its legend and headline figures.
 * @param {string} title
 * @param {Series} series
 * @param {number} slotMs
 */
function seriesFigure(title, series, slotMs) {
  const totals = decisionTotals(series);
  const classes = decisionClasses(totals.map(([d]) => d));
  const admitted = series.minutes.reduce((n, m) => n + m.admitted, 0);
  const refusedCount = series.minutes.reduce((n, m) => n + m.refused, 0);
  return el(
    "figure",
    { class: "chart-box" },
    el("figcaption", {}, el("span", { class: "figure", "data-admitted": admitted }, `${formatCount(admitted)} admitted`), " · ", el("span", { class: "figure", "data-refused": refusedCount }, `${formatCount(refusedCount)} refused`)),
    stackedChart({ title, slots: slotsOf(series, slotMs), order: totals.map(([d]) => d), classes, slotMs }),
    totals.length === 0 ? el("p", { class: "empty" }, "No requests counted in this time.") : legend(totals, classes),
  );
}

/**
 * The hour's minutes that saw requests, as a table (what the chart shows, in figures).
 * @param {Series} series
 */
function minuteTable(series) {
  const rows = [...series.minutes]
    .reverse()
    .map((m) => [`${clockLabel(Date.parse(m.minute))} UTC`, formatCount(m.admitted), formatCount(m.refused), Object.entries(m.decisions).map(([d, n]) => `${d} ${formatCount(n)}`).join(", ")]);
  return el("details", {}, el("summary", {}, "Figures by minute"), table("Requests by minute, newest first", ["Minute", "Admitted", "Refused", "By decision"], rows, "No requests counted in the last hour."));
}

/** @param {ReadonlyArray<Refused>} callers */
function topRefusedTable(callers) {
  const rows = callers.map((c) => [
    link(c.caller, "explain", { caller: c.caller }),
    c.tenant === null ? "—" : link(c.tenant, "traffic", { tenant: c.tenant }),
    formatCount(c.refused),
    c.overcount_at_most === 0 ? "exact" : `up to ${formatCount(c.overcount_at_most)}`,
  ]);
  return table("Callers refused most in the last hour", ["Caller (explain)", "Tenant", "Refused", "Overcount"], rows, "No caller refused in the last hour.");
}

/**
 * Each shadow policy with what it would have refused (by code and tenant) and
 * the callers it would have refused most, each linking to its explanation.
 * @param {ReadonlyArray<ShadowPolicy>} policies
 */
function shadowTable(policies) {
  const rows = policies.map((p) => [
    el("code", {}, p.policy),
    formatCount(p.would_refuse),
    Object.entries(p.decisions).map(([code, n]) => `${code} ${formatCount(n)}`).join(", "),
    // One element: a phone's card lays each of a cell's children out as a grid item.
    el("span", {}, Object.entries(p.tenants).map(([t, n]) => [t === "anonymous" ? t : link(t, "traffic", { tenant: t }), ` ${formatCount(n)}`]).flatMap((part, i) => (i === 0 ? part : [", ", ...part]))),
    p.callers.length === 0
      ? "—"
      : el(
          "ol",
          { class: "shadow-callers" },
          p.callers.map((c) => el("li", {}, link(c.caller, "explain", { caller: c.caller }), ` ${formatCount(c.would_refuse)}${c.overcount_at_most === 0 ? "" : ` (over by up to ${formatCount(c.overcount_at_most)})`}`)),
        ),
  ]);
  return table("Shadow policies, last hour", ["Policy", "Would refuse", "As", "By tenant", "Callers, most first (explain)"], rows, "No shadow policy would have refused anything in the last hour.");
}

/** @param {Attempt} a */
function attemptText(a) {
  return `#${a.attempt} ${clockLabel(Date.parse(a.at))} UTC · ${a.outcome}`;
}

/** @param {ReadonlyArray<Alert>} alerts */
function alertsTable(alerts) {
  const rows = alerts.map((a) => {
    const caller = typeof a.body?.caller === "string" ? a.body.caller : null;
    return [
      time(a.at),
      el("code", {}, a.type),
      a.tenant === null ? "—" : link(a.tenant, "traffic", { tenant: a.tenant }),
      el("span", { class: `badge ${STATE_CLASS[a.state] ?? "muted"}` }, a.state),
      a.attempts.length === 0 ? "none yet" : el("ol", { class: "attempts" }, a.attempts.map((t) => el("li", {}, attemptText(t)))),
      // The data as labelled values; the whole body the webhook got, exactly, folded beneath.
      el("div", { class: "alert-detail" }, caller === null ? null : el("p", { class: "caller" }, link(caller, "explain", { caller })), detailFields(a.body?.data ?? {}), rawJson(a.body ?? null, "Raw JSON (as sent)")),
    ];
  });
  return table("Recent alerts, newest first", ["Raised", "Type", "Tenant", "State", "Attempts", "Detail"], rows, "No alerts. They are sent only when alerts.webhook_url is set.");
}

/** @type {import("../view.js").View} */
export async function trafficView(ctx) {
  const tenant = ctx.query.get("tenant") ?? "";
  const form = searchForm(
    "Traffic of a tenant",
    (f) => ctx.go(`#/traffic${valueOf(f, "tenant") === "" ? "" : `?${new URLSearchParams({ tenant: valueOf(f, "tenant") })}`}`),
    field("Tenant", input("tenant", { value: tenant, placeholder: "all tenants, or anonymous" }), { field: "tenant", hint: "A tenant's slug, or anonymous for requests without one." }),
    el("div", { class: "actions" }, el("button", { type: "submit" }, "Show traffic")),
  );
  const title = tenant === "" ? "Traffic" : `Traffic of ${tenant}`;
  const nowMs = Date.now();
  /** @type {[Series, Series, { callers: Refused[] }, { alerts: Alert[] }, { policies: ShadowPolicy[] }]} */
  let answers;
  try {
    const scope = tenant === "" ? undefined : tenant;
    // The hour first: its read flushes this isolate's counts, which the day's read then includes.
    const hour = await ctx.api.get("/traffic", { from: new Date(nowMs - HOUR_MS).toISOString(), to: new Date(nowMs).toISOString(), tenant: scope });
    answers = [
      hour,
      ...(await Promise.all([
        ctx.api.get("/traffic", { from: new Date(nowMs - DAY_MS).toISOString(), to: new Date(nowMs).toISOString(), tenant: scope }),
        ctx.api.get("/traffic/top-refused", { minutes: String(TOP_REFUSED_MINUTES) }),
        ctx.api.get("/alerts", { limit: String(ALERTS_SHOWN) }),
        ctx.api.get("/traffic/shadow", { minutes: String(TOP_REFUSED_MINUTES) }),
      ])),
    ];
  } catch (error) {
    if (refused(ctx, title, form, error)) return;
    throw error;
  }
  const [hour, day, top, alerts, shadow] = answers;
  ctx.show(
    page(
      ctx,
      title,
      form,
      el(
        "p",
        { class: "meta" },
        "Counted in each isolate and written to the database with metering; this page's read writes the answering isolate's counts first. As of ",
        time(hour.to),
        ". ",
        el("button", { type: "button", class: "link", onclick: () => ctx.reload() }, "Refresh"),
      ),
      section("Last hour, per minute", seriesFigure("Last hour", hour, MINUTE_MS), minuteTable(hour)),
      section(`Last day, per ${DAY_STEP_MINUTES} minutes`, seriesFigure("Last day", day, DAY_STEP_MINUTES * MINUTE_MS)),
      section(
        "Callers refused most, last hour",
        el("p", { class: "hint" }, "Across all tenants. Each isolate keeps its 64 most refused callers a minute, so a count may be over by at most what is shown. An address appears only as its digest (hmac:…), which explain accepts."),
        topRefusedTable(top.callers),
      ),
      section(
        "Shadow policies, last hour",
        el("p", { class: "hint" }, "Limits, budgets and blocks tried with shadow: they refuse nothing; this is what each would have refused, and whom. Across all tenants. Switch one on by setting it again without shadow: it enforces from the state it kept."),
        shadowTable(shadow.policies),
      ),
      section("Recent alerts", alertsTable(alerts.alerts)),
    ),
  );
}
