// @ts-check
// #/tenants/{tenant}: one tenant — its quota gauges (live, from its quota
// object), its limits, quota and org to edit, links to its keys, usage,
// explanation and audit trail, and deleting it.
import { seg } from "../api.js";
import { budgetPanel } from "../budget-gauges.js";
import { quotaGauges } from "../charts.js";
import { el, time } from "../dom.js";
import { confirmedButton, field, input, onSubmit, writeForm } from "../forms.js";
import { limitsEditor } from "../limits-editor.js";
import { quotaEditor } from "../quota-editor.js";
import { link, orgPicker, page, section } from "../view.js";

/**
 * @param {import("../view.js").ViewContext} ctx
 * @param {any} tenant
 */
function editForm(ctx, tenant) {
  const org = orgPicker(ctx, "org", tenant.org ?? "", { placeholder: "none" });
  const quota = quotaEditor({ initial: tenant.quota });
  const limits = limitsEditor({ tenantShape: true, initial: tenant.limits });
  const form = writeForm(
    { legend: "Limits, quota and org", canWrite: ctx.canWrite, submit: "Save changes" },
    field("Org", org, { field: "org", hint: "Empty: no org. The org must exist." }),
    quota.element,
    limits.element,
  );
  onSubmit(form, async () => {
    const orgName = org.value.trim();
    await ctx.api.put(`/tenants/${seg(tenant.tenant)}/limits`, { limits: limits.read(), quota: quota.read(), org: orgName === "" ? null : orgName });
    ctx.reload("Saved. Other isolates see the change within the cache TTL.");
  });
  return form;
}

/** @type {import("../view.js").View} */
export async function tenantView(ctx) {
  const slug = ctx.params[0] ?? "";
  const tenant = await ctx.api.get(`/tenants/${seg(slug)}`);
  const remove = confirmedButton({
    label: "Delete tenant",
    danger: true,
    canWrite: ctx.canWrite,
    confirm: { title: `Delete ${tenant.tenant}?`, message: "Its keys stop working at once and its stored-object records are removed. This cannot be undone.", confirm: "Delete tenant" },
    action: async () => {
      await ctx.api.del(`/tenants/${seg(tenant.tenant)}`);
      ctx.go("#/tenants");
    },
    failure: "The tenant could not be deleted.",
  });
  const q = { tenant: tenant.tenant };
  ctx.show(
    page(
      ctx,
      `Tenant ${tenant.tenant}`,
      el(
        "p",
        { class: "meta" },
        "Org: ",
        tenant.org === null ? "none" : link(tenant.org, `orgs/${encodeURIComponent(tenant.org)}`),
        " · created ",
        time(tenant.created_at),
        " · updated ",
        time(tenant.updated_at),
      ),
      el(
        "nav",
        { class: "related", "aria-label": "About this tenant" },
        link("Keys", "keys", q),
        link("Usage by month", "usage", q),
        link("Explain", "explain", { caller: `tenant:${tenant.tenant}` }),
        link("Audit trail", "audit", q),
      ),
      section("Quota use now", el("p", { class: "hint" }, "Live, from the tenant's quota object."), quotaGauges(tenant.usage ?? null, tenant.quota)),
      section("Budgets", await budgetPanel(ctx, { path: `/tenants/${seg(tenant.tenant)}`, name: `tenant:${tenant.tenant}`, label: `tenant:${tenant.tenant}` })),
      editForm(ctx, tenant),
      section("Danger zone", el("p", { class: "hint" }, "Deleting a tenant revokes all its keys."), remove),
    ),
  );
}
