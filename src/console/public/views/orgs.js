// @ts-check
// #/orgs and #/orgs/{org}: groups of tenants with a quota over all of them.
// List and create; one org's summed usage, its tenants, its quota to edit,
// and deleting it (the API refuses while a tenant names it, and says so).
import { ApiError, exists, seg } from "../api.js";
import { budgetPanel } from "../budget-gauges.js";
import { quotaGauges } from "../charts.js";
import { el, formatCount, table, time } from "../dom.js";
import { confirmedButton, field, input, onSubmit, writeForm } from "../forms.js";
import { describeQuota, quotaEditor } from "../quota-editor.js";
import { link, page, pager, section } from "../view.js";

/** @param {import("../view.js").ViewContext} ctx */
function createForm(ctx) {
  const slug = input("org", { required: true });
  const quota = quotaEditor();
  const form = writeForm({ legend: "New org", canWrite: ctx.canWrite, submit: "Create org" }, field("Org slug", slug, { field: "org", hint: "Lower-case letters, digits, . _ -" }), quota.element);
  onSubmit(form, async () => {
    const name = slug.value.trim();
    if (name === "") throw new ApiError(400, { code: "invalid_request", field: "org", detail: "org: must not be empty" });
    if (await exists(ctx.api, `/orgs/${seg(name)}`)) throw new ApiError(400, { code: "invalid_request", field: "org", detail: `org: an org named ${name} already exists; edit it on its page` });
    await ctx.api.put(`/orgs/${seg(name)}`, { quota: quota.read() });
    ctx.go(`#/orgs/${encodeURIComponent(name)}`);
  });
  return form;
}

/** @type {import("../view.js").View} */
export async function orgsView(ctx) {
  const cursor = ctx.query.get("cursor") ?? undefined;
  const back = ctx.query.get("back");
  const answer = await ctx.api.get("/orgs", { cursor });
  /** @type {Array<{ org: string, quota: any, tenant_count: number, updated_at: string }>} */
  const orgs = answer.orgs;
  const rows = orgs.map((o) => [link(o.org, `orgs/${encodeURIComponent(o.org)}`), formatCount(o.tenant_count), describeQuota(o.quota), time(o.updated_at)]);
  ctx.show(
    page(
      ctx,
      "Orgs",
      section("All orgs", table("Orgs", ["Org", "Tenants", "Quota", "Updated"], rows, "No orgs yet."), pager("orgs", { cursor, back }, answer.next_cursor)),
      createForm(ctx),
    ),
  );
}

/** @type {import("../view.js").View} */
export async function orgView(ctx) {
  const slug = ctx.params[0] ?? "";
  const org = await ctx.api.get(`/orgs/${seg(slug)}`);
  const quota = quotaEditor({ initial: org.quota });
  const form = writeForm({ legend: "Quota over all its tenants", canWrite: ctx.canWrite, submit: "Save quota" }, quota.element);
  onSubmit(form, async () => {
    await ctx.api.put(`/orgs/${seg(org.org)}`, { quota: quota.read() });
    ctx.reload("Quota saved.");
  });
  const remove = confirmedButton({
    label: "Delete org",
    danger: true,
    canWrite: ctx.canWrite,
    confirm: { title: `Delete ${org.org}?`, message: "Only an org with no tenants can be deleted.", confirm: "Delete org" },
    action: async () => {
      await ctx.api.del(`/orgs/${seg(org.org)}`);
      ctx.go("#/orgs");
    },
    failure: "The org could not be deleted.",
  });
  /** @type {string[]} */
  const tenants = org.tenants ?? [];
  ctx.show(
    page(
      ctx,
      `Org ${org.org}`,
      el("p", { class: "meta" }, `${formatCount(org.tenant_count)} tenant(s) · created `, time(org.created_at), " · updated ", time(org.updated_at)),
      section("Quota use, summed over its tenants", quotaGauges(org.usage ?? null, org.quota)),
      section("Budgets over all its tenants", await budgetPanel(ctx, { path: `/orgs/${seg(org.org)}`, name: `org:${org.org}`, label: `org:${org.org}` })),
      section("Tenants", tenants.length === 0 ? el("p", { class: "empty" }, "No tenants: set a tenant's org on its page.") : el("ul", { class: "inline-list" }, tenants.map((t) => el("li", {}, link(t, `tenants/${encodeURIComponent(t)}`))))),
      form,
      section("Danger zone", remove),
    ),
  );
}
