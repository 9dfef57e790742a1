// @ts-check
// #/usage?tenant=&from=&to=: metered usage by month from the chargeback
// export (NDJSON), drawn as bar charts; with a tenant, its live quota gauges
// too. Without one, a chart of requests per tenant.
import { seg } from "../api.js";
import { barChart, quotaGauges } from "../charts.js";
import { el, formatBytes, formatCount, table } from "../dom.js";
import { field, input } from "../forms.js";
import { link, page, refused, searchForm, section, tenantPicker, valueOf } from "../view.js";

/** @typedef {{ tenant: string, period: string, metric: string, value: number, status: string }} Row */

const METRICS = /** @type {const} */ ([
  ["requests", "Requests", formatCount],
  ["bytes_in", "Bytes received", formatBytes],
  ["bytes_stored", "Bytes stored (net change in the month)", formatBytes],
]);
/** What the metered figures are, next to each chart: they are written from each isolate in the background. */
const METERED_NOTE = "Metered: the last minute or so may not be counted yet (usage.flush_interval_s); the current month is provisional.";
/** Tenants charted at once without a tenant filter, busiest first. */
const MAX_TENANT_CHARTS = 12;
/** Months shown by default: this one and the eleven before. */
const DEFAULT_MONTHS = 12;

/** @param {number} index months since year 0 */
function periodAt(index) {
  return `${String(Math.floor(index / 12)).padStart(4, "0")}-${String((index % 12) + 1).padStart(2, "0")}`;
}

/** @param {string} period YYYY-MM */
function indexOf(period) {
  return Number(period.slice(0, 4)) * 12 + Number(period.slice(5, 7)) - 1;
}

/**
 * Every month from `from` to `to`, both included (none when the range is backwards or bad).
 * @param {string} from
 * @param {string} to
 */
function periodsBetween(from, to) {
  const periods = [];
  for (let i = indexOf(from); i <= indexOf(to) && periods.length <= 240; i += 1) periods.push(periodAt(i));
  return periods;
}

/** @param {string} text */
function parseNdjson(text) {
  /** @type {Row[]} */
  const rows = [];
  for (const line of text.split("\n")) if (line.trim() !== "") rows.push(JSON.parse(line));
  return rows;
}

/**
 * @param {ReadonlyArray<Row>} rows
 * @param {ReadonlyArray<string>} periods
 * @param {string} metric
 */
function seriesOf(rows, periods, metric) {
  const byPeriod = new Map(rows.filter((r) => r.metric === metric).map((r) => [r.period, r.value]));
  return periods.map((p) => byPeriod.get(p) ?? 0);
}

/**
 * @param {ReadonlyArray<Row>} rows
 * @param {ReadonlyArray<string>} periods
 */
function tenantCharts(rows, periods) {
  const figures = periods.map((p) => [p, ...METRICS.map(([metric, , format]) => format(rows.find((r) => r.period === p && r.metric === metric)?.value ?? 0))]);
  return el(
    "div",
    {},
    METRICS.map(([metric, label, format]) => el("figure", { class: "chart-box" }, el("figcaption", {}, label), barChart({ title: label, periods, values: seriesOf(rows, periods, metric), format, whole: true }))),
    el("details", {}, el("summary", {}, "Figures by month"), table("Usage by month", ["Month", ...METRICS.map(([, label]) => label)], figures)),
  );
}

/**
 * @param {ReadonlyArray<Row>} rows
 * @param {ReadonlyArray<string>} periods
 * @param {{ from: string, to: string }} range
 */
function allTenantCharts(rows, periods, range) {
  /** @type {Map<string, Row[]>} */
  const byTenant = new Map();
  for (const row of rows) byTenant.set(row.tenant, [...(byTenant.get(row.tenant) ?? []), row]);
  const total = (/** @type {Row[]} */ list) => list.filter((r) => r.metric === "requests").reduce((sum, r) => sum + r.value, 0);
  const busiest = [...byTenant.entries()].sort((a, b) => total(b[1]) - total(a[1])).slice(0, MAX_TENANT_CHARTS);
  if (busiest.length === 0) return el("p", { class: "empty" }, "No usage metered in these months.");
  // One scale for every tenant's chart, so the bars compare across tenants.
  const scaleMax = Math.max(0, ...busiest.flatMap(([, list]) => seriesOf(list, periods, "requests")));
  return el(
    "div",
    { class: "chart-grid" },
    el("p", { class: "hint" }, `${byTenant.size > busiest.length ? `The ${busiest.length} busiest of ${byTenant.size} tenants, ` : "Every tenant "}on one scale. ${METERED_NOTE}`),
    busiest.map(([tenant, list]) =>
      el(
        "figure",
        { class: "chart-box" },
        el("figcaption", {}, link(tenant, "usage", { tenant, ...range }), ": requests"),
        barChart({ title: `Requests of ${tenant}`, periods, values: seriesOf(list, periods, "requests"), format: formatCount, small: true, whole: true, scaleMax }),
      ),
    ),
  );
}

/** @type {import("../view.js").View} */
export async function usageView(ctx) {
  const now = new Date();
  const current = indexOf(`${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, "0")}`);
  const tenant = ctx.query.get("tenant") ?? "";
  const from = ctx.query.get("from") || periodAt(current - DEFAULT_MONTHS + 1);
  const to = ctx.query.get("to") || periodAt(current);
  const form = searchForm(
    "Usage range",
    (f) => ctx.go(`#/usage?${new URLSearchParams({ tenant: valueOf(f, "tenant"), from: valueOf(f, "from"), to: valueOf(f, "to") })}`),
    el(
      "div",
      { class: "row" },
      field("Tenant", tenantPicker(ctx, "tenant", tenant, { placeholder: "all tenants" }), { field: "tenant" }),
      field("From month", input("from", { type: "month", value: from }), { field: "from" }),
      field("To month", input("to", { type: "month", value: to }), { field: "to" }),
    ),
    el("div", { class: "actions" }, el("button", { type: "submit" }, "Show usage")),
  );
  const range = { from, to };
  let body;
  try {
    const text = await ctx.api.text("/usage/export", { format: "ndjson", from, to, tenant: tenant || undefined });
    const rows = parseNdjson(text);
    const periods = periodsBetween(from, to);
    if (tenant === "") {
      body = section("Requests per tenant by month", allTenantCharts(rows, periods, range));
    } else {
      const usage = await ctx.api.get(`/tenants/${seg(tenant)}/usage`);
      body = el(
        "div",
        {},
        section(
          "Quota use now",
          el("p", { class: "hint" }, "Live, from the tenant's quota object: exact, and ahead of the metered figures below until they catch up."),
          quotaGauges(usage, usage.quota),
          el("p", { class: "meta" }, `Requests this month (metered): ${formatCount(usage.requests_this_month)} · `, link("tenant settings", `tenants/${encodeURIComponent(tenant)}`)),
        ),
        section("By month", el("p", { class: "hint" }, METERED_NOTE), tenantCharts(rows, periods)),
      );
    }
  } catch (error) {
    if (refused(ctx, "Usage", form, error)) return;
    throw error;
  }
  ctx.show(page(ctx, tenant === "" ? "Usage" : `Usage of ${tenant}`, form, body));
}
