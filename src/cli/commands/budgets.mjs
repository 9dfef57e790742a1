// @ts-check
// tollgate budgets get|put|topup — calendar-period spend caps and prepaid
// credits of a key, a tenant or an org (docs/budgets.md). The owner is
// written as the API names it: tenant:<slug>, key:<id> or org:<slug>.
import { usageError } from "../cli-error.mjs";
import { segment } from "../admin-client.mjs";
import { count, printFields, printJson, printTable, records } from "../output.mjs";
import { session } from "../session.mjs";

/** @typedef {import("commander").Command} Command */

const OWNER_PATHS = /** @type {const} */ ({ tenant: "tenants", key: "keys", org: "orgs" });
const PERIODS = ["day", "week", "month", "none"];

/**
 * The admin path of an owner: tenant:acme → /tenants/acme.
 * @param {string} owner
 */
function ownerPath(owner) {
  const colon = owner.indexOf(":");
  const kind = owner.slice(0, colon);
  const id = owner.slice(colon + 1);
  if (colon <= 0 || !(kind in OWNER_PATHS) || id === "") throw usageError(`owner: expected tenant:<slug>, key:<id> or org:<slug>, not '${owner}'`);
  return `/${OWNER_PATHS[/** @type {keyof typeof OWNER_PATHS} */ (kind)]}/${segment(id, "owner")}`;
}

/**
 * A whole number of units from a flag.
 * @param {string} flag
 * @param {string} value
 */
function units(flag, value) {
  if (!/^\d+$/.test(value)) throw usageError(`${flag}: expected a whole number, not '${value}'`);
  return Number(value);
}

/** @type {ReadonlyArray<readonly [string, (row: Record<string, unknown>) => unknown]>} */
const COLUMNS = [
  ["owner", (b) => b.owner],
  ["category", (b) => b.category],
  ["period", (b) => periodText(b)],
  ["amount", (b) => count(b.amount)],
  ["used", (b) => count(b.used)],
  ["remaining", (b) => count(b.remaining)],
  ["resets", (b) => b.resets_at],
];

/** `month`, or `month (shadow)` for a shadow budget (tried: it refuses nothing). */
function periodText(/** @type {Record<string, unknown>} */ b) {
  return b.shadow === true ? `${String(b.period)} (shadow)` : b.period;
}

/**
 * @param {import("../output.mjs").Output} output
 * @param {Record<string, unknown>} b
 */
function printBudget(output, b) {
  printFields(output, [
    ["owner", b.owner],
    ["category", b.category],
    ["period", periodText(b)],
    ["amount", count(b.amount)],
    ["used", count(b.used)],
    ["remaining", count(b.remaining)],
    ["thresholds", b.thresholds],
    ["period start", b.period_start],
    ["resets", b.resets_at],
  ]);
}

/**
 * @param {Command} program
 * @param {import("../session.mjs").Runtime} runtime
 */
export function registerBudgetCommands(program, runtime) {
  const budgets = program.command("budgets").description("show, set and top up budgets (spend per day, week, month, or prepaid credits)");

  budgets
    .command("get")
    .description("show an owner's budgets, or one of them, with their spend this period")
    .argument("<owner>", "tenant:<slug>, key:<id> or org:<slug>")
    .argument("[category]", "one category (request, tokens, …)")
    .action(async (/** @type {string} */ owner, /** @type {string | undefined} */ category, /** @type {{}} */ _options, /** @type {Command} */ command) => {
      const path = ownerPath(owner);
      const { client, output } = session(command, runtime);
      if (category !== undefined) {
        const { body } = await client.json("GET", `${path}/budgets/${segment(category, "category")}`);
        if (output.json) return printJson(output, body);
        return printBudget(output, body);
      }
      const { body } = await client.json("GET", `${path}/budgets`);
      if (output.json) return printJson(output, body);
      printTable(output, COLUMNS, records(body.budgets), `No budgets for ${owner}.`);
    });

  budgets
    .command("put")
    .description("create or replace a budget")
    .argument("<owner>", "tenant:<slug>, key:<id> or org:<slug>")
    .argument("<category>", "the category it caps (request, tokens, …)")
    .requiredOption("--amount <n>", "units per period (or in all, for credits)")
    .requiredOption("--period <period>", "day, week (from Monday), month (UTC) or none (prepaid credits)")
    .option("--thresholds <list>", "comma-separated fractions audited when first crossed, e.g. 0.5,0.8,1 (default 0.8,1)")
    .option("--shadow", "try the budget: kept as if enforced (its alerts too, marked shadow) but it refuses nothing; 'tollgate shadow' shows whom it would refuse. Put it again without --shadow to switch it on")
    .addHelpText("after", `
Examples:
  tollgate budgets put tenant:acme tokens --amount 1000000 --period month
  tollgate budgets put key:k7m2q9x4a1bc tokens --amount 20000 --period day
  tollgate budgets put tenant:beta request --amount 100000 --period none
  tollgate budgets put tenant:acme tokens --amount 500000 --period month --shadow`)
    .action(async (/** @type {string} */ owner, /** @type {string} */ category, /** @type {{ amount: string, period: string, thresholds?: string, shadow?: boolean }} */ options, /** @type {Command} */ command) => {
      const path = ownerPath(owner);
      if (!PERIODS.includes(options.period)) throw usageError(`--period: expected day, week, month or none, not '${options.period}'`);
      /** @type {Record<string, unknown>} */
      const body = { amount: units("--amount", options.amount), period: options.period };
      if (options.thresholds !== undefined) {
        const list = options.thresholds.split(",").map((t) => Number(t.trim()));
        if (list.some((t) => !Number.isFinite(t))) throw usageError(`--thresholds: expected fractions separated by commas, not '${options.thresholds}'`);
        body.thresholds = list;
      }
      if (options.shadow === true) body.shadow = true;
      const { client, output } = session(command, runtime);
      const answer = await client.json("PUT", `${path}/budgets/${segment(category, "category")}`, { body });
      if (output.json) return printJson(output, answer.body);
      const amount = count(answer.body.amount);
      output.out(`${answer.status === 201 ? "Created" : "Replaced"} the ${answer.body.shadow === true ? "shadow " : ""}${category} budget of ${owner}: ${options.period === "none" ? `${amount} ${answer.body.amount === 1 ? "credit" : "credits"}` : `${amount} per ${options.period}`}.\n`);
    });

  budgets
    .command("topup")
    .description("add to prepaid credits (a budget with period none)")
    .argument("<owner>", "tenant:<slug>, key:<id> or org:<slug>")
    .argument("<category>", "the credits' category")
    .requiredOption("--amount <n>", "units to add")
    .option("--reason <text>", "kept in the audit event, e.g. an invoice number")
    .option("--idempotency-key <key>", "the same key within 24 h adds the top-up once (e.g. the invoice id); default: a new key each run")
    .action(async (/** @type {string} */ owner, /** @type {string} */ category, /** @type {{ amount: string, reason?: string, idempotencyKey?: string }} */ options, /** @type {Command} */ command) => {
      const path = ownerPath(owner);
      /** @type {Record<string, unknown>} */
      const body = { amount: units("--amount", options.amount) };
      if (options.reason !== undefined) body.reason = options.reason;
      const { client, output } = session(command, runtime);
      // Sent every time, so that a script re-run with its own key (an invoice id) never adds the credits twice.
      const idempotencyKey = options.idempotencyKey ?? crypto.randomUUID();
      const { headers, body: answer } = await client.json("POST", `${path}/budgets/${segment(category, "category")}/topups`, { body, headers: { "idempotency-key": idempotencyKey } });
      if (output.json) return printJson(output, answer);
      const replayed = headers.get("idempotent-replayed") === "true";
      output.out(
        replayed
          ? `Already topped up with key ${idempotencyKey}: nothing added this time. The ${category} credits of ${owner} then: ${count(answer.amount)} in all, ${count(answer.remaining)} remaining.\n`
          : `Topped up the ${category} credits of ${owner}: ${count(answer.amount)} in all, ${count(answer.remaining)} remaining.\n`,
      );
    });
}
