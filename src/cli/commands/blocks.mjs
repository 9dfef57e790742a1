// @ts-check
// tollgate blocks ls|get|add|rm — shut a caller, tenant or network out:
// 403 `blocked` before any other check, until it expires or is removed.
import { segment } from "../admin-client.mjs";
import { refusedError, usageError } from "../cli-error.mjs";
import { expiresAt, jsonObjectArgument } from "../input.mjs";
import { printFields, printJson, printTable, records } from "../output.mjs";
import { session } from "../session.mjs";

/** @typedef {import("commander").Command} Command */
/** @typedef {{ expiresAt?: string, expiresIn?: string, reason?: string, body?: string, shadow?: boolean }} AddOptions */

/**
 * @param {Command} program
 * @param {import("../session.mjs").Runtime} runtime
 */
export function registerBlockCommands(program, runtime) {
  const blocks = program.command("blocks").description("block a caller, tenant or network");

  blocks
    .command("ls")
    .description("list every block (all pages)")
    .action(async (/** @type {{}} */ _options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const list = await client.listAll("/blocks", "blocks");
      if (output.json) return printJson(output, { blocks: list, next_cursor: null });
      printTable(
        output,
        [
          ["id", (b) => b.id],
          ["target", (b) => b.target],
          ["active", (b) => b.active],
          ["shadow", (b) => b.shadow],
          ["expires", (b) => b.expires_at],
          ["reason", (b) => b.reason],
          ["created", (b) => b.created_at],
        ],
        records(list),
        "No blocks.",
      );
    });

  blocks
    .command("get")
    .description("show one block by id")
    .argument("<id>", "block id, as `blocks ls` shows it")
    .action(async (/** @type {string} */ id, /** @type {{}} */ _options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const { body } = await client.json("GET", `/blocks/${segment(id, "id")}`);
      if (output.json) return printJson(output, body);
      printFields(output, [
        ["id", body.id],
        ["target", body.target],
        ["active", body.active],
        ["shadow", body.shadow],
        ["penalty", body.penalty],
        ["expires", body.expires_at],
        ["reason", body.reason],
        ["created", body.created_at],
      ]);
    });

  blocks
    .command("add")
    .description("block a target")
    .argument("<target>", "ip:<address>, net:<CIDR>, key:<id>, jwt:<hex> or tenant:<slug>")
    .option("--expires-at <time>", "ISO 8601 time the block ends")
    .option("--expires-in <duration>", "or a duration from now: 90s, 30m, 1h, 7d")
    .option("--reason <text>", "why, for the next operator")
    .option("--shadow", "try the block: what it would refuse goes on, marked Tollgate-Shadow and counted ('tollgate shadow'); add it again without --shadow to switch it on")
    .option("--body <json>", "the whole body as JSON, or @file.json; the target and flags override its fields")
    .addHelpText("after", `
A limit's penalty box blocks callers too: those blocks have reason penalty:<policy>,
and 'blocks rm' lifts them early.

Examples:
  tollgate blocks add net:203.0.113.0/24 --expires-in 24h --reason "credential stuffing"
  tollgate blocks add net:198.51.100.0/24 --shadow`)
    .action(async (/** @type {string} */ target, /** @type {AddOptions} */ options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      /** @type {Record<string, unknown>} */
      const body = options.body === undefined ? {} : jsonObjectArgument("--body", options.body);
      body.target = target;
      const expiry = expiresAt(options, runtime.nowMs());
      if (expiry !== undefined) body.expires_at = expiry;
      if (options.reason !== undefined) body.reason = options.reason;
      if (options.shadow === true) body.shadow = true;
      const { body: block } = await client.json("POST", "/blocks", { body });
      if (output.json) return printJson(output, block);
      output.out(`${block.shadow === true ? "Shadow-blocked" : "Blocked"} ${String(block.target ?? target)} (block ${String(block.id)}${block.expires_at ? `, until ${String(block.expires_at)}` : ""}).\n`);
    });

  blocks
    .command("rm")
    .description("remove a block by its id, or the block(s) of a target")
    .argument("<id|target>", "block id, as `blocks ls` shows it, or the target blocked (ip:…, net:…, key:…, jwt:… or tenant:…)")
    .addHelpText("after", `
Examples:
  tollgate blocks rm 17
  tollgate blocks rm net:203.0.113.0/24`)
    .action(async (/** @type {string} */ idOrTarget, /** @type {{}} */ _options, /** @type {Command} */ command) => {
      if (!BLOCK_ID.test(idOrTarget) && !idOrTarget.includes(":")) {
        throw usageError(`expected a block id (a number, as \`tollgate blocks ls\` shows it) or a target such as ip:203.0.113.7, not '${idOrTarget}'`);
      }
      const { client, output } = session(command, runtime);
      if (BLOCK_ID.test(idOrTarget)) {
        const { body } = await client.json("DELETE", `/blocks/${segment(idOrTarget, "id")}`);
        if (output.json) return printJson(output, body);
        output.out(`Removed block ${idOrTarget}${typeof body.target === "string" ? ` (${body.target})` : ""}.\n`);
        return;
      }
      // A target: the API deletes by id, so find the block(s) that name it.
      const matching = records(await client.listAll("/blocks", "blocks")).filter((b) => sameTarget(b.target, idOrTarget));
      if (matching.length === 0) throw refusedError(`no block has the target ${idOrTarget}: run \`tollgate blocks ls\` to see every block with its id and target`);
      /** @type {Record<string, unknown>[]} */
      const removed = [];
      for (const block of matching) removed.push((await client.json("DELETE", `/blocks/${segment(String(block.id), "id")}`)).body);
      if (output.json) return printJson(output, { blocks: removed });
      const ids = removed.map((b) => String(b.id));
      output.out(removed.length === 1 ? `Removed block ${ids[0]} (${idOrTarget}).\n` : `${removed.length} blocks had the target ${idOrTarget}; removed all of them: ${ids.join(", ")}.\n`);
    });
}

/** A block id as the API numbers them. */
const BLOCK_ID = /^\d{1,16}$/;

/**
 * Whether a stored block's target is the one typed: the API keeps targets in
 * its own spelling (lower-case kind and hexadecimal), so case is ignored.
 * @param {unknown} stored
 * @param {string} typed
 */
function sameTarget(stored, typed) {
  return typeof stored === "string" && stored.toLowerCase() === typed.toLowerCase();
}
