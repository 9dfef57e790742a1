// @ts-check
// Usage by month as a bar chart, and quota gauges: inline SVG drawn here, no
// chart library. Colours come from console.css (classes, not inline styles,
// which the CSP would refuse). Every chart names itself for screen readers
// and each bar carries its figure in a <title>; the usage view also lists the
// figures in a table.
import { sizeText } from "./byte-size.js";
import { el, formatBytes, formatCount, notice, svg, uid } from "./dom.js";

/**
 * The smallest 1, 2 or 5 × 10^k at or above `value` (at least 1): a round top for the axis.
 * @param {number} value
 */
export function niceCeiling(value) {
  if (value <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/**
 * `Nov` (or `Nov 2026` for the first month and each January).
 * @param {string} period YYYY-MM
 * @param {boolean} withYear
 */
function monthLabel(period, withYear) {
  const month = MONTHS[Number(period.slice(5, 7)) - 1] ?? period;
  return withYear ? `${month} ${period.slice(0, 4)}` : month;
}

/**
 * A bar per month, drawn at the pixel width it is shown at (`small` for a grid
 * of charts, else the page's width, narrower on a phone): the SVG may shrink
 * to fit but never grows, so its text stays the size it was drawn at.
 * `whole`: the figures are whole numbers (counts, bytes), so the axis never shows a fraction.
 * `scaleMax`: the largest figure of every chart drawn beside this one, so
 * charts of one metric share one scale and read against each other.
 * The first and the last month are always labelled.
 * @param {{ title: string, periods: ReadonlyArray<string>, values: ReadonlyArray<number>, format: (n: number) => string, small?: boolean, whole?: boolean, scaleMax?: number }} options
 */
export function barChart(options) {
  const { periods, values, format } = options;
  const narrow = options.small === true || window.matchMedia("(max-width: 640px)").matches;
  const width = options.small ? 360 : narrow ? 340 : 960;
  const height = narrow ? 180 : 200;
  const pad = { left: narrow ? 52 : 64, right: 8, top: 22, bottom: 34 };
  const plotW = width - pad.left - pad.right;
  const plotH = height - pad.top - pad.bottom;
  const top = niceCeiling(Math.max(0, options.scaleMax ?? 0, ...values));
  const slot = plotW / Math.max(1, periods.length);
  const barW = Math.max(2, slot * 0.7);
  const y = (/** @type {number} */ v) => pad.top + plotH - (v / top) * plotH;
  // Label every month when there is room, else every second or third.
  const every = Math.ceil((narrow ? 44 : 56) / slot);
  const last = periods.length - 1;
  // The last month is labelled always; a regular label too close before it gives way.
  const labelled = (/** @type {number} */ i) => i === last || (i % every === 0 && last - i >= every);

  const titleId = uid();
  const ticks = options.whole && !Number.isInteger(top / 2) ? [0, top] : [0, top / 2, top];
  const grid = ticks.map((v) =>
    svg(
      "g",
      { class: "grid" },
      svg("line", { x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v) }),
      svg("text", { x: pad.left - 6, y: y(v) + 4, "text-anchor": "end" }, format(v)),
    ),
  );
  const bars = periods.map((period, i) => {
    const value = values[i] ?? 0;
    const x = pad.left + i * slot + (slot - barW) / 2;
    const figure = `${monthLabel(period, true)}: ${format(value)}`;
    return svg(
      "g",
      { class: "bar" },
      svg("rect", { x, y: y(value), width: barW, height: Math.max(0, pad.top + plotH - y(value)), "data-period": period, "data-value": value }, svg("title", {}, figure)),
      value > 0 && slot >= 40 ? svg("text", { class: "value", x: x + barW / 2, y: y(value) - 5, "text-anchor": "middle" }, format(value)) : null,
      labelled(i) ? svg("text", { class: "axis", x: x + barW / 2, y: height - pad.bottom + 16, "text-anchor": "middle" }, monthLabel(period, i === 0 || period.endsWith("-01"))) : null,
    );
  });
  const total = values.reduce((a, b) => a + b, 0);
  return svg(
    "svg",
    { class: "chart", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-labelledby": titleId },
    svg("title", { id: titleId }, `${options.title}, ${periods[0] ?? ""} to ${periods[periods.length - 1] ?? ""}: ${format(total)} in all`),
    grid,
    bars,
  );
}

/**
 * A quota gauge: used against the hard quota (or the soft one when there is
 * no hard), the soft quota marked. Without a quota, the figure alone.
 * `boundFormat` writes the bounds (as the operator set them: "2 GiB"), `format` the use;
 * `bounds` says what the bounds do instead of "soft … · hard …" (a budget's thresholds).
 * @param {{ label: string, used: number, soft?: number, hard?: number, format: (n: number) => string, boundFormat?: (n: number) => string, bounds?: string }} options
 */
export function gauge(options) {
  const { used, soft, hard, format } = options;
  const boundFormat = options.boundFormat ?? format;
  const scale = hard ?? soft;
  const head = el("div", { class: "gauge-head" }, el("span", { class: "gauge-label" }, options.label));
  if (scale === undefined) {
    head.appendChild(el("span", { class: "gauge-figure" }, `${format(used)} · no quota`));
    return el("div", { class: "gauge" }, head);
  }
  const ratio = scale === 0 ? (used > 0 ? 1 : 0) : used / scale;
  const percent = Math.round(ratio * 100);
  const text = `${format(used)} of ${boundFormat(scale)} (${percent}%)`;
  const level = hard !== undefined && used >= hard ? "over" : soft !== undefined && used >= soft ? "warn" : "ok";
  head.appendChild(el("span", { class: "gauge-figure" }, text));
  const meter = svg(
    "svg",
    {
      class: `meter ${level}`,
      viewBox: "0 0 300 14",
      preserveAspectRatio: "none",
      role: "meter",
      "aria-label": options.label,
      "aria-valuemin": 0,
      "aria-valuemax": scale,
      "aria-valuenow": Math.min(used, scale),
      "aria-valuetext": text,
    },
    svg("rect", { class: "track", x: 0, y: 0, width: 300, height: 14, rx: 3 }),
    svg("rect", { class: "fill", x: 0, y: 0, width: Math.min(1, ratio) * 300, height: 14, rx: 3 }),
    soft !== undefined && hard !== undefined && hard > 0 ? svg("line", { class: "soft", x1: (soft / hard) * 300, x2: (soft / hard) * 300, y1: 0, y2: 14 }) : null,
  );
  const bounds = options.bounds ?? [soft === undefined ? null : `soft ${boundFormat(soft)}`, hard === undefined ? null : `hard ${boundFormat(hard)}`].filter((b) => b !== null).join(" · ");
  return el("div", { class: `gauge ${level}` }, head, meter, el("p", { class: "hint" }, bounds));
}

/**
 * Gauges for bytes and objects against the quota.
 * @param {{ bytes: number, objects: number, reserved_bytes?: number } | null} usage
 * @param {any} quota
 */
export function quotaGauges(usage, quota) {
  if (usage === null) return notice("alert", "The quota counters could not be read just now; reload to try again.");
  return el(
    "div",
    { class: "gauges" },
    gauge({ label: "Stored bytes", used: usage.bytes, soft: quota?.bytes?.soft, hard: quota?.bytes?.hard, format: formatBytes, boundFormat: sizeText }),
    gauge({ label: "Stored objects", used: usage.objects, soft: quota?.objects?.soft, hard: quota?.objects?.hard, format: formatCount }),
  );
}
