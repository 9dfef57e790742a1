// @ts-check
// #/blocks: callers, tenants and networks refused with 403 `blocked` before
// any other check, optionally until a time, with a reason. Blocking a target
// again replaces its expiry and reason. A shadow block refuses nothing (what
// it would refuse shows under Traffic); a penalty is a block a limit's
// penalty box imposed (reason penalty:<policy>), removed like any other.
import { seg } from "../api.js";
import { el, table, time } from "../dom.js";
import { confirmedButton, expiryField, field, input, onSubmit, writeForm } from "../forms.js";
import { activeBadge, link, page, pager, section, shadowBadge } from "../view.js";

/** @typedef {{ id: number, target: string, expires_at: string | null, reason: string | null, created_at: string, active: boolean, shadow?: boolean, penalty?: string | null }} Block */

/** @param {import("../view.js").ViewContext} ctx */
function blockForm(ctx) {
  const target = input("target", { required: true, placeholder: "ip:203.0.113.7 or net:203.0.113.0/24" });
  const expiry = expiryField("1d");
  const reason = input("reason", { maxlength: 256 });
  const shadow = el("select", { name: "shadow" }, el("option", { value: "false" }, "enforced: refuse"), el("option", { value: "true" }, "shadow: only mark and count"));
  const form = writeForm(
    { legend: "Block a caller, tenant or network", canWrite: ctx.canWrite, submit: "Block" },
    field("Target", target, { field: "target", hint: "ip:<address>, net:<CIDR>, key:<id>, jwt:<64 hex> or tenant:<slug>." }),
    el(
      "div",
      { class: "row" },
      expiry.element,
      field("Reason", reason, { field: "reason", hint: "Optional; shown in this list and the audit log." }),
      field("Shadow", shadow, { field: "shadow", hint: "Shadow: what it would refuse goes on, marked, and shows under Traffic." }),
    ),
  );
  onSubmit(form, async () => {
    const reasonText = reason.value.trim();
    const block = await ctx.api.post("/blocks", { target: target.value.trim(), expires_at: expiry.read(), reason: reasonText === "" ? null : reasonText, shadow: shadow.value === "true" });
    ctx.reload(`${block.shadow ? "Shadow-blocked" : "Blocked"} ${block.target}.`);
  });
  return form;
}

/**
 * @param {import("../view.js").ViewContext} ctx
 * @param {Block} block
 */
function removeButton(ctx, block) {
  return confirmedButton({
    label: "Remove",
    name: `Remove the block of ${block.target}`,
    danger: true,
    canWrite: ctx.canWrite,
    confirm: { title: "Remove this block?", message: `${block.target} is admitted again (within the cache TTL on other isolates).`, confirm: "Remove block" },
    action: async () => {
      await ctx.api.del(`/blocks/${seg(String(block.id))}`);
      ctx.reload(`Block of ${block.target} removed.`);
    },
    failure: "The block could not be removed.",
  });
}

/** @param {string} target */
function targetCell(target) {
  // Every target reads the same way, as written; a caller (not a network) also links to its explanation.
  const explain = target.startsWith("net:") ? null : link("explain", "explain", { caller: target });
  explain?.setAttribute("aria-label", `Explain ${target}`);
  return el("span", { class: "target" }, el("code", {}, target), explain === null ? null : [" ", explain]);
}

/** @type {import("../view.js").View} */
export async function blocksView(ctx) {
  const cursor = ctx.query.get("cursor") ?? undefined;
  const answer = await ctx.api.get("/blocks", { cursor });
  /** @type {Block[]} */
  const blocks = answer.blocks;
  const rows = blocks.map((b) => [
    String(b.id),
    targetCell(b.target),
    time(b.expires_at),
    typeof b.penalty === "string" ? el("span", {}, el("span", { class: "badge warn" }, "penalty"), " ", el("code", {}, b.penalty)) : (b.reason ?? "—"),
    // One element: a phone's card lays each of a cell's children out as a grid item.
    b.shadow === true ? el("span", {}, activeBadge(b.active), " ", shadowBadge()) : activeBadge(b.active),
    time(b.created_at),
    removeButton(ctx, b),
  ]);
  ctx.show(
    page(
      ctx,
      "Blocks",
      section("Blocks", table("Blocks", ["Id", "Target", "Expires", "Reason", "State", "Created", ""], rows, "No blocks."), pager("blocks", { cursor, back: ctx.query.get("back") }, answer.next_cursor)),
      blockForm(ctx),
    ),
  );
}
