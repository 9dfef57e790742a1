// @ts-check
// Requests per time slot (a minute, or ten for a day), stacked by decision:
// what was admitted at the bottom, each kind of refusal above it. Inline SVG
// as charts.js draws it; colours are console.css classes (the CSP refuses
// inline styles). Each slot carries its figures in `data-*` attributes and a
// <title>, and the view lists them in a table too.
import { niceCeiling } from "./charts.js";
import { el, formatCount, svg, uid } from "./dom.js";

/**
 * Decisions that are not refusals of the caller: the gateway admitted the
 * request (`shadow:<code>` would have refused it and did not) or failed
 * itself. The rest are refusals. The same split as GET /traffic's
 * `admitted` and `refused`.
 * @param {string} decision
 * @returns {"admitted" | "refused" | "error"}
 */
export function kindOf(decision) {
  if (decision === "admitted" || decision === "exempt" || decision === "off" || decision.startsWith("shadow:")) return "admitted";
  if (decision === "origin_unreachable" || decision === "internal_error" || decision === "config_invalid") return "error";
  return "refused";
}

/** Distinct colours for refusal decisions, busiest first; the rest share the last. */
const REFUSED_CLASSES = 6;

/**
 * A colour class for each decision: admitted ones green, refusals one shade
 * each (busiest first), the gateway's own failures grey.
 * @param {ReadonlyArray<string>} decisions busiest first
 * @returns {Map<string, string>}
 */
export function decisionClasses(decisions) {
  /** @type {Map<string, string>} */
  const classes = new Map();
  let refused = 0;
  for (const decision of decisions) {
    const kind = kindOf(decision);
    if (kind === "admitted") classes.set(decision, decision === "admitted" ? "d-admitted" : "d-admitted-other");
    else if (kind === "error") classes.set(decision, "d-error");
    else classes.set(decision, `d-refused-${Math.min(refused++, REFUSED_CLASSES - 1)}`);
  }
  return classes;
}

/**
 * @typedef {Object} Slot
 * @property {number} startMs
 * @property {number} admitted
 * @property {number} refused
 * @property {Map<string, number>} decisions
 */

/** `14:05` in UTC, as the console shows every time. */
export function clockLabel(/** @type {number} */ ms) {
  return new Date(ms).toISOString().slice(11, 16);
}

/**
 * The stacked chart: one bar a slot, its segments in `order` (admitted
 * first), the y axis from 0 to a round top.
 * @param {{ title: string, slots: ReadonlyArray<Slot>, order: ReadonlyArray<string>, classes: Map<string, string>, slotMs: number }} options
 */
export function stackedChart(options) {
  const { slots, order, classes } = options;
  const narrow = window.matchMedia("(max-width: 640px)").matches;
  const width = narrow ? 340 : 960;
  const height = narrow ? 190 : 220;
  const pad = { left: narrow ? 44 : 56, right: 8, top: 14, bottom: 30 };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const totals = slots.map((s) => [...s.decisions.values()].reduce((a, b) => a + b, 0));
  const top = niceCeiling(Math.max(0, ...totals));
  const slotW = plotW / Math.max(1, slots.length);
  const barW = Math.max(1, slotW * (slotW >= 4 ? 0.8 : 1));
  const y = (/** @type {number} */ v) => pad.top + plotH - (v / top) * plotH;
  // A time label every so many slots, at round times: every 10 or 15 minutes in an hour, every 3 or 6 hours in a day.
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720].map((m) => (m * 60_000) / options.slotMs).filter((n) => Number.isInteger(n) && n >= 1);
  const every = steps.find((n) => n * slotW >= (narrow ? 48 : 64)) ?? slots.length;

  const titleId = uid();
  const ticks = Number.isInteger(top / 2) ? [0, top / 2, top] : [0, top];
  const grid = ticks.map((v) =>
    svg("g", { class: "grid" }, svg("line", { x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v) }), svg("text", { x: pad.left - 6, y: y(v) + 4, "text-anchor": "end" }, formatCount(v))),
  );
  const bars = slots.map((slot, i) => {
    const x = pad.left + i * slotW + (slotW - barW) / 2;
    let base = 0;
    const segments = [];
    for (const decision of order) {
      const n = slot.decisions.get(decision) ?? 0;
      if (n === 0) continue;
      segments.push(svg("rect", { class: `seg ${classes.get(decision) ?? "d-error"}`, x, y: y(base + n), width: barW, height: y(base) - y(base + n), "data-decision": decision, "data-count": n }));
      base += n;
    }
    const parts = [...slot.decisions.entries()].filter(([, n]) => n > 0).map(([d, n]) => `${d} ${formatCount(n)}`);
    const figure = `${clockLabel(slot.startMs)} UTC: ${formatCount(slot.admitted)} admitted, ${formatCount(slot.refused)} refused${parts.length === 0 ? "" : ` (${parts.join(", ")})`}`;
    const aligned = Math.round(slot.startMs / options.slotMs) % every === 0;
    return svg(
      "g",
      { class: "slot", "data-minute": new Date(slot.startMs).toISOString(), "data-admitted": slot.admitted, "data-refused": slot.refused },
      svg("title", {}, figure),
      // The whole column answers to the pointer, so an empty minute shows its figures too.
      svg("rect", { class: "hit", x: pad.left + i * slotW, y: pad.top, width: slotW, height: plotH }),
      segments,
      aligned ? svg("text", { class: "axis", x: x + barW / 2, y: height - pad.bottom + 16, "text-anchor": "middle" }, clockLabel(slot.startMs)) : null,
    );
  });
  const admitted = slots.reduce((n, s) => n + s.admitted, 0);
  const refused = slots.reduce((n, s) => n + s.refused, 0);
  return svg(
    "svg",
    { class: "chart traffic", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": titleId },
    svg("title", { id: titleId }, `${options.title}: ${formatCount(admitted)} admitted, ${formatCount(refused)} refused`),
    grid,
    bars,
  );
}

/**
 * The key to the colours, each decision with its total over the chart.
 * @param {ReadonlyArray<[string, number]>} totals decision and count, in chart order
 * @param {Map<string, string>} classes
 */
export function legend(totals, classes) {
  return el(
    "ul",
    { class: "legend" },
    totals.map(([decision, n]) =>
      el(
        "li",
        { "data-decision": decision, "data-count": n },
        svg("svg", { class: "swatch", width: 12, height: 12, viewBox: "0 0 12 12", "aria-hidden": "true" }, svg("rect", { class: `seg ${classes.get(decision) ?? "d-error"}`, x: 0, y: 0, width: 12, height: 12, rx: 2 })),
        el("code", {}, decision),
        ` ${formatCount(n)}`,
      ),
    ),
  );
}
