// @ts-check
// What a command prints: aligned tables and field lists for people, the
// API's JSON for scripts (`--json`). Every writer goes through an Output so
// main.mjs decides where text goes.

/**
 * @typedef {object} Output
 * @property {(text: string) => void} out standard output
 * @property {(text: string) => void} err standard error
 * @property {boolean} json print the API's JSON instead of tables
 */

/** A cell as people read it: `-` for nothing, objects as compact JSON. */
export function cell(/** @type {unknown} */ value) {
  if (value === null || value === undefined || value === "") return "-";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value);
}

/** A whole number as people read it: `50,000`. Anything else as `cell` shows it. */
export function count(/** @type {unknown} */ value) {
  return typeof value === "number" && Number.isSafeInteger(value) ? value.toLocaleString("en-US") : cell(value);
}

/**
 * Columns separated by two spaces, the header in capitals; `empty` instead
 * when there are no rows.
 * @param {Output} output
 * @param {ReadonlyArray<readonly [header: string, value: (row: Record<string, unknown>) => unknown]>} columns
 * @param {ReadonlyArray<Record<string, unknown>>} rows
 * @param {string} empty
 */
export function printTable(output, columns, rows, empty) {
  if (rows.length === 0) {
    output.out(`${empty}\n`);
    return;
  }
  const lines = [columns.map(([header]) => header.toUpperCase()), ...rows.map((row) => columns.map(([, value]) => cell(value(row))))];
  const widths = columns.map((_, i) => Math.max(...lines.map((line) => (line[i] ?? "").length)));
  for (const line of lines) output.out(`${line.map((text, i) => (i === line.length - 1 ? text : text.padEnd(widths[i] ?? 0))).join("  ")}\n`);
}

/**
 * `label  value` lines, labels aligned.
 * @param {Output} output
 * @param {ReadonlyArray<readonly [label: string, value: unknown]>} fields
 */
export function printFields(output, fields) {
  const width = Math.max(...fields.map(([label]) => label.length));
  for (const [label, value] of fields) output.out(`${label.padEnd(width)}  ${cell(value)}\n`);
}

/** The API's JSON, indented, for scripts. */
export function printJson(/** @type {Output} */ output, /** @type {unknown} */ value) {
  output.out(`${JSON.stringify(value, null, 2)}\n`);
}

/**
 * The items of a list field, each an object (anything else is shown as its JSON).
 * @param {unknown} list
 * @returns {Record<string, unknown>[]}
 */
export function records(list) {
  if (!Array.isArray(list)) return [];
  return list.map((item) => (typeof item === "object" && item !== null && !Array.isArray(item) ? /** @type {Record<string, unknown>} */ (item) : { value: item }));
}

/** A field of an answer as an object, or null. */
export function objectField(/** @type {Record<string, unknown>} */ body, /** @type {string} */ name) {
  const value = body[name];
  return typeof value === "object" && value !== null && !Array.isArray(value) ? /** @type {Record<string, unknown>} */ (value) : null;
}
