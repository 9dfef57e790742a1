// @ts-check
// Budget gauges for the tenant, key and org pages: each budget's spend this
// period against its amount, read live from GET …/budgets (the quota
// object's exact figures), with when it resets. Credits show what remains.
import { gauge } from "./charts.js";
import { el, formatCount, notice, time } from "./dom.js";

/**
 * @typedef {{ owner: string, category: string, period: string, amount: number, used: number, remaining: number, thresholds: number[], resets_at: string | null }} Budget
 */

/** @type {Record<string, string>} */
const PERIOD_LABELS = { day: "today", week: "this week", month: "this month", none: "prepaid credits" };

/** @param {Budget} b */
function budgetGauge(b) {
  const label = `${b.category} · ${PERIOD_LABELS[b.period] ?? b.period}`;
  // The first threshold marks the warning level, as the audit events do.
  const soft = b.thresholds.length > 1 ? Math.floor((b.thresholds[0] ?? 0.8) * b.amount) : undefined;
  const figure = gauge({ label, used: b.used, soft, hard: b.amount, format: formatCount });
  const when = b.resets_at === null ? el("p", { class: "hint" }, `${formatCount(b.remaining)} remaining; top-ups add to it`) : el("p", { class: "hint" }, `${formatCount(b.remaining)} remaining · resets `, time(b.resets_at));
  figure.appendChild(when);
  return figure;
}

/**
 * The gauges of an owner's budgets; a notice when there are none or they could not be read.
 * @param {{ get: (path: string) => Promise<any> }} api
 * @param {string} path the owner's budgets path, e.g. `/tenants/acme/budgets`
 */
export async function budgetGauges(api, path) {
  /** @type {Budget[]} */
  let budgets;
  try {
    budgets = (await api.get(path)).budgets;
  } catch {
    return notice("alert", "The budgets could not be read just now; reload to try again.");
  }
  if (budgets.length === 0) return el("p", { class: "empty" }, "No budgets. Set them with the admin API or `tollgate budgets put`.");
  return el("div", { class: "gauges" }, ...budgets.map(budgetGauge));
}

/** Keys whose budgets the keys page reads, at most (each is one call). */
const MAX_KEYS_READ = 20;
/** How many keys' budgets are read at once. */
const KEYS_READ_AT_ONCE = 6;

/**
 * The budgets of a tenant's active keys (the first MAX_KEYS_READ), one group per key that has any.
 * @param {{ get: (path: string) => Promise<any> }} api
 * @param {string} tenantSegment the tenant, already a path segment
 */
export async function keyBudgetGauges(api, tenantSegment) {
  /** @type {Array<{ id: string, name: string, revoked_at: string | null }>} */
  let keys;
  try {
    keys = (await api.get(`/tenants/${tenantSegment}/keys`)).keys.filter((/** @type {{ revoked_at: string | null }} */ k) => k.revoked_at === null);
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
        found[i] = (await api.get(`/keys/${encodeURIComponent(key.id)}/budgets`)).budgets;
      } catch {
        found[i] = null;
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(KEYS_READ_AT_ONCE, read.length) }, reader));
  const groups = [];
  read.forEach((key, i) => {
    const budgets = found[i] ?? null;
    if (budgets === null) groups.push(el("div", {}, el("h3", {}, key.name), notice("alert", "This key's budgets could not be read.")));
    else if (budgets.length > 0) groups.push(el("div", {}, el("h3", {}, key.name, " ", el("code", {}, `key:${key.id}`)), el("div", { class: "gauges" }, ...budgets.map(budgetGauge))));
  });
  if (groups.length === 0) return el("p", { class: "empty" }, "None of its keys has a budget.");
  if (keys.length > MAX_KEYS_READ) groups.push(el("p", { class: "hint" }, `Showing the budgets of its first ${MAX_KEYS_READ} active keys.`));
  return el("div", {}, ...groups);
}
