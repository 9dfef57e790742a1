// @ts-check
// Changing budgets from the tenant, key and org pages through the admin API:
// put one (create or replace), top up credits with a reason, delete one. Each
// asks first in a dialog that says what the change will do — the amount
// before and after, what stays spent, what is refused past it, when it
// alerts — computed from the budget as GET …/budgets answered it. The API's
// refusal (an unknown category, a bad amount) shows next to its field.
import { ApiError, seg } from "./api.js";
import { confirmAction } from "./confirm.js";
import { el, formatCount, uid } from "./dom.js";
import { confirmedButton, field, input, numberInput, numberOf, onSubmit, writeForm } from "./forms.js";

/**
 * @typedef {import("./budget-gauges.js").Budget} Budget
 * @typedef {{ path: string, name: string, label: string, choice?: string }} Owner
 *   `path`: the owner's admin path, segments encoded (`/tenants/acme`); `name`: as the API names it (`tenant:acme`); `label`: for people;
 *   `choice`: how a select of several owners lists it (a key's name first)
 * @typedef {import("./view.js").ViewContext} ViewContext
 */

/** The periods a budget runs over, as the period select offers them. */
const PERIODS = /** @type {const} */ ([
  ["month", "per month"],
  ["week", "per week"],
  ["day", "per day"],
  ["none", "prepaid credits"],
]);

/** `this month`, `this week`, `today`; credits have no period. */
const THIS_PERIOD = /** @type {Record<string, string>} */ ({ day: "today", week: "this week", month: "this month", none: "so far" });

/** The category every deployment knows; the others are the config's, which the API lists when one is refused. */
const KNOWN_CATEGORIES = ["request"];

/**
 * `1,000 requests`, `20,000 tokens`, `5 upload units`.
 * @param {number} n
 * @param {string} category
 */
export function unitsOf(n, category) {
  if (category === "request") return `${formatCount(n)} ${n === 1 ? "request" : "requests"}`;
  return category.endsWith("s") ? `${formatCount(n)} ${category}` : `${formatCount(n)} ${category} units`;
}

/**
 * `1,000 requests per month`, or `1,000 requests of prepaid credits`.
 * @param {number} amount
 * @param {string} category
 * @param {string} period
 */
function amountText(amount, category, period) {
  return period === "none" ? `${unitsOf(amount, category)} of prepaid credits` : `${unitsOf(amount, category)} per ${period}`;
}

/**
 * `80 % and 100 %`; `50 %, 80 % and 100 %`.
 * @param {ReadonlyArray<number>} thresholds
 */
function percents(thresholds) {
  const list = thresholds.map((t) => `${Math.round(t * 1000) / 10} %`);
  return list.length < 2 ? (list[0] ?? "") : `${list.slice(0, -1).join(", ")} and ${list[list.length - 1]}`;
}

/**
 * What a budget's thresholds do, for its gauge: `alerts at 80 % and 100 % · refuses at 100 %` (a shadow budget: `· shadow: refuses nothing`).
 * @param {ReadonlyArray<number>} thresholds
 * @param {boolean} [shadow]
 */
export function thresholdText(thresholds, shadow = false) {
  return `${thresholds.length === 0 ? "no alerts" : `alerts at ${percents(thresholds)}`} · ${shadow ? "shadow: refuses nothing" : "refuses at 100 %"}`;
}

/**
 * The sentences a put's confirmation shows.
 * @param {Owner} owner
 * @param {string} category
 * @param {{ amount: number, period: string, thresholds?: number[], shadow?: boolean }} body
 * @param {Budget | null} before the budget this replaces, if any
 */
export function putEffect(owner, category, body, before) {
  const lines = [];
  const after = amountText(body.amount, category, body.period);
  if (before === null) {
    lines.push(body.period === "none" ? `${owner.label} gets ${after}: its requests spend them, they never reset, and top-ups add to them.` : `${owner.label} may spend up to ${after}; ${THIS_PERIOD[body.period]} starts from 0 spent.`);
  } else if (before.period === body.period) {
    const remaining = body.amount - before.used;
    const stays = `The ${formatCount(before.used)} spent ${THIS_PERIOD[body.period]} stays`;
    lines.push(`Its ${category} budget goes from ${amountText(before.amount, category, before.period)} to ${after}.`);
    lines.push(remaining > 0 ? `${stays}, so ${formatCount(remaining)} remain.` : `${stays}: nothing remains, so its requests are refused ${body.period === "none" ? "until it is topped up" : `until ${THIS_PERIOD[body.period]} is over`}.`);
  } else {
    lines.push(`Its ${category} budget goes from ${amountText(before.amount, category, before.period)} to ${after}.`);
    lines.push(`Spending starts again from 0 (${formatCount(before.used)} was spent ${THIS_PERIOD[before.period]}).`);
  }
  if (body.shadow === true) lines.push("A shadow budget: kept as if enforced, but past it nothing is refused (nor charged to it); those requests are marked and show under Traffic.");
  else lines.push(body.period === "none" ? "Once they are spent, its requests are refused 402 credits_exhausted until a top-up." : `Past it, its requests are refused 429 budget_exhausted until the ${body.period} resets.`);
  const thresholds = body.thresholds ?? before?.thresholds ?? [0.8, 1];
  lines.push(thresholds.length === 0 ? "No alerts." : `Alerts at ${percents(thresholds)} of it (an audit event, and the webhook if one is set).`);
  return lines;
}

/**
 * The sentences a top-up's confirmation shows.
 * @param {Owner} owner
 * @param {Budget} budget
 * @param {number} amount
 * @param {string} reason
 */
export function topUpEffect(owner, budget, amount, reason) {
  const total = budget.amount + amount;
  return [
    `Adds ${unitsOf(amount, budget.category)} to the ${budget.category} credits of ${owner.label}: ${formatCount(budget.amount)} → ${formatCount(total)} in all, ${formatCount(total - budget.used)} remaining.`,
    reason === "" ? "No reason given: the audit log will show none." : `Reason, kept in the audit log: ${reason}`,
  ];
}

/**
 * The sentences a delete's confirmation shows.
 * @param {Owner} owner
 * @param {Budget} budget
 */
function deleteEffect(owner, budget) {
  return [
    `The ${budget.category} budget of ${owner.label} (${formatCount(budget.used)} of ${formatCount(budget.amount)} spent ${THIS_PERIOD[budget.period] ?? ""}) stops capping its requests at once.`,
    "Putting one again later starts anew, from 0 spent.",
  ];
}

/**
 * Alert thresholds from `80, 100` (percent); undefined when empty (the API's default).
 * @param {string} text
 */
function thresholdsOf(text) {
  const trimmed = text.trim();
  if (trimmed === "") return undefined;
  const parts = trimmed.split(/[\s,]+/).map((p) => p.replace(/%$/, ""));
  if (parts.some((p) => !/^\d+(\.\d+)?$/.test(p))) throw new ApiError(400, { code: "invalid_request", field: "thresholds", detail: "thresholds: write percentages separated by commas, such as 80, 100" });
  return parts.map((p) => Math.round(Number(p) * 10) / 1000);
}

/**
 * A budget's amount, period and alert fields; `initial` fills them (a change), else the defaults (a new budget).
 * @param {Budget | null} initial
 */
function budgetFields(initial) {
  const amount = numberInput("amount", { value: initial?.amount ?? "", required: true, min: 0, step: 1 });
  const period = el("select", { name: "period" }, PERIODS.map(([value, label]) => el("option", { value, selected: value === (initial?.period ?? "month") }, label)));
  const alerts = input("thresholds", { value: initial === null ? "" : initial.thresholds.map((t) => Math.round(t * 1000) / 10).join(", "), placeholder: "80, 100" });
  const shadow = el("select", { name: "shadow" }, el("option", { value: "false" }, "no"), el("option", { value: "true", selected: initial?.shadow === true }, "yes: tried"));
  const fields = [field("Amount", amount, { field: "amount" }), field("Period", period, { field: "period" }), field("Alerts at (%)", alerts, { field: "thresholds" }), field("Shadow", shadow, { field: "shadow" })];
  const hint = el("p", { class: "hint" }, "The amount is in units of the category (a request is 1 request; tokens and a route's charges count as they are charged). Periods start at 00:00 UTC (a week on Monday, a month on the 1st); credits never reset and take top-ups. Alerts: percentages of the amount, each once a period; empty: 80, 100. Requests are refused at 100 % whatever the alerts say, unless the budget is a shadow one (tried: it refuses nothing, and Traffic shows whom it would refuse).");
  return {
    fields,
    hint,
    /** @returns {{ amount: number, period: string, thresholds?: number[], shadow: boolean }} */
    read() {
      const value = numberOf(amount);
      if (value === undefined) throw new ApiError(400, { code: "invalid_request", field: "amount", detail: "amount: must not be empty" });
      const thresholds = thresholdsOf(alerts.value);
      return { amount: value, period: period.value, ...(thresholds === undefined ? {} : { thresholds }), shadow: shadow.value === "true" };
    },
  };
}

/**
 * Puts a budget after the operator confirmed its effect; "" when they did not.
 * @param {ViewContext} ctx
 * @param {Owner} owner
 * @param {string} category
 * @param {{ amount: number, period: string, thresholds?: number[] }} body
 * @param {Budget | null} before
 */
async function putConfirmed(ctx, owner, category, body, before) {
  const ok = await confirmAction({ title: `${before === null ? "Set" : "Change"} the ${category} budget of ${owner.label}?`, message: putEffect(owner, category, body, before), confirm: before === null ? "Set budget" : "Change budget", tone: "primary" });
  if (!ok) return "Nothing was changed.";
  await ctx.api.put(`${owner.path}/budgets/${seg(category)}`, body);
  ctx.reload(`The ${category} budget of ${owner.label} is ${amountText(body.amount, category, body.period)}.`);
  return "";
}

/**
 * A form folded under a summary line, as the per-budget actions are.
 * @param {string} summary
 * @param {HTMLFormElement} form
 */
function folded(summary, form) {
  return el("details", { class: "budget-edit" }, el("summary", {}, summary), form);
}

/**
 * Change, top up (credits only) and delete, under one budget's gauge.
 * @param {ViewContext} ctx
 * @param {Owner} owner
 * @param {Budget} budget
 */
export function budgetActions(ctx, owner, budget) {
  const fields = budgetFields(budget);
  const change = writeForm({ legend: `Change the ${budget.category} budget`, canWrite: ctx.canWrite, submit: "Review the change", className: "inline-form" }, el("div", { class: "row" }, fields.fields), fields.hint);
  onSubmit(change, () => putConfirmed(ctx, owner, budget.category, fields.read(), budget));
  /** @type {HTMLElement[]} */
  const actions = [folded("Change", change)];
  if (budget.period === "none") {
    const amount = numberInput("amount", { required: true, min: 1, step: 1 });
    const reason = input("reason", { maxlength: 256, placeholder: "e.g. invoice 118" });
    const topUp = writeForm(
      { legend: `Top up the ${budget.category} credits`, canWrite: ctx.canWrite, submit: "Review the top-up", className: "inline-form" },
      field("Add", amount, { field: "amount" }),
      field("Reason", reason, { field: "reason", hint: "Kept in the audit log with the top-up." }),
    );
    // One key per form shown: a retry of the same top-up (the dialog confirmed twice, a network retry) adds it once.
    const idempotencyKey = `console-${uid()}-${Date.now().toString(36)}`;
    onSubmit(topUp, async () => {
      const added = numberOf(amount);
      if (added === undefined) throw new ApiError(400, { code: "invalid_request", field: "amount", detail: "amount: must not be empty" });
      const why = reason.value.trim();
      const ok = await confirmAction({ title: `Top up the ${budget.category} credits of ${owner.label}?`, message: topUpEffect(owner, budget, added, why), confirm: "Top up", tone: "primary" });
      if (!ok) return "Nothing was added.";
      const answer = await ctx.api.post(`${owner.path}/budgets/${seg(budget.category)}/topups`, { amount: added, ...(why === "" ? {} : { reason: why }) }, { "idempotency-key": idempotencyKey });
      ctx.reload(`Added ${unitsOf(added, budget.category)}: ${formatCount(answer.amount)} in all, ${formatCount(answer.remaining)} remaining.`);
      return "";
    });
    actions.push(folded("Top up", topUp));
  }
  actions.push(
    confirmedButton({
      label: "Delete",
      name: `Delete the ${budget.category} budget of ${owner.label}`,
      danger: true,
      canWrite: ctx.canWrite,
      confirm: { title: `Delete the ${budget.category} budget of ${owner.label}?`, message: deleteEffect(owner, budget), confirm: "Delete budget" },
      action: async () => {
        await ctx.api.del(`${owner.path}/budgets/${seg(budget.category)}`);
        ctx.reload(`Deleted the ${budget.category} budget of ${owner.label}.`);
      },
      failure: "The budget could not be deleted.",
    }),
  );
  return el("div", { class: "budget-actions" }, actions);
}

/**
 * A form for a new budget (or replacing one by its category) of one of `owners`: a select when there are several (a tenant's keys).
 * @param {ViewContext} ctx
 * @param {ReadonlyArray<Owner>} owners
 * @param {(owner: Owner) => ReadonlyArray<Budget>} budgetsOf what each owner has now, so a category it has is a change
 */
export function addBudgetForm(ctx, owners, budgetsOf) {
  const listId = `categories-${uid()}`;
  const category = input("category", { required: true, list: listId, placeholder: "request" });
  const pick = owners.length > 1 ? el("select", { name: "owner" }, owners.map((o, i) => el("option", { value: String(i) }, o.choice ?? o.label))) : null;
  const fields = budgetFields(null);
  const form = writeForm(
    { legend: owners.length > 1 ? "Add a budget to a key" : "Add a budget", canWrite: ctx.canWrite, submit: "Review the budget", className: "inline-form" },
    el("div", { class: "row" }, pick === null ? null : field("Key", pick, { field: "owner" }), field("Category", category, { field: "category" }), fields.fields),
    el("datalist", { id: listId }, KNOWN_CATEGORIES.map((c) => el("option", { value: c }))),
    el("p", { class: "hint" }, "Category: request, or one a route charges (its response_charge too, such as tokens). A category the owner has a budget of already is a change of it."),
    fields.hint,
  );
  onSubmit(form, async () => {
    const owner = owners[pick === null ? 0 : Number(pick.value)];
    if (owner === undefined) return "";
    const name = category.value.trim();
    if (name === "") throw new ApiError(400, { code: "invalid_request", field: "category", detail: "category: must not be empty" });
    const body = fields.read();
    return putConfirmed(ctx, owner, name, body, budgetsOf(owner).find((b) => b.category === name) ?? null);
  });
  return form;
}
