// @ts-check
// #/tenants: the tenants, a page at a time, and a form to create one.
// PUT /tenants/{t} creates or replaces; this form only creates, so it asks
// first whether the slug is taken rather than overwrite a tenant's limits.
import { ApiError, exists, seg } from "../api.js";
import { el, table, time } from "../dom.js";
import { field, input, onSubmit, writeForm } from "../forms.js";
import { describeLimits, limitsEditor } from "../limits-editor.js";
import { describeQuota, quotaEditor } from "../quota-editor.js";
import { link, orgPicker, page, pager, section } from "../view.js";

/** @param {import("../view.js").ViewContext} ctx */
function createForm(ctx) {
  const slug = input("tenant", { required: true, pattern: "[a-z0-9][a-z0-9._-]{0,63}" });
  const org = orgPicker(ctx, "org", "", { placeholder: "none" });
  const quota = quotaEditor();
  const limits = limitsEditor({ tenantShape: true });
  const form = writeForm(
    { legend: "New tenant", canWrite: ctx.canWrite, submit: "Create tenant" },
    el(
      "div",
      { class: "row" },
      field("Tenant slug", slug, { field: "tenant", hint: "Lower-case letters, digits, . _ -" }),
      field("Org", org, { field: "org", hint: "Optional; the org must exist." }),
    ),
    quota.element,
    limits.element,
  );
  onSubmit(form, async () => {
    const name = slug.value.trim();
    if (name === "") throw new ApiError(400, { code: "invalid_request", field: "tenant", detail: "tenant: must not be empty" });
    if (await exists(ctx.api, `/tenants/${seg(name)}`)) {
      throw new ApiError(400, { code: "invalid_request", field: "tenant", detail: `tenant: a tenant named ${name} already exists; edit it on its page` });
    }
    const body = { limits: limits.read(), quota: quota.read(), org: org.value.trim() === "" ? undefined : org.value.trim() };
    await ctx.api.put(`/tenants/${seg(name)}`, body);
    ctx.go(`#/tenants/${encodeURIComponent(name)}`);
  });
  return form;
}

/** @type {import("../view.js").View} */
export async function tenantsView(ctx) {
  const cursor = ctx.query.get("cursor") ?? undefined;
  const back = ctx.query.get("back");
  const answer = await ctx.api.get("/tenants", { cursor });
  /** @type {Array<{ tenant: string, org: string | null, limits: unknown, quota: any, updated_at: string }>} */
  const tenants = answer.tenants;
  const rows = tenants.map((t) => [
    link(t.tenant, `tenants/${encodeURIComponent(t.tenant)}`),
    t.org === null ? "—" : link(t.org, `orgs/${encodeURIComponent(t.org)}`),
    describeQuota(t.quota),
    describeLimits(t.limits, true),
    time(t.updated_at),
  ]);
  ctx.show(
    page(
      ctx,
      "Tenants",
      section(
        "All tenants",
        table("Tenants", ["Tenant", "Org", "Quota", "Limits", "Updated"], rows, cursor === undefined ? "No tenants yet: create the first below." : "No more tenants."),
        pager("tenants", { cursor, back }, answer.next_cursor),
      ),
      createForm(ctx),
    ),
  );
}
