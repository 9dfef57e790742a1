// @ts-check
// #/audit?kind=&tenant=&caller=&cursor=&limit=: the audit log, newest
// first, a page at a time (`next_cursor`; `limit` events a page: 25, or 10 on
// a phone, where each event is a card), with the pager above and below the
// events, filtered as the API filters it. Details are shown as labelled
// fields; a block's target as the operator wrote it; a key always as
// `key:<id>`, linking to its explanation.
import { detailFields } from "../detail-fields.js";
import { el, formatCount, table, time } from "../dom.js";
import { field, input } from "../forms.js";
import { link, page, pager, refused, searchForm, section, tenantPicker, valueOf } from "../view.js";

/** @typedef {{ id: number, at: string, kind: string, actor: string, tenant: string | null, subject: string | null, detail: unknown }} AuditEvent */

const FILTERS = /** @type {const} */ (["kind", "tenant", "caller"]);
const KEY_ID = /^[0-9a-z]{12}$/;
/** Events a page unless the hash says `limit`: a phone shows each as a card a screen tall, so fewer. */
const PAGE_EVENTS = 25;
const PHONE_PAGE_EVENTS = 10;
const AUDIT_PAGER_LABELS = { first: "Newest", previous: "Newer", next: "Older" };

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
  const back = ctx.query.get("back");
  const limit = ctx.query.get("limit") || String(window.matchMedia("(max-width: 640px)").matches ? PHONE_PAGE_EVENTS : PAGE_EVENTS);
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
  // The page size stays in the links only when the hash chose it.
  const paging = { ...filters, limit: ctx.query.get("limit"), cursor, back };
  const first = (back === null || back === "" ? 0 : back.split(",").length) * Number(limit) + 1;
  ctx.show(
    page(
      ctx,
      "Audit log",
      form,
      section(
        "Events, newest first",
        events.length === 0 ? null : el("p", { class: "hint" }, `Events ${formatCount(first)}–${formatCount(first + events.length - 1)}, ${limit} a page.`),
        pager("audit", paging, answer.next_cursor, { labels: AUDIT_PAGER_LABELS, name: "Pages, above the events" }),
        table("Audit events, newest first", ["When", "Kind", "Actor", "Tenant", "Subject", "Detail"], rows, cursor === undefined ? "No events." : "No more events."),
        pager("audit", paging, answer.next_cursor, { labels: AUDIT_PAGER_LABELS, name: "Pages, below the events" }),
      ),
    ),
  );
}
