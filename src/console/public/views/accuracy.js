// @ts-check
// #/accuracy?minutes=: how close global limits stayed to exact, from GET
// /global/accuracy. Per ledger with traffic (busiest first): who it meters,
// its calls per second and its busiest second; per global limit, a gauge of
// the units admitted against the published bound with the exact GCRA's
// figure marked (past it: the amber part; past the bound: red), over the
// span and in the busiest minute, and the figures behind them. Then the
// leased budgets: the units isolates hold in leases, and the refusals made
// while other isolates held some.
import { gauge } from "../charts.js";
import { el, formatCount, notice, table, time } from "../dom.js";
import { field, input } from "../forms.js";
import { link, page, refused, searchForm, section, valueOf } from "../view.js";

/**
 * @typedef {{ admitted: number, exact: number, bound: number, within_bound: boolean }} Measured
 * @typedef {Measured & { category: string, limit: { count: number, window_s: number, burst: number }, lease_ms: number, granted: number, given_back: number, asks: number, refused_asks: number, from: string, busiest_minute: Measured & { at: string } }} LimitFigures
 * @typedef {{ caller: string | null, kind: string, tenant: string | null, explain: string | null, calls: number, calls_per_s: number, peak_calls_per_s: number, limits: LimitFigures[] }} LedgerFigures
 * @typedef {{ owner: string, category: string, period: string, amount: number, used: number, held_in_leases: number, lease_grants: number, leased_units: number, refused: number, refused_while_held_elsewhere: number, counted_since: string }} LeasedBudget
 */

const DEFAULT_MINUTES = 60;

/** @param {number} seconds */
function windowText(seconds) {
  if (seconds % 86_400 === 0) return `${seconds / 86_400} d`;
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/** @param {number} ms */
function leaseText(ms) {
  return ms >= 1000 ? `${Number((ms / 1000).toFixed(2))} s` : `${ms} ms`;
}

/**
 * Admitted against the bound, the exact figure marked.
 * @param {string} label
 * @param {Measured} m
 */
function accuracyGauge(label, m) {
  const past = m.admitted - m.exact;
  const verdict = !m.within_bound ? `past the bound by ${formatCount(m.admitted - m.bound)}` : past > 0 ? `${formatCount(past)} past the exact figure, within the bound` : "within the exact figure";
  const node = gauge({ label, used: m.admitted, soft: m.exact, hard: m.bound, format: formatCount, bounds: `exact GCRA ${formatCount(m.exact)} · bound ${formatCount(m.bound)} · ${verdict}` });
  // gauge() colours a figure that reaches a bound; here reaching it is fine (a caller that spent its whole burst), passing it is not.
  const level = !m.within_bound ? "over" : past > 0 ? "warn" : "ok";
  for (const part of [node, node.querySelector(".meter")]) {
    part?.classList.remove("ok", "warn", "over");
    part?.classList.add(level);
  }
  return node;
}

/** @param {LedgerFigures} ledger */
function whoText(ledger) {
  if (ledger.kind === "ip") return "an address (never named)";
  if (ledger.caller === null) return "a key deleted since";
  return ledger.caller;
}

/** @param {LedgerFigures} ledger */
function ledgerBlock(ledger) {
  const who = ledger.explain === null || ledger.caller === null ? el("span", {}, whoText(ledger)) : link(ledger.caller, "explain", { caller: ledger.caller });
  return el(
    "div",
    { class: "accuracy-ledger" },
    el("h3", {}, who, ledger.tenant !== null && ledger.kind !== "tenant" ? el("span", { class: "badge" }, `tenant ${ledger.tenant}`) : null),
    el("p", { class: "meta" }, `Ledger calls: ${formatCount(ledger.calls)} · ${ledger.calls_per_s.toLocaleString("en-US")} a second · at most ${formatCount(ledger.peak_calls_per_s)} in one second`),
    ledger.limits.map((l) =>
      el(
        "div",
        { class: "accuracy-limit" },
        el("h4", {}, `${l.category} · ${formatCount(l.limit.count)} per ${windowText(l.limit.window_s)}, bursts of ${formatCount(l.limit.burst)} · L = ${leaseText(l.lease_ms)}`),
        el("div", { class: "gauges" }, accuracyGauge(`Admitted since ${new Date(l.from).toISOString().slice(11, 16)} UTC`, l), accuracyGauge(`Busiest minute, ${new Date(l.busiest_minute.at).toISOString().slice(11, 16)} UTC`, l.busiest_minute)),
        el(
          "details",
          {},
          el("summary", {}, "Figures"),
          table(
            `The ledger's figures for ${l.category}`,
            ["From", "Granted", "Given back", "Asks", "Refused asks"],
            [[time(l.from), formatCount(l.granted), formatCount(l.given_back), formatCount(l.asks), formatCount(l.refused_asks)]],
          ),
        ),
      ),
    ),
  );
}

/**
 * @param {LeasedBudget[]} budgets
 * @param {number} minutes
 * @param {string} since the span's start
 */
function budgetsSection(budgets, minutes, since) {
  // An object counts in memory: one that started within the span counted from then.
  const later = budgets.map((b) => b.counted_since).filter((t) => t > since).sort();
  return section(
    `Leased budgets in the last ${minutes} minutes`,
    el("p", { class: "hint" }, "Held in leases: units granted to isolates, counted in used, not yet reported spent. A refusal while units were held elsewhere is one an exact counter might not have made: those units come back as their leases are spent or end."),
    table(
      "Leased budgets",
      ["Budget", "Category", "Used of amount", "Held in leases", "Leases granted (units)", "Refused", "Refused while held elsewhere"],
      budgets.map((b) => [b.owner, b.category, `${formatCount(b.used)} of ${formatCount(b.amount)}`, formatCount(b.held_in_leases), `${formatCount(b.lease_grants)} (${formatCount(b.leased_units)})`, formatCount(b.refused), formatCount(b.refused_while_held_elsewhere)]),
      "No budget leased or refused in these minutes.",
    ),
    later.length === 0 ? null : el("p", { class: "hint" }, "Some objects started counting within these minutes (they count in memory), the latest at ", time(later[later.length - 1]), "."),
  );
}

/** @type {import("../view.js").View} */
export async function accuracyView(ctx) {
  const minutes = ctx.query.get("minutes") || String(DEFAULT_MINUTES);
  const form = searchForm(
    "Accuracy span",
    (f) => ctx.go(`#/accuracy?${new URLSearchParams({ minutes: valueOf(f, "minutes") })}`),
    el("div", { class: "row" }, field("Last minutes", input("minutes", { type: "number", min: 1, max: 60, step: 1, value: minutes, inputmode: "numeric" }), { field: "minutes", hint: "1 to 60" })),
    el("div", { class: "actions" }, el("button", { type: "submit" }, "Show")),
  );
  const title = "Accuracy: global limits and leased budgets";
  /** @type {{ minutes: number, since: string, settings: { max_overshoot: number, min_lease_ms: number }, ledgers_seen: number, unreachable: number, ledgers: LedgerFigures[], budgets: LeasedBudget[] }} */
  let report;
  try {
    report = await ctx.api.get("/global/accuracy", { minutes });
  } catch (error) {
    if (refused(ctx, title, form, error)) return;
    throw error;
  }
  const listed = report.ledgers.length;
  ctx.show(
    page(
      ctx,
      title,
      form,
      el(
        "p",
        { class: "hint" },
        `From each ledger's own records. Admitted: units granted in leases less those given back (a unit that expired unspent counts, so it never under-states). Exact: what one exact GCRA admits over the same minutes. Bound: the exact figure plus L·C/W, L = ${report.settings.max_overshoot} × the window, at least ${report.settings.min_lease_ms} ms.`,
      ),
      report.unreachable > 0 ? notice("alert", `${report.unreachable} ledger${report.unreachable === 1 ? "" : "s"} did not answer and ${report.unreachable === 1 ? "is" : "are"} left out.`) : null,
      section(
        `Ledgers with traffic in the last ${report.minutes} minutes`,
        listed === 0 ? el("p", { class: "empty" }, "No global limit had traffic in these minutes.") : el("p", { class: "meta" }, report.ledgers_seen > listed ? `The ${listed} busiest of ${report.ledgers_seen} ledgers.` : `${listed} ledger${listed === 1 ? "" : "s"}, busiest first.`),
        el("div", {}, report.ledgers.map(ledgerBlock)),
      ),
      budgetsSection(report.budgets, report.minutes, report.since),
    ),
  );
}
