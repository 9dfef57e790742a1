// @ts-check
// A JSON object (an audit event's detail, an alert's data) as labelled values
// people read: one <dt>/<dd> pair a field, the name without underscores, a
// unit its name carries (`window_s: 60` → "60 s"), counts grouped, times as
// the console shows every time, nested objects on one line; and the raw JSON
// behind a disclosure for whoever needs it exactly.
import { el, formatCount } from "./dom.js";

/** ISO 8601 instants, shown as every other time in the console is. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z$/;

/** A name's unit suffix, dropped from its label and written after its value. */
const UNIT_SUFFIXES = /** @type {const} */ ([
  ["_ms", "ms"],
  ["_s", "s"],
  ["_bytes", "B"],
]);

/**
 * A field's label and how its number reads: `window_s` → ["window", "60 s"].
 * @param {string} name
 * @returns {[string, (n: number) => string]}
 */
function labelOf(name) {
  for (const [suffix, unit] of UNIT_SUFFIXES) {
    if (name.endsWith(suffix) && name.length > suffix.length) return [name.slice(0, -suffix.length).replaceAll("_", " "), (n) => `${formatCount(n)} ${unit}`];
  }
  // A budget's threshold is a fraction of its amount.
  if (name === "threshold") return ["threshold", (n) => (n <= 1 ? `${Math.round(n * 100)} %` : formatCount(n))];
  // Ids are names, not quantities: no grouping.
  if (name === "id" || name.endsWith("_id")) return [name.replaceAll("_", " "), String];
  return [name.replaceAll("_", " "), formatCount];
}

/**
 * A value as one line of text: objects as `name value` pairs, lists joined.
 * @param {unknown} value
 * @param {(n: number) => string} [number] how a number reads
 * @returns {string}
 */
export function valueText(value, number = String) {
  if (value === null || value === undefined) return "—";
  if (Array.isArray(value)) return value.length === 0 ? "none" : value.map((v) => valueText(v, number)).join(", ");
  if (typeof value === "object") {
    const entries = Object.entries(value);
    if (entries.length === 0) return "none";
    return entries
      .map(([name, v]) => {
        const [label, format] = labelOf(name);
        return `${label} ${typeof v === "object" && v !== null ? `(${valueText(v, format)})` : valueText(v, format)}`;
      })
      .join("; ");
  }
  if (typeof value === "number") return number(value);
  if (typeof value === "string" && ISO_TIME.test(value)) return `${value.slice(0, 16).replace("T", " ")} UTC`;
  return String(value);
}

/**
 * An object as a list of labelled fields (a definition list), each value as
 * text; anything else as one line.
 * @param {unknown} detail
 */
export function detailFields(detail) {
  if (typeof detail !== "object" || detail === null || Array.isArray(detail)) return valueText(detail);
  const entries = Object.entries(detail);
  if (entries.length === 0) return "—";
  return el(
    "dl",
    { class: "detail" },
    entries.flatMap(([name, value]) => {
      const [label, format] = labelOf(name);
      return [el("dt", {}, label), el("dd", {}, valueText(value, format))];
    }),
  );
}

/**
 * The exact JSON, folded: a <details> the operator opens when the labelled values are not enough.
 * @param {unknown} value
 * @param {string} [summary]
 */
export function rawJson(value, summary = "Raw JSON") {
  return el("details", { class: "raw" }, el("summary", {}, summary), el("pre", {}, el("code", { class: "json" }, JSON.stringify(value, null, 2))));
}
