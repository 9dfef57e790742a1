// @ts-check
// Soft and hard quotas in bytes and objects (the API's Quota shape), for a
// tenant or an org. Bytes are written with a unit ("500 MB", "2 GiB"; a bare
// number is bytes), shown in the unit that holds the stored figure exactly,
// with the bytes it comes to beside it; the API gets whole bytes. An empty
// field is an unset bound: unlimited.
import { ApiError } from "./api.js";
import { parseSize, SIZE_UNITS_HINT, sizeText } from "./byte-size.js";
import { el, formatCount, uid } from "./dom.js";
import { field, input, numberInput, numberOf } from "./forms.js";

/** @typedef {{ soft?: number, hard?: number }} Bound */
/** @typedef {{ bytes?: Bound, objects?: Bound }} Quota */

const BOUNDS = /** @type {const} */ (["soft", "hard"]);

/**
 * A bytes field: text with a unit, and the bytes it comes to (or why it is no size) as it is typed.
 * @param {string} name
 * @param {number | undefined} initial
 */
function sizeInput(name, initial) {
  const control = input(name, { value: initial === undefined ? "" : sizeText(initial), placeholder: "unlimited", inputmode: "text" });
  const reading = el("p", { class: "hint size-reading", id: uid(), "aria-live": "polite" });
  const show = () => {
    const text = control.value.trim();
    const parsed = text === "" ? null : parseSize(text);
    reading.replaceChildren(parsed === null ? "" : parsed.ok ? `= ${formatCount(parsed.bytes)} bytes` : parsed.message);
  };
  control.addEventListener("input", show);
  show();
  return { control, reading };
}

/**
 * @param {{ initial?: Quota }} [options]
 */
export function quotaEditor(options = {}) {
  /** @type {Array<() => void>} */
  const readers = [];
  /** @type {Quota} */
  let quota = {};
  const bytesRow = el(
    "div",
    { class: "quota-row" },
    BOUNDS.map((bound) => {
      const fieldName = `quota.bytes.${bound}`;
      const { control, reading } = sizeInput(`bytes_${bound}`, options.initial?.bytes?.[bound]);
      readers.push(() => {
        const text = control.value.trim();
        if (text === "") return;
        const parsed = parseSize(text);
        if (!parsed.ok) throw new ApiError(400, { code: "invalid_request", field: fieldName, detail: `${fieldName}: ${parsed.message}` });
        (quota.bytes ??= {})[bound] = parsed.bytes;
      });
      const box = field(`Bytes, ${bound}`, control, { field: fieldName });
      box.appendChild(reading);
      control.setAttribute("aria-describedby", reading.id);
      return box;
    }),
  );
  const objectsRow = el(
    "div",
    { class: "quota-row" },
    BOUNDS.map((bound) => {
      const control = numberInput(`objects_${bound}`, { value: options.initial?.objects?.[bound] ?? "", placeholder: "unlimited" });
      readers.push(() => {
        const value = numberOf(control);
        if (value !== undefined) (quota.objects ??= {})[bound] = value;
      });
      return field(`Objects, ${bound}`, control, { field: `quota.objects.${bound}` });
    }),
  );
  const element = el(
    "fieldset",
    { class: "quota" },
    el("legend", {}, "Quota"),
    el("p", { class: "hint" }, "Stored bytes and objects. Soft: a warning in the audit log; hard: uploads refused. Empty: unlimited."),
    el("p", { class: "hint" }, `Bytes: ${SIZE_UNITS_HINT}`),
    bytesRow,
    objectsRow,
  );
  element.dataset.field = "quota";
  return {
    element,
    /**
     * The API's Quota from the fields; a size that is none is refused here, next to its field.
     * @returns {Quota}
     */
    read() {
      quota = {};
      for (const read of readers) read();
      return quota;
    },
  };
}

/**
 * `bytes ≤ 1 MB (soft 800 kB); objects ≤ 1,000`, or `none`.
 * @param {Quota | null | undefined} quota
 */
export function describeQuota(quota) {
  if (quota === null || quota === undefined) return "none";
  const parts = [];
  for (const [kind, format] of /** @type {const} */ ([["bytes", sizeText], ["objects", formatCount]])) {
    const bound = quota[kind];
    if (bound === undefined || (bound.hard === undefined && bound.soft === undefined)) continue;
    const hard = bound.hard === undefined ? "" : `≤ ${format(bound.hard)}`;
    const soft = bound.soft === undefined ? "" : `soft ${format(bound.soft)}`;
    parts.push(`${kind} ${hard}${hard && soft ? ` (${soft})` : soft}`);
  }
  return parts.length === 0 ? "none" : parts.join("; ");
}
