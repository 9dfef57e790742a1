// @ts-check
// tollgate explain <caller> — which limits apply to a caller and why, and
// where it stands now (GET /callers/{caller_key}). Charges
// nothing. tollgate reset <caller> — forget its limiter state
// (DELETE /callers/{caller_key}/state), so its next request starts from a
// full burst.
import { segment } from "../admin-client.mjs";
import { callerArgument } from "../input.mjs";
import { cell, count, printFields, printJson, printTable, records } from "../output.mjs";
import { session } from "../session.mjs";

/** @typedef {import("commander").Command} Command */

/** `7/60s`, `100/1s burst 200`, `5/1s holds 750ms`, `5/60s penalty 3 in 60s: block 300s`: a Limit as people read it. */
export function limitText(/** @type {unknown} */ limit) {
  if (typeof limit !== "object" || limit === null) return "-";
  const { count, window_s: windowS, burst, delay_max_ms: delayMaxMs, penalty } = /** @type {{ count?: unknown, window_s?: unknown, burst?: unknown, delay_max_ms?: unknown, penalty?: { after?: unknown, within_s?: unknown, block_s?: unknown } }} */ (limit);
  const penaltyText = typeof penalty === "object" && penalty !== null ? ` penalty ${String(penalty.after)} in ${String(penalty.within_s)}s: block ${String(penalty.block_s)}s` : "";
  return `${String(count)}/${String(windowS)}s${burst === undefined ? "" : ` burst ${String(burst)}`}${delayMaxMs === undefined ? "" : ` holds ${String(delayMaxMs)}ms`}${penaltyText}`;
}

/** `login_failure 1, upload 2`: a route's charges on one line. */
function chargesText(/** @type {unknown} */ charges) {
  if (typeof charges !== "object" || charges === null) return "-";
  return Object.entries(charges).map(([category, cost]) => `${category} ${cell(cost)}`).join(", ");
}

/**
 * An override or block as one line: what it is, whether it still applies,
 * until when, and why. `-` for none.
 * @param {unknown} value the answer's `override` or `block`
 * @param {string} what `limits` for an override, `target` for a block
 */
export function policyText(value, what) {
  if (typeof value !== "object" || value === null) return "-";
  const p = /** @type {Record<string, unknown>} */ (value);
  const parts = [what === "target" ? `block ${cell(p.id)} of ${cell(p.target)}` : cell(p.limits)];
  parts.push(p.active === false ? "(expired)" : "(active)");
  if (p.shadow === true) parts.push("shadow: refuses nothing");
  if (typeof p.penalty === "string") parts.push(`penalty of ${p.penalty}`);
  if (typeof p.expires_at === "string") parts.push(`until ${p.expires_at}`);
  if (typeof p.reason === "string" && p.reason !== "") parts.push(`reason: ${p.reason}`);
  return parts.join(" ");
}

const CALLER_HELP = "key:<id> (the 12 characters after tg_; a whole key tg_<id>_<secret> is taken by its id), ip:<address or IPv6 /64>, jwt:<hex> or tenant:<slug>";

/**
 * @param {Command} program
 * @param {import("../session.mjs").Runtime} runtime
 */
export function registerCallerCommands(program, runtime) {
  program
    .command("explain")
    .description("show the limits that apply to a caller, their source and state, and any override or block")
    .argument("<caller>", CALLER_HELP)
    .action(async (/** @type {string} */ caller, /** @type {{}} */ _options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const { body } = await client.json("GET", `/callers/${segment(callerArgument(caller, runtime.err), "caller")}`);
      if (output.json) return printJson(output, body);
      printFields(output, [
        ["caller", body.caller],
        ["tenant", body.tenant],
        ["override", policyText(body.override, "limits")],
        ["block", policyText(body.block, "target")],
      ]);
      output.out("\n");
      printTable(
        output,
        [
          ["category", (l) => l.category],
          ["subject", (l) => l.subject],
          ["source", (l) => l.source],
          ["scope", (l) => l.scope],
          ["limit", (l) => `${limitText(l.limit)}${l.shadow === true ? " (shadow)" : ""}`],
          ["remaining", (l) => l.remaining],
          ["reset ms", (l) => l.reset_ms],
        ],
        records(body.limits),
        "No limits apply.",
      );
      // Routes charged only on some origin statuses (charge_on_status), when the config has any: they apply to every caller.
      const statusCharges = records(body.status_charges);
      if (statusCharges.length > 0) {
        output.out("\nCharged only when the origin's status matches (charge_on_status):\n");
        printTable(
          output,
          [
            ["route", (r) => r.route],
            ["charges", (r) => chargesText(r.charges)],
            ["on status", (r) => (Array.isArray(r.charge_on_status) ? r.charge_on_status.join(", ") : cell(r.charge_on_status))],
          ],
          statusCharges,
          "",
        );
      }
      // Budgets (docs/budgets.md) only when some apply: the key's, its tenant's, its org's.
      const budgets = records(body.budgets);
      if (budgets.length > 0) {
        output.out("\n");
        printTable(
          output,
          [
            ["budget", (b) => b.owner],
            ["category", (b) => b.category],
            ["period", (b) => b.period],
            ["amount", (b) => count(b.amount)],
            ["remaining", (b) => count(b.remaining)],
            ["resets", (b) => b.resets_at],
          ],
          budgets,
          "",
        );
      }
    });

  program
    .command("reset")
    .description("forget a caller's limiter state (this isolate's, and its global limits' ledgers), so its next request starts from a full burst")
    .argument("<caller>", CALLER_HELP)
    .addHelpText("after", `
The state is per isolate, like the limits (see docs/design.md): the isolate
that answers this call forgets it; others keep theirs. A global limit's
state lives in its ledger, which is emptied too.`)
    .action(async (/** @type {string} */ caller, /** @type {{}} */ _options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const target = callerArgument(caller, runtime.err);
      const { body } = await client.json("DELETE", `/callers/${segment(target, "caller")}/state`);
      if (output.json) return printJson(output, body);
      const ledgers = body.ledger_states_held === undefined ? "" : `, and ${cell(body.ledger_states_held)} in the ledgers of its global limits`;
      output.out(`Reset ${String(body.caller ?? target)}: forgot ${cell(body.states_held)} limiter state(s) held under its ${cell(body.limits)} limit(s), on the isolate that answered${ledgers}.\n`);
    });
}
