// @ts-check
// #/audit?kind=&tenant=&caller=&cursor=&limit=: the audit log, newest
// first, a page at a time (`next_cursor`; `limit` events a page, the API's 50
// by default), filtered as the API filters it. Details are shown as labelled
// fields; a block's target as the operator wrote it; a key always as
// `key:<id>`, linking to its explanation.
import { el, table, time } from "../dom.js";
import { field, input } from "../forms.js";
import { link, page, pager, refused, searchForm, section, tenantPicker, valueOf } from "../view.js";

/** @typedef {{ id: number, at: string, kind: string, actor: string, tenant: string | null, subject: string | null, detail: unknown }} AuditEvent */

const FILTERS = /** @type {const} */ (["kind", "tenant", "caller"]);
const KEY_ID = /^[0-9a-z]{12}$/;

/** ISO 8601 instants in a detail, shown as every other time in the console is. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z$/;

/**
 * A detail value as one line of text: objects as `name value` pairs, lists joined.
 * @param {unknown} value
 * @returns {string}
 */
function valueText(value) {
  if (value === null || value === undefined) return "—";
  if (Array.isArray(value)) return value.length === 0 ? "none" : value.map(valueText).join(", ");
  if (typeof value === "object") {
    const entries = Object.entries(value);
    return entries.length === 0 ? "none" : entries.map(([name, v]) => `${name.replaceAll("_", " ")} ${typeof v === "object" && v !== null ? `(${valueText(v)})` : valueText(v)}`).join("; ");
  }
  if (typeof value === "string" && ISO_TIME.test(value)) return `${value.slice(0, 16).replace("T", " ")} UTC`;
  return String(value);
}

/**
 * The detail as a list of labelled fields (a definition list), each value as text.
 * @param {unknown} detail
 */
function detailFields(detail) {
  if (typeof detail !== "object" || detail === null || Array.isArray(detail)) return valueText(detail);
  const entries = Object.entries(detail);
  if (entries.length === 0) return "—";
  return el("dl", { class: "detail" }, entries.flatMap(([name, value]) => [el("dt", {}, name.replaceAll("_", " ")), el("dd", {}, valueText(value))]));
}

/**
 * Who or what an event is about, in one form: a key as `key:<id>` (key events
 * store the bare id) linking to its explanation, a block's target as written
 * rather than its digest, a digest only when nothing better is known.
 * @param {AuditEvent} e
 */
function subjectCell(e) {
  const detail = typeof e.detail === "object" && e.detail !== null ? /** @type {Record<string, unknown>} */ (e.detail) : {};
  const target = typeof detail.target === "string" ? detail.target : null;
  const subject = target ?? e.subject;
  if (subject === null) return "—";
  const caller = KEY_ID.test(subject) ? `key:${subject}` : subject;
  if (/^(key|ip|jwt|tenant):/.test(caller)) return link(caller, "explain", { caller });
  return el("code", { class: "wrap" }, caller);
}

/** @type {import("../view.js").View} */
export async function auditView(ctx) {
  /** @type {Record<string, string>} */
  const filters = {};
  for (const name of FILTERS) filters[name] = ctx.query.get(name) ?? "";
  const cursor = ctx.query.get("cursor") ?? undefined;
  const limit = ctx.query.get("limit") ?? undefined;
  const form = searchForm(
    "Filter the audit log",
    (f) => ctx.go(`#/audit?${new URLSearchParams(Object.fromEntries(FILTERS.map((n) => [n, valueOf(f, n)]).filter(([, v]) => v !== "")))}`),
    el(
      "div",
      { class: "row" },
      field("Kind", input("kind", { value: filters.kind, placeholder: "e.g. key_minted" }), { field: "kind" }),
      field("Tenant", tenantPicker(ctx, "tenant", filters.tenant ?? ""), { field: "tenant" }),
      field("Caller or target", input("caller", { value: filters.caller, placeholder: "ip:…, key:…, tenant:…" }), { field: "caller" }),
    ),
    el("div", { class: "actions" }, el("button", { type: "submit" }, "Filter")),
  );
  let answer;
  try {
    answer = await ctx.api.get("/audit", { ...filters, cursor, limit });
  } catch (error) {
    if (refused(ctx, "Audit log", form, error)) return;
    throw error;
  }
  /** @type {AuditEvent[]} */
  const events = answer.events;
  const rows = events.map((e) => [time(e.at), el("code", {}, e.kind), e.actor, e.tenant ?? "—", subjectCell(e), detailFields(e.detail)]);
  ctx.show(
    page(
      ctx,
      "Audit log",
      form,
      section(
        "Events, newest first",
        table("Audit events, newest first", ["When", "Kind", "Actor", "Tenant", "Subject", "Detail"], rows, cursor === undefined ? "No events." : "No more events."),
        pager("audit", { ...filters, limit, cursor }, answer.next_cursor, "Newest"),
      ),
    ),
  );
}
