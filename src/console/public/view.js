// @ts-check
// What every view gets and shares: the context the router hands it, the page
// frame (one h1 the router focuses after a navigation), links between views
// and the pager for the API's `next_cursor`.
import { ApiError } from "./api.js";
import { el, notice } from "./dom.js";
import { reportError } from "./forms.js";

/**
 * @typedef {Object} ViewContext
 * @property {import("./api.js").Api} api
 * @property {boolean} canWrite false for the auditor: every write control is disabled
 * @property {ReadonlyArray<string>} params path segments after the view's name (`#/tenants/acme` → ["acme"])
 * @property {URLSearchParams} query the hash's query (`#/audit?cursor=42`)
 * @property {(node: Node) => void} show replaces the page; ignored once the operator has moved on
 * @property {(hash: string) => void} go navigates to another view
 * @property {(message?: string) => void} reload renders this view again, with a status line
 * @property {string | null} flash the status line `reload` was given, shown by `page`
 */

/** @typedef {(ctx: ViewContext) => Promise<void>} View */

/**
 * `#/tenants/acme?cursor=x`, leaving out empty query values.
 * @param {string} path
 * @param {Record<string, string | null | undefined>} [query]
 */
function hashFor(path, query = {}) {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== null && value !== undefined && value !== "") params.set(name, value);
  const text = params.toString();
  return `#/${path}${text === "" ? "" : `?${text}`}`;
}

/**
 * @param {string} text
 * @param {string} path
 * @param {Record<string, string | null | undefined>} [query]
 */
export function link(text, path, query) {
  return el("a", { href: hashFor(path, query) }, text);
}

/**
 * The frame of a page: its heading (focusable, so the router can move focus
 * there), the flash line, then the content.
 * @param {ViewContext} ctx
 * @param {string} title
 * @param {...(Node | null | false)} children
 */
export function page(ctx, title, ...children) {
  document.title = `${title} · Tollgate console`;
  return el("div", { class: "page" }, el("h1", { tabindex: -1 }, title), ctx.flash === null ? null : notice("status", ctx.flash), ...children);
}

/**
 * @param {string} title
 * @param {...(Node | string | null | false)} children
 */
export function section(title, ...children) {
  return el("section", { class: "section" }, el("h2", {}, title), ...children);
}

/** @typedef {{ first: string, previous: string, next: string }} PagerLabels */

/** The first page's place in `back`, which lists the cursors of the pages before this one. */
const FIRST_PAGE = "-";

/**
 * Links to the first, previous and next page of a listing the API pages
 * with `next_cursor`, and which page this is. The API only pages forward, so
 * the cursors of the pages before this one ride in the hash as `back`
 * (comma-separated, `-` for the first page): "previous" pops one, "next"
 * pushes this page's. Null for a listing of one page.
 * @param {string} path
 * @param {Record<string, string | null | undefined>} query the current query, cursor and back included
 * @param {string | null} nextCursor
 * @param {{ labels?: Partial<PagerLabels>, name?: string }} [options] `name`: the navigation's label, when a page has two pagers
 */
export function pager(path, query, nextCursor, options = {}) {
  const labels = { first: "First page", previous: "Previous page", next: "Next page", ...options.labels };
  const back = query.back ? query.back.split(",") : [];
  const links = [];
  if (query.cursor) {
    links.push(link(labels.first, path, { ...query, cursor: null, back: null }));
    if (back.length > 1) {
      const previous = back[back.length - 1];
      links.push(link(labels.previous, path, { ...query, cursor: previous === FIRST_PAGE ? null : previous, back: back.slice(0, -1).join(",") }));
    }
  }
  if (nextCursor !== null) links.push(link(labels.next, path, { ...query, cursor: nextCursor, back: [...back, query.cursor || FIRST_PAGE].join(",") }));
  if (links.length === 0) return null;
  return el("nav", { class: "pager", "aria-label": options.name ?? "Pages" }, el("span", { class: "page-number" }, `Page ${back.length + 1}`), links);
}

/**
 * A read-only form (filters, pickers): submitting it navigates, it changes
 * nothing. Its alert holds the API's refusal of what was typed (`refused`).
 * @param {string} label
 * @param {(form: HTMLFormElement) => void} onSubmit
 * @param {...Node} children
 */
export function searchForm(label, onSubmit, ...children) {
  const form = el("form", { class: "search", role: "search", "aria-label": label, novalidate: true }, ...children, el("div", { class: "form-alert", role: "alert" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    onSubmit(form);
  });
  return form;
}

/**
 * When the API refused what the operator typed into a search form (400, or
 * 404 for a tenant or caller that is not there), shows the page with that
 * form alone and the refusal on it, next to the field it names, and answers
 * true, so the operator can correct it. Any other failure is the router's.
 * @param {ViewContext} ctx
 * @param {string} title
 * @param {HTMLFormElement} form
 * @param {unknown} error
 */
export function refused(ctx, title, form, error) {
  if (!(error instanceof ApiError) || (error.status !== 400 && error.status !== 404)) return false;
  ctx.show(page(ctx, title, form));
  reportError(form, error);
  return true;
}

/**
 * A value of a form's control by name.
 * @param {HTMLFormElement} form
 * @param {string} name
 */
export function valueOf(form, name) {
  const control = form.elements.namedItem(name);
  return control instanceof HTMLInputElement || control instanceof HTMLSelectElement ? control.value.trim() : "";
}

/**
 * `yes` / `expired` for an override's or block's `active`.
 * @param {boolean} active
 */
export function activeBadge(active) {
  return el("span", { class: active ? "badge ok" : "badge muted" }, active ? "active" : "expired");
}

/** The badge of a shadow policy (a limit, override or block tried, refusing nothing). */
export function shadowBadge() {
  return el("span", { class: "badge shadow", title: "Shadow: tried, refusing nothing" }, "shadow");
}

/**
 * A text field that offers the names the API knows (a `<datalist>`, filled
 * from the first page of `/tenants` or `/orgs` once the page shows), so an
 * operator picks rather than types; a name not listed (past the first page)
 * can still be typed. The datalist rides inside a wrapper next to the input.
 * @param {ViewContext} ctx
 * @param {"tenants" | "orgs"} collection
 * @param {string} name the input's name
 * @param {string} value
 * @param {Record<string, string>} [attrs]
 */
function picker(ctx, collection, name, value, attrs = {}) {
  const listId = `${name}-${collection}-${Math.random().toString(36).slice(2, 8)}`;
  const list = el("datalist", { id: listId });
  const control = el("input", { name, value, list: listId, autocomplete: "off", spellcheck: "false", ...attrs });
  const field = collection === "tenants" ? "tenant" : "org";
  ctx.api
    .get(`/${collection}`, { limit: "200" })
    .then((answer) => {
      /** @type {Array<Record<string, string>>} */
      const items = answer[collection] ?? [];
      list.replaceChildren(...items.map((item) => el("option", { value: item[field] })));
    })
    .catch(() => {
      // Suggestions only: the field still takes what is typed.
    });
  // The input is what a `field()` labels; the datalist goes in after it.
  queueMicrotask(() => control.after(list));
  return control;
}

/**
 * A tenant field with the tenants as choices.
 * @param {ViewContext} ctx
 * @param {string} name
 * @param {string} value
 * @param {Record<string, string>} [attrs]
 */
export function tenantPicker(ctx, name, value, attrs) {
  return picker(ctx, "tenants", name, value, attrs);
}

/**
 * An org field with the orgs as choices.
 * @param {ViewContext} ctx
 * @param {string} name
 * @param {string} value
 * @param {Record<string, string>} [attrs]
 */
export function orgPicker(ctx, name, value, attrs) {
  return picker(ctx, "orgs", name, value, attrs);
}
