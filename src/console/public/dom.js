// @ts-check
// Building the console's DOM. Every piece of data reaches the page as a text
// node or an attribute value, never as markup: there is no innerHTML here (the
// page's CSP requires Trusted Types with no policy, so the browser would
// refuse one anyway). Formatting helpers live here too, so every view shows
// times, bytes and counts the same way.

/** @typedef {string | number | boolean | null | undefined} AttrValue */
/** @typedef {Node | string | number | null | undefined | false} Child */
/** @typedef {Record<string, AttrValue | EventListener>} Attrs */

/**
 * @param {Element} node
 * @param {Attrs} attrs
 */
function applyAttrs(node, attrs) {
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === "function") {
      node.addEventListener(name.slice(2), value);
    } else if (value === true) {
      node.setAttribute(name, "");
    } else if (value !== false && value !== null && value !== undefined) {
      node.setAttribute(name, String(value));
    }
  }
}

/**
 * @param {Node} node
 * @param {ReadonlyArray<Child | ReadonlyArray<Child>>} children
 */
function appendChildren(node, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
}

/**
 * An HTML element: `onclick`-style keys add listeners, `true` sets a boolean
 * attribute, `false`/null/undefined leave it out; strings become text nodes.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs} [attrs]
 * @param {...(Child | ReadonlyArray<Child>)} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  applyAttrs(node, attrs);
  appendChildren(node, children);
  return node;
}

const SVG_NS = "http://www.w3.org/2000/svg";

/**
 * An SVG element, as `el` builds HTML ones.
 * @param {string} tag
 * @param {Attrs} [attrs]
 * @param {...(Child | ReadonlyArray<Child>)} children
 * @returns {SVGElement}
 */
export function svg(tag, attrs = {}, ...children) {
  const node = /** @type {SVGElement} */ (document.createElementNS(SVG_NS, tag));
  applyAttrs(node, attrs);
  appendChildren(node, children);
  return node;
}

/** An id for aria-describedby and label `for`; unique enough within one page. */
export function uid() {
  return `u${Math.random().toString(36).slice(2, 10)}`;
}

/**
 * `2030-01-31 09:05 UTC`, or an em dash for null: the API speaks UTC, so the console does too.
 * @param {string | null | undefined} iso
 */
function formatTime(iso) {
  if (iso === null || iso === undefined) return "—";
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  return `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/**
 * A <time> element with the exact instant in `datetime` and `title`.
 * @param {string | null | undefined} iso
 */
export function time(iso) {
  if (iso === null || iso === undefined) return el("span", {}, "—");
  return el("time", { datetime: iso, title: iso }, formatTime(iso));
}

const BYTE_UNITS = ["B", "kB", "MB", "GB", "TB", "PB"];

/**
 * Decimal units (1 kB = 1000 B), one decimal past bytes.
 * @param {number} bytes
 */
export function formatBytes(bytes) {
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1000 && unit < BYTE_UNITS.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${BYTE_UNITS[unit]}`;
}

/** @param {number} n */
export function formatCount(n) {
  return n.toLocaleString("en-US");
}

/**
 * A table with a caption, in a wrapper that scrolls sideways if it must; on a
 * phone its rows stack as cards instead.
 * @param {string} caption
 * @param {ReadonlyArray<string>} headings
 * @param {ReadonlyArray<ReadonlyArray<Child | ReadonlyArray<Child>>>} rows
 * @param {string} [empty] shown instead of an empty table
 */
export function table(caption, headings, rows, empty = "Nothing here yet.") {
  if (rows.length === 0) return el("p", { class: "empty" }, empty);
  return el(
    "div",
    { class: "table-wrap", tabindex: 0, role: "region", "aria-label": caption },
    el(
      "table",
      {},
      el("caption", { class: "visually-hidden" }, caption),
      el("thead", {}, el("tr", {}, headings.map((h) => el("th", { scope: "col" }, h)))),
      // data-label: on a phone each row becomes a card whose cells name their column (console.css).
      el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((cell, i) => el("td", { "data-label": headings[i] || null }, cell))))),
    ),
  );
}

/**
 * A status line (`role="status"`) or an alert (`role="alert"`).
 * @param {"status" | "alert"} role
 * @param {string} text
 */
export function notice(role, text) {
  return el("p", { role, class: role === "alert" ? "notice error" : "notice" }, text);
}
