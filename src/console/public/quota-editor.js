// @ts-check
// Soft and hard quotas in bytes and objects (the API's Quota shape), for a
// tenant or an org. An empty field is an unset bound: unlimited.
import { el, formatBytes, formatCount } from "./dom.js";
import { field, numberInput, numberOf } from "./forms.js";

/** @typedef {{ soft?: number, hard?: number }} Bound */
/** @typedef {{ bytes?: Bound, objects?: Bound }} Quota */

const KINDS = /** @type {const} */ ([
  ["bytes", "Bytes"],
  ["objects", "Objects"],
]);

/**
 * @param {{ initial?: Quota }} [options]
 */
export function quotaEditor(options = {}) {
  /** @type {Array<[keyof Quota, "soft" | "hard", HTMLInputElement]>} */
  const controls = [];
  const rows = KINDS.map(([kind, label]) =>
    el(
      "div",
      { class: "quota-row" },
      (/** @type {const} */ (["soft", "hard"])).map((bound) => {
        const control = numberInput(`${kind}_${bound}`, { value: options.initial?.[kind]?.[bound] ?? "", placeholder: "unlimited" });
        controls.push([kind, bound, control]);
        return field(`${label}, ${bound}`, control, { field: `quota.${kind}.${bound}` });
      }),
    ),
  );
  const element = el("fieldset", { class: "quota" }, el("legend", {}, "Quota"), el("p", { class: "hint" }, "Stored bytes and objects. Soft: a warning in the audit log; hard: uploads refused. Empty: unlimited."), rows);
  element.dataset.field = "quota";
  return {
    element,
    /** @returns {Quota} */
    read() {
      /** @type {Record<string, Record<string, number>>} */
      const quota = {};
      for (const [kind, bound, control] of controls) {
        const value = numberOf(control);
        if (value !== undefined) (quota[kind] ??= {})[bound] = value;
      }
      return quota;
    },
  };
}

/**
 * `bytes ≤ 1.0 MB (soft 800.0 kB); objects ≤ 1,000`, or `none`.
 * @param {Quota | null | undefined} quota
 */
export function describeQuota(quota) {
  if (quota === null || quota === undefined) return "none";
  const parts = [];
  for (const [kind, format] of /** @type {const} */ ([["bytes", formatBytes], ["objects", formatCount]])) {
    const bound = quota[kind];
    if (bound === undefined || (bound.hard === undefined && bound.soft === undefined)) continue;
    const hard = bound.hard === undefined ? "" : `≤ ${format(bound.hard)}`;
    const soft = bound.soft === undefined ? "" : `soft ${format(bound.soft)}`;
    parts.push(`${kind} ${hard}${hard && soft ? ` (${soft})` : soft}`);
  }
  return parts.length === 0 ? "none" : parts.join("; ");
}
