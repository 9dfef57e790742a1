// @ts-check
// #/explain?caller=…: what applies to one caller and why (GET /callers/{key},
// docs/design.md): each limit with its source, scope and where the caller stands
// under it now, any override and any block; and resetting its limiter state
// (DELETE /callers/{key}/state). Asking charges the caller nothing.
import { seg } from "../api.js";
import { el, formatCount, table, time } from "../dom.js";
import { confirmedButton, field, input } from "../forms.js";
import { describeLimits, heldText, penaltyText } from "../limits-editor.js";
import { activeBadge, link, page, refused, searchForm, section, shadowBadge, valueOf } from "../view.js";

/**
 * @typedef {{ category: string, subject: string, source: string, scope: string,
 *   limit: { count: number, window_s: number, burst?: number, delay_max_ms?: number, penalty?: object }, remaining: number, reset_ms: number, shadow?: boolean }} Applied
 */
/** @typedef {{ route: string | null, charges: Record<string, number>, charge_on_status: Array<number | string> }} StatusCharge */

/** Why a limit applies, by its `source`, most specific first. */
const SOURCES = /** @type {Record<string, string>} */ ({
  override: "an override for this caller",
  key: "the key's own limits",
  tenant: "its tenant's limits",
  category: "the category's configured default",
  builtin: "the built-in default",
});

/** @param {number} ms */
function duration(ms) {
  if (ms <= 0) return "now";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms / 60_000)} min`;
}

/** @param {Applied} applied */
function limitText(applied) {
  const { count, window_s: windowS, burst, delay_max_ms: delayMaxMs, penalty } = applied.limit;
  const text = `${formatCount(count)} per ${windowS} s${burst === undefined ? "" : `, burst ${formatCount(burst)}`}${heldText(delayMaxMs)}${penaltyText(penalty)}`;
  // A shadow limit is kept as if enforced, and refuses nothing.
  return applied.shadow === true ? el("span", {}, text, " ", shadowBadge()) : text;
}

/**
 * The routes whose charges wait for the origin's status: they apply to every caller.
 * @param {ReadonlyArray<StatusCharge>} routes
 */
function statusChargesTable(routes) {
  const rows = routes.map((r) => [
    r.route === null ? "—" : el("code", {}, r.route),
    Object.entries(r.charges).map(([category, cost]) => `${category} ${formatCount(cost)}`).join(", "),
    r.charge_on_status.join(", "),
  ]);
  return table("Routes charged only on some statuses", ["Route", "Charges", "Only when the origin answers"], rows, "No route: every charge is taken when a request is admitted.");
}

/**
 * @param {import("../view.js").ViewContext} ctx
 * @param {string} caller
 */
function resetButton(ctx, caller) {
  return confirmedButton({
    label: "Reset limiter state",
    canWrite: ctx.canWrite,
    confirm: { title: `Reset ${caller}?`, message: "Forgets where this caller stands under its limits on this isolate (and in the ledger for global limits), so it starts afresh. Audited.", confirm: "Reset state" },
    action: async () => {
      await ctx.api.del(`/callers/${seg(caller)}/state`);
      ctx.reload(`Limiter state of ${caller} reset.`);
    },
    failure: "The state could not be reset.",
  });
}

/**
 * @param {import("../view.js").ViewContext} ctx
 * @param {any} answer
 */
function explanation(ctx, answer) {
  /** @type {Applied[]} */
  const limits = answer.limits ?? [];
  const rows = limits.map((l) => [l.category, l.subject, SOURCES[l.source] ?? l.source, l.scope, limitText(l), formatCount(l.remaining), duration(l.reset_ms)]);
  const block = answer.block;
  const override = answer.override;
  return el(
    "div",
    {},
    block === null || block === undefined
      ? el("p", { class: "notice" }, "Not blocked.")
      : el(
          "p",
          { class: block.shadow === true ? "notice" : "notice error" },
          block.shadow === true ? "Shadow-blocked (refuses nothing): " : typeof block.penalty === "string" ? "Blocked by the penalty of a limit: " : "Blocked: ",
          el("code", {}, block.target),
          " · ",
          activeBadge(block.active),
          " · until ",
          block.expires_at === null ? "removed" : time(block.expires_at),
          block.reason === null ? "" : ` · ${block.reason}`,
        ),
    el("p", { class: "meta" }, "Tenant: ", answer.tenant === null ? "none" : link(answer.tenant, `tenants/${encodeURIComponent(answer.tenant)}`)),
    section(
      "Limits that apply",
      el("p", { class: "hint" }, "Remaining and reset are this isolate's state (a global limit's: the ledger's). Another isolate may have seen the caller differently."),
      table(`Limits that apply to ${answer.caller}`, ["Category", "Subject", "Why", "Scope", "Limit", "Remaining", "Full again in"], rows, "No limits apply."),
    ),
    section(
      "Override",
      override === null || override === undefined
        ? el("p", {}, "None.")
        : el("p", {}, describeLimits(override.limits, false), " · ", activeBadge(override.active), override.shadow === true ? [" ", shadowBadge()] : null, " · ", override.expires_at === null ? "no expiry" : el("span", {}, "until ", time(override.expires_at)), override.reason === null ? "" : ` · ${override.reason}`),
    ),
    section(
      "Charged by the origin's answer",
      el("p", { class: "hint" }, "Routes whose charges are taken only when the origin's status is one of these (charge_on_status, set on a route in the config). The caller must have room for the charge before the call; it is given back when the status does not match."),
      statusChargesTable(answer.status_charges ?? []),
    ),
    section("Limiter state", resetButton(ctx, answer.caller)),
  );
}

/** @type {import("../view.js").View} */
export async function explainView(ctx) {
  const caller = ctx.query.get("caller") ?? "";
  const form = searchForm(
    "Explain a caller",
    (f) => ctx.go(`#/explain?caller=${encodeURIComponent(valueOf(f, "caller"))}`),
    field("Caller key", input("caller", { value: caller, required: true, placeholder: "key:<id>, ip:<address>, jwt:<hex> or tenant:<slug>" })),
    el("button", { type: "submit" }, "Explain"),
  );
  if (caller === "") {
    ctx.show(page(ctx, "Explain a caller", el("p", {}, "Which limits apply to a caller, where each comes from, where it stands now, and whether it is overridden or blocked."), form));
    return;
  }
  let answer;
  try {
    answer = await ctx.api.get(`/callers/${seg(caller)}`);
  } catch (error) {
    // A malformed or unknown caller: say so on the form, so another can be asked.
    if (refused(ctx, "Explain a caller", form, error)) return;
    throw error;
  }
  ctx.show(page(ctx, `Explain ${answer.caller}`, form, explanation(ctx, answer)));
}
