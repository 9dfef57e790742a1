// @ts-check
// #/keys?tenant=…: a tenant's managed keys. Minting shows the secret once,
// with a copy button; it lives only in that panel (never stored, never
// listed again) and is gone when the panel is closed or the page left.
// Revoking asks first.
import { seg } from "../api.js";
import { keyBudgetPanel } from "../budget-gauges.js";
import { el, formatCount, notice, table, time } from "../dom.js";
import { confirmedButton, expiryField, field, input, onSubmit, writeForm } from "../forms.js";
import { link, page, refused, searchForm, section, tenantPicker, valueOf } from "../view.js";

/**
 * @typedef {{ id: string, name: string, prefix: string, created_at: string, expires_at: string | null, revoked_at: string | null,
 *   last_used_at: string | null, last_used_from: string | null, use_count: number }} Key
 */

/** @param {Key} key */
function statusOf(key) {
  if (key.revoked_at !== null) return el("span", { class: "badge muted" }, "revoked ", time(key.revoked_at));
  if (key.expires_at !== null && Date.parse(key.expires_at) <= Date.now()) return el("span", { class: "badge muted" }, "expired");
  return el("span", { class: "badge ok" }, "active");
}

/**
 * The panel with a freshly minted secret: shown once, copied with a button.
 * @param {string} secret
 * @param {string} name
 */
function secretPanel(secret, name) {
  const code = el("code", { class: "secret", "data-secret": true }, secret);
  const status = el("span", { role: "status", class: "copy-status" });
  const copy = el("button", { type: "button", class: "primary" }, "Copy key");
  copy.addEventListener("click", () => {
    navigator.clipboard
      .writeText(secret)
      .then(() => status.replaceChildren("Copied."))
      .catch(() => {
        // No clipboard access (an insecure origin, a denied permission): select it for Ctrl+C instead.
        getSelection()?.selectAllChildren(code);
        status.replaceChildren("Selected: press Ctrl+C (⌘C) to copy.");
      });
  });
  const panel = el(
    "section",
    { class: "card secret-panel", "aria-labelledby": "secret-title" },
    el("h2", { id: "secret-title" }, `New key “${name}”: copy it now`),
    el("p", {}, "This is the only time the secret is shown. Tollgate keeps only its digest; if it is lost, revoke it and mint another."),
    el("div", { class: "secret-row" }, code, copy, status),
  );
  const done = el("button", { type: "button", onclick: () => panel.remove() }, "Done, hide the secret");
  panel.appendChild(el("div", { class: "actions" }, done));
  return panel;
}

/**
 * @param {import("../view.js").ViewContext} ctx
 * @param {string} tenant
 */
async function keysTable(ctx, tenant) {
  /** @type {{ keys: Key[] }} */
  const answer = await ctx.api.get(`/tenants/${seg(tenant)}/keys`);
  const holder = el("div", {});
  const rows = answer.keys.map((key) => {
    const revoke = confirmedButton({
      label: "Revoke",
      name: `Revoke key ${key.name}`,
      danger: true,
      canWrite: ctx.canWrite && key.revoked_at === null,
      confirm: { title: `Revoke “${key.name}”?`, message: `Key ${key.prefix}… stops working at once here and everywhere within the cache TTL. This cannot be undone.`, confirm: "Revoke key" },
      action: async () => {
        await ctx.api.del(`/keys/${seg(key.id)}`);
        // The fresh table takes this one's place, so only the latest revoke's line shows.
        const fresh = await keysTable(ctx, tenant);
        fresh.appendChild(notice("status", `Revoked ${key.name}.`));
        holder.replaceWith(fresh);
      },
      failure: "The key could not be revoked.",
    });
    return [
      key.name,
      // One form for keys everywhere in the console: key:<id>, which explain takes.
      link(`key:${key.id}`, "explain", { caller: `key:${key.id}` }),
      el("code", {}, `${key.prefix}…`),
      time(key.created_at),
      time(key.expires_at),
      key.last_used_at === null ? "never" : el("span", {}, time(key.last_used_at), key.last_used_from === null ? "" : ` from ${key.last_used_from}`),
      formatCount(key.use_count),
      statusOf(key),
      revoke,
    ];
  });
  holder.appendChild(table(`Keys of ${tenant}`, ["Name", "Id", "Prefix", "Created", "Expires", "Last used", "Uses", "Status", ""], rows, "No keys yet."));
  return holder;
}

/**
 * @param {import("../view.js").ViewContext} ctx
 * @param {string} tenant
 * @param {HTMLElement} listSection
 */
function mintForm(ctx, tenant, listSection) {
  const name = input("name", { required: true, maxlength: 128 });
  const expiry = expiryField();
  const form = writeForm({ legend: "Mint a key", canWrite: ctx.canWrite, submit: "Mint key" }, field("Name", name, { field: "name", hint: "For people: who or what uses it." }), expiry.element);
  onSubmit(form, async () => {
    const minted = await ctx.api.post(`/tenants/${seg(tenant)}/keys`, { name: name.value, expires_at: expiry.read() });
    form.before(secretPanel(minted.key, minted.name));
    form.reset();
    listSection.replaceChildren(...[...listSection.children].slice(0, 1), await keysTable(ctx, tenant));
    form.previousElementSibling?.querySelector("button")?.focus();
  });
  return form;
}

/** @type {import("../view.js").View} */
export async function keysView(ctx) {
  const tenant = ctx.query.get("tenant") ?? "";
  const picker = searchForm(
    "Choose a tenant",
    (form) => ctx.go(`#/keys?tenant=${encodeURIComponent(valueOf(form, "tenant"))}`),
    field("Tenant", tenantPicker(ctx, "tenant", tenant, { required: "" })),
    el("button", { type: "submit" }, "Show keys"),
  );
  if (tenant === "") {
    ctx.show(page(ctx, "Keys", el("p", {}, "Keys belong to a tenant: choose one, or open it from ", link("the tenants", "tenants"), "."), picker));
    return;
  }
  let table;
  try {
    table = await keysTable(ctx, tenant);
  } catch (error) {
    // An unknown or misspelt tenant: say so on the picker, so another can be chosen.
    if (refused(ctx, "Keys", picker, error)) return;
    throw error;
  }
  const list = section("Keys of this tenant", table);
  ctx.show(page(ctx, `Keys of ${tenant}`, picker, mintForm(ctx, tenant, list), list, section("Budgets of its keys", await keyBudgetPanel(ctx, tenant))));
}
