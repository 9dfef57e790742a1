// @ts-check
// Budgets on the tenant, key and org pages: each budget's spend this period
// against its amount, read live from GET …/budgets (the quota object's exact
// figures), with when it resets and what its thresholds do; credits show what
// remains. Under each, changing, topping up and deleting it, and a form to
// add one (budget-forms.js): disabled for the auditor.
import { seg } from "./api.js";
import { addBudgetForm, budgetActions, thresholdText } from "./budget-forms.js";
import { gauge } from "./charts.js";
import { el, formatCount, notice, time } from "./dom.js";

/**
 * @typedef {{ owner: string, category: string, period: string, amount: number, used: number, remaining: number, thresholds: number[], resets_at: string | null, shadow?: boolean }} Budget
 * @typedef {import("./budget-forms.js").Owner} Owner
 * @typedef {import("./view.js").ViewContext} ViewContext
 */

/** @type {Record<string, string>} */
const PERIOD_LABELS = { day: "today", week: "this week", month: "this month", none: "prepaid credits" };

/** @param {Budget} b */
function budgetGauge(b) {
  const label = `${b.category} · ${PERIOD_LABELS[b.period] ?? b.period}${b.shadow === true ? " · shadow" : ""}`;
  // The first threshold below the amount marks where alerts start, as the audit events do.
  const first = b.thresholds.find((t) => t < 1);
  const soft = first === undefined ? undefined : Math.floor(first * b.amount);
  const figure = gauge({ label, used: b.used, soft, hard: b.amount, format: formatCount, bounds: thresholdText(b.thresholds, b.shadow === true) });
  const when = b.resets_at === null ? el("p", { class: "hint" }, `${formatCount(b.remaining)} remaining; top-ups add to it`) : el("p", { class: "hint" }, `${formatCount(b.remaining)} remaining · resets `, time(b.resets_at));
  figure.appendChild(when);
  return figure;
}

/**
 * A budget's gauge with its actions.
 * @param {ViewContext} ctx
 * @param {Owner} owner
 * @param {Budget} b
 */
function budgetItem(ctx, owner, b) {
  return el("div", { class: "budget" }, budgetGauge(b), budgetActions(ctx, owner, b));
}

/**
 * An owner's budgets, each with its actions, and a form to add one; a notice when they could not be read.
 * @param {ViewContext} ctx
 * @param {Owner} owner
 */
export async function budgetPanel(ctx, owner) {
  /** @type {Budget[]} */
  let budgets;
  try {
    budgets = (await ctx.api.get(`${owner.path}/budgets`)).budgets;
  } catch {
    return notice("alert", "The budgets could not be read just now; reload to try again.");
  }
  return el(
    "div",
    {},
    budgets.length === 0 ? el("p", { class: "empty" }, "No budgets.") : el("div", { class: "gauges" }, ...budgets.map((b) => budgetItem(ctx, owner, b))),
    addBudgetForm(ctx, [owner], () => budgets),
  );
}

/** Keys whose budgets the keys page reads, at most (each is one call). */
const MAX_KEYS_READ = 20;
/** How many keys' budgets are read at once. */
const KEYS_READ_AT_ONCE = 6;

/**
 * The budgets of a tenant's active keys (the first MAX_KEYS_READ), one group
 * per key that has any, each with its actions; and a form to add one to any of them.
 * @param {ViewContext} ctx
 * @param {string} tenant
 */
export async function keyBudgetPanel(ctx, tenant) {
  /** @type {Array<{ id: string, name: string, revoked_at: string | null }>} */
  let keys;
  try {
    keys = (await ctx.api.get(`/tenants/${seg(tenant)}/keys`)).keys.filter((/** @type {{ revoked_at: string | null }} */ k) => k.revoked_at === null);
  } catch {
    return notice("alert", "The keys' budgets could not be read just now; reload to try again.");
  }
  // Read a few keys at a time, not one after another (a tenant with many keys
  // waited a round trip per key), nor all at once; shown in the keys' order.
  const read = keys.slice(0, MAX_KEYS_READ);
  /** @type {Array<Budget[] | null>} */
  const found = new Array(read.length).fill(null);
  let next = 0;
  async function reader() {
    while (next < read.length) {
      const i = next++;
      const key = /** @type {{ id: string }} */ (read[i]);
      try {
        found[i] = (await ctx.api.get(`/keys/${seg(key.id)}/budgets`)).budgets;
      } catch {
        found[i] = null;
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(KEYS_READ_AT_ONCE, read.length) }, reader));
  /** @type {Owner[]} */
  const owners = read.map((key) => ({ path: `/keys/${seg(key.id)}`, name: `key:${key.id}`, label: `key “${key.name}” (key:${key.id})`, choice: `${key.name} · key:${key.id}` }));
  const groups = [];
  read.forEach((key, i) => {
    const budgets = found[i] ?? null;
    const owner = /** @type {Owner} */ (owners[i]);
    if (budgets === null) groups.push(el("div", {}, el("h3", {}, key.name), notice("alert", "This key's budgets could not be read.")));
    else if (budgets.length > 0) groups.push(el("div", {}, el("h3", {}, key.name, " ", el("code", {}, `key:${key.id}`)), el("div", { class: "gauges" }, ...budgets.map((b) => budgetItem(ctx, owner, b)))));
  });
  if (groups.length === 0) groups.push(el("p", { class: "empty" }, read.length === 0 ? "No active keys." : "None of its keys has a budget."));
  if (keys.length > MAX_KEYS_READ) groups.push(el("p", { class: "hint" }, `Showing the budgets of its first ${MAX_KEYS_READ} active keys.`));
  if (owners.length > 0) groups.push(addBudgetForm(ctx, owners, (owner) => found[owners.indexOf(owner)] ?? []));
  return el("div", {}, ...groups);
}
