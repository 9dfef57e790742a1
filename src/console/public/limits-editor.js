// @ts-check
// Editing limits as rows — category, (for a tenant) whom it applies to, count,
// window, burst, scope, how long a request may be held, enforced or only
// tried (shadow) — instead of raw JSON. A row keeps every field the
// API holds, those the editor has no control for included (a field added to
// limits later), so saving an unchanged form changes nothing. Reading the rows builds the API's
// shape (TenantLimits or KeyLimits) and names each input with the dotted path
// the API would use for it (`limits.request.key.0.count`), so a 400 lands next
// to the right input.
import { el, formatCount } from "./dom.js";
import { field, input, numberInput, numberOf } from "./forms.js";

/** @typedef {{ count?: number, window_s?: number, burst?: number, scope?: string, delay_max_ms?: number, shadow?: boolean, penalty?: { after?: number, within_s?: number, block_s?: number } } & Record<string, unknown>} Limit */
/** @typedef {{ category: string, subject: string | null, limit: Limit }} Row */

const SUBJECT_LABELS = /** @type {Record<string, string>} */ ({ key: "each key", jwt: "each JWT caller", tenant: "the tenant as a whole" });
/** "" sends no scope: the config's limiter.default_scope applies. */
const SCOPE_LABELS = /** @type {Record<string, string>} */ ({ "": "config default", isolate: "per isolate", global: "global (all isolates)" });
/** "" sends no `shadow`: the limit is enforced. */
const SHADOW_LABELS = /** @type {Record<string, string>} */ ({ "": "no", true: "yes" });
/** The fields the editor has a control for; any other field of a stored limit (a penalty) is carried through as it is. */
const EDITED_FIELDS = new Set(["count", "window_s", "burst", "scope", "delay_max_ms", "shadow"]);
/** The number fields of a row, in the order they show. */
const NUMBER_FIELDS = /** @type {const} */ (["count", "window_s", "burst", "delay_max_ms"]);

/**
 * `<option>`s for `labels`, plus the stored value when it is none of them (kept, not lost).
 * @param {Record<string, string>} labels
 * @param {string} selected
 */
function options(labels, selected) {
  const entries = Object.entries(labels);
  if (!Object.hasOwn(labels, selected)) entries.push([selected, selected]);
  return entries.map(([value, label]) => el("option", { value, selected: value === selected }, label));
}
/** The API allows three limits per list; the editor allows a few more so the API's own message can show. */
const MAX_ROWS = 12;

/**
 * Rows from a stored value: TenantLimits (`{cat: {key: [..], tenant: [..]}}`) when `tenantShape`, else KeyLimits (`{cat: [..]}`).
 * @param {unknown} limits
 * @param {boolean} tenantShape
 * @returns {Row[]}
 */
function rowsOf(limits, tenantShape) {
  /** @type {Row[]} */
  const rows = [];
  if (typeof limits !== "object" || limits === null) return rows;
  for (const [category, value] of Object.entries(limits)) {
    if (tenantShape) {
      for (const [subject, list] of Object.entries(value ?? {})) {
        for (const limit of Array.isArray(list) ? list : []) rows.push({ category, subject, limit });
      }
    } else {
      for (const limit of Array.isArray(value) ? value : []) rows.push({ category, subject: null, limit });
    }
  }
  return rows;
}

/**
 * A human line for a list of limits: `request: key 100/1 s (burst 200); tenant 1000/1 s`.
 * @param {unknown} limits
 * @param {boolean} tenantShape
 */
export function describeLimits(limits, tenantShape) {
  const rows = rowsOf(limits, tenantShape);
  if (rows.length === 0) return "defaults";
  return rows
    .map(({ category, subject, limit }) => `${category}${subject === null ? "" : ` (${subject})`}: ${limit.count ?? "?"} per ${limit.window_s ?? "?"} s${limit.burst === undefined ? "" : `, burst ${limit.burst}`}${limit.scope === undefined ? "" : `, ${limit.scope}`}${heldText(limit.delay_max_ms)}${penaltyText(limit.penalty)}${limit.shadow === true ? ", shadow" : ""}`)
    .join("; ");
}

/**
 * `, penalty: 5 refusals in 60 s block 300 s` for a limit with a penalty box; "" otherwise.
 * @param {unknown} penalty
 */
export function penaltyText(penalty) {
  if (typeof penalty !== "object" || penalty === null) return "";
  const p = /** @type {{ after?: unknown, within_s?: unknown, block_s?: unknown }} */ (penalty);
  return `, penalty: ${String(p.after)} refusals in ${String(p.within_s)} s block ${String(p.block_s)} s`;
}

/**
 * `, holds up to 750 ms` for a limit that holds requests rather than refusing them; "" otherwise.
 * @param {unknown} delayMaxMs
 */
export function heldText(delayMaxMs) {
  return typeof delayMaxMs === "number" && delayMaxMs > 0 ? `, holds up to ${formatCount(delayMaxMs)} ms` : "";
}

/**
 * @param {{ tenantShape: boolean, initial?: unknown, legend?: string }} settings
 */
export function limitsEditor(settings) {
  /** Each row's fields the editor has no control for. */
  const extras = new WeakMap();
  const list = el("div", { class: "limit-rows" });
  const addButton = el("button", { type: "button", onclick: () => addRow(undefined, true) }, "Add a limit");
  const element = el(
    "fieldset",
    { class: "limits" },
    el("legend", {}, settings.legend ?? "Rate limits"),
    el("p", { class: "hint" }, settings.tenantShape ? "Per category: for each key, each JWT caller, or the tenant as a whole. No rows: the configured defaults." : "Per category, at most 3 each; all must fit."),
    el("p", { class: "hint" }, "Hold up to: a request over the limit whose wait is at most this many ms (up to 10,000) is held and forwarded when the limit allows, instead of refused 429. Empty: refuse."),
    el("p", { class: "hint" }, "Shadow: a limit tried, not enforced: kept as if enforced but never refuses; what it would refuse goes on, marked, and shows under Traffic. Add it beside the limits in force; set Shadow to no to switch it on from the state it kept. A limit's penalty (set with the API or CLI) is kept as it is."),
    el("p", { class: "hint" }, "Charging a category only when the origin answers certain statuses (charge_on_status, say 4xx for failed logins) is a route's setting in the config, not a limit's: Explain lists the routes that do."),
    list,
    addButton,
  );
  element.dataset.field = "limits";

  /**
   * @param {Row | undefined} row
   * @param {boolean} focus
   */
  function addRow(row, focus) {
    if (list.children.length >= MAX_ROWS) return;
    const category = input("category", { value: row?.category ?? "request", required: true });
    const subject = settings.tenantShape ? el("select", { name: "subject" }, options(SUBJECT_LABELS, row?.subject ?? "key")) : null;
    const count = numberInput("count", { value: row?.limit.count ?? "" });
    const windowS = numberInput("window_s", { value: row?.limit.window_s ?? "" });
    const burst = numberInput("burst", { value: row?.limit.burst ?? "", placeholder: "= count" });
    const delay = numberInput("delay_max_ms", { value: row?.limit.delay_max_ms ?? "", placeholder: "refuse", min: 0, max: 10000 });
    const scope = el("select", { name: "scope" }, options(SCOPE_LABELS, typeof row?.limit.scope === "string" ? row.limit.scope : ""));
    const shadow = el("select", { name: "shadow" }, options(SHADOW_LABELS, row?.limit.shadow === true ? "true" : ""));
    const item = el(
      "div",
      { class: settings.tenantShape ? "limit-row by-subject" : "limit-row" },
      field("Category", category),
      subject === null ? null : el("div", { class: "field-wide" }, field("Applies to", subject)),
      field("Count", count),
      field("Window (s)", windowS),
      field("Burst", burst),
      el("div", { class: "field-wide" }, field("Scope", scope)),
      field("Hold up to (ms)", delay),
      field("Shadow", shadow),
    );
    /** The stored limit's other fields, written back unchanged. */
    const extra = Object.fromEntries(Object.entries(row?.limit ?? {}).filter(([name]) => !EDITED_FIELDS.has(name)));
    extras.set(item, extra);
    const remove = el("button", { type: "button", class: "link", onclick: () => { item.remove(); addButton.focus(); } }, "Remove");
    item.appendChild(el("div", { class: "field remove" }, remove));
    list.appendChild(item);
    remove.setAttribute("aria-label", `Remove limit ${list.children.length}`);
    if (focus) category.focus();
  }

  for (const row of rowsOf(settings.initial, settings.tenantShape)) addRow(row, false);

  return {
    element,
    /**
     * The API's shape from the rows, numbering each input's `data-field` as the API would.
     * @returns {Record<string, unknown>}
     */
    read() {
      /** @type {Record<string, any>} */
      const limits = {};
      for (const item of list.children) {
        const get = (/** @type {string} */ name) => /** @type {HTMLInputElement} */ (item.querySelector(`[name="${name}"]`));
        const category = get("category").value.trim();
        const subject = settings.tenantShape ? get("subject").value : null;
        const entries = subject === null ? (limits[category] ??= []) : ((limits[category] ??= {})[subject] ??= []);
        const path = `limits.${category}${subject === null ? "" : `.${subject}`}.${entries.length}`;
        /** @type {Limit} */
        const limit = { ...(extras.get(item) ?? {}) };
        for (const name of NUMBER_FIELDS) {
          const control = get(name);
          control.dataset.field = `${path}.${name}`;
          const value = numberOf(control);
          if (value !== undefined) limit[name] = value;
        }
        const scope = get("scope");
        scope.dataset.field = `${path}.scope`;
        if (scope.value !== "") limit.scope = scope.value;
        const shadow = get("shadow");
        shadow.dataset.field = `${path}.shadow`;
        if (shadow.value === "true") limit.shadow = true;
        get("category").dataset.field = `limits.${category}`;
        entries.push(limit);
      }
      return limits;
    },
  };
}
