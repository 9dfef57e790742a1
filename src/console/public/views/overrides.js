// @ts-check
// #/overrides: limits for one caller (`ip:…`, `key:…`, `jwt:…`) that win over
// every other source while active, optionally until a time, with a reason.
// Setting one for a caller that has one replaces it. A shadow override is
// tried beside the limits the caller has without it, which stay enforced.
import { ApiError, seg } from "../api.js";
import { el, table, time } from "../dom.js";
import { confirmedButton, expiryField, field, input, onSubmit, writeForm } from "../forms.js";
import { describeLimits, limitsEditor } from "../limits-editor.js";
import { activeBadge, link, page, pager, section, shadowBadge } from "../view.js";

/** @typedef {{ caller_key: string, limits: unknown, expires_at: string | null, reason: string | null, active: boolean, updated_at: string, shadow?: boolean }} Override */

/** @param {import("../view.js").ViewContext} ctx */
function setForm(ctx) {
  const caller = input("caller_key", { required: true, placeholder: "ip:203.0.113.7 or key:<id>" });
  const limits = limitsEditor({ tenantShape: false, legend: "Limits for this caller" });
  const expiry = expiryField("1h");
  const reason = input("reason", { maxlength: 256 });
  const shadow = el("select", { name: "shadow" }, el("option", { value: "" }, "as each limit says"), el("option", { value: "true" }, "shadow: try the whole override"), el("option", { value: "false" }, "enforce every limit"));
  const form = writeForm(
    { legend: "Set an override", canWrite: ctx.canWrite, submit: "Set override" },
    field("Caller key", caller, { field: "caller_key", hint: "ip:<address> (IPv6: its /64), key:<id> or jwt:<64 hex>." }),
    limits.element,
    el(
      "div",
      { class: "row" },
      expiry.element,
      field("Reason", reason, { field: "reason", hint: "Optional; shown in this list and the audit log." }),
      field("Shadow", shadow, { field: "shadow", hint: "Shadow: tried beside the caller's limits in force, which stay enforced; Traffic shows whom it would refuse." }),
    ),
  );
  onSubmit(form, async () => {
    const key = caller.value.trim();
    if (key === "") throw new ApiError(400, { code: "invalid_request", field: "caller_key", detail: "caller_key: must not be empty" });
    const reasonText = reason.value.trim();
    await ctx.api.put(`/overrides/${seg(key)}`, { limits: limits.read(), expires_at: expiry.read(), reason: reasonText === "" ? null : reasonText, ...(shadow.value === "" ? {} : { shadow: shadow.value === "true" }) });
    ctx.reload(`Override for ${key} set.`);
  });
  return form;
}

/**
 * @param {import("../view.js").ViewContext} ctx
 * @param {Override} override
 */
function removeButton(ctx, override) {
  return confirmedButton({
    label: "Remove",
    name: `Remove the override for ${override.caller_key}`,
    danger: true,
    canWrite: ctx.canWrite,
    confirm: { title: "Remove this override?", message: `${override.caller_key} goes back to the limits it would have without one.`, confirm: "Remove override" },
    action: async () => {
      await ctx.api.del(`/overrides/${seg(override.caller_key)}`);
      ctx.reload(`Override for ${override.caller_key} removed.`);
    },
    failure: "The override could not be removed.",
  });
}

/** @type {import("../view.js").View} */
export async function overridesView(ctx) {
  const cursor = ctx.query.get("cursor") ?? undefined;
  const answer = await ctx.api.get("/overrides", { cursor });
  /** @type {Override[]} */
  const overrides = answer.overrides;
  const rows = overrides.map((o) => [
    link(o.caller_key, "explain", { caller: o.caller_key }),
    describeLimits(o.limits, false),
    time(o.expires_at),
    o.reason ?? "—",
    o.shadow === true ? el("span", {}, activeBadge(o.active), " ", shadowBadge()) : activeBadge(o.active),
    time(o.updated_at),
    removeButton(ctx, o),
  ]);
  ctx.show(
    page(
      ctx,
      "Overrides",
      section(
        "Caller overrides",
        table("Caller overrides", ["Caller", "Limits", "Expires", "Reason", "State", "Updated", ""], rows, "No overrides."),
        pager("overrides", { cursor, back: ctx.query.get("back") }, answer.next_cursor),
      ),
      setForm(ctx),
    ),
  );
}
