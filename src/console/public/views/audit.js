// @ts-check
// #/audit?kind=&tenant=&caller=&cursor=&limit=: the audit log, newest
// first, a page at a time (`next_cursor`; `limit` events a page, the API's 50
// by default), filtered as the API filters it. Details are shown as the JSON
// the API answers, as text.
import { el, jsonText, table, time } from "../dom.js";
import { field, input } from "../forms.js";
import { page, pager, refused, searchForm, section, valueOf } from "../view.js";

/** @typedef {{ id: number, at: string, kind: string, actor: string, tenant: string | null, subject: string | null, detail: unknown }} AuditEvent */

const FILTERS = /** @type {const} */ (["kind", "tenant", "caller"]);

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
      field("Tenant", input("tenant", { value: filters.tenant }), { field: "tenant" }),
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
  const rows = events.map((e) => [time(e.at), el("code", {}, e.kind), e.actor, e.tenant ?? "—", e.subject === null ? "—" : el("code", { class: "wrap" }, e.subject), jsonText(e.detail)]);
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
