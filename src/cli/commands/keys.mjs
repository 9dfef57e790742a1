// @ts-check
// tollgate keys mint|ls|revoke — a tenant's managed keys. The secret is in
// mint's answer once; it is printed once and never stored.
import { segment } from "../admin-client.mjs";
import { usageError } from "../cli-error.mjs";
import { expiresAt, jsonObjectArgument, limitsArgument, LIMITS_HELP, shadowLimits } from "../input.mjs";
import { printFields, printJson, printTable, records } from "../output.mjs";
import { session } from "../session.mjs";

/** @typedef {import("commander").Command} Command */
/** @typedef {{ name?: string, expiresAt?: string, expiresIn?: string, limits?: string, body?: string, shadow?: boolean }} MintOptions */

/**
 * @param {Command} program
 * @param {import("../session.mjs").Runtime} runtime
 */
export function registerKeyCommands(program, runtime) {
  const keys = program.command("keys").description("mint, list and revoke a tenant's API keys");

  keys
    .command("mint")
    .description("mint a key for a tenant; its secret is shown once")
    .argument("<tenant>", "tenant slug")
    .option("--name <name>", "a name for people (required)")
    .option("--expires-at <time>", "ISO 8601 time the key stops working, e.g. 2030-01-31T00:00:00Z")
    .option("--expires-in <duration>", "or a duration from now: 90s, 30m, 1h, 7d")
    .option("--limits <json>", "the key's own limits as JSON, or @file.json (shape below)")
    .option("--shadow", "mark every limit in --limits as shadow: tried beside the limits in force, never refusing")
    .option("--body <json>", "the whole body as JSON, or @file.json; the flags above override its fields")
    .addHelpText("after", `
${LIMITS_HELP.key}

Example:
  tollgate keys mint acme --name ci --expires-in 7d --limits '{"request":[{"count":100,"window_s":60}]}'`)
    .action(async (/** @type {string} */ tenant, /** @type {MintOptions} */ options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      /** @type {Record<string, unknown>} */
      const body = options.body === undefined ? {} : jsonObjectArgument("--body", options.body);
      if (options.name !== undefined) body.name = options.name;
      if (body.name === undefined) throw usageError("keys mint: --name is required");
      const expiry = expiresAt(options, runtime.nowMs());
      if (expiry !== undefined) body.expires_at = expiry;
      if (options.limits !== undefined) body.limits = limitsArgument("--limits", options.limits, "key");
      if (options.shadow === true) {
        if (typeof body.limits !== "object" || body.limits === null) throw usageError("keys mint: --shadow marks the limits of --limits; give --limits");
        body.limits = shadowLimits(/** @type {Record<string, unknown>} */ (body.limits));
      }
      const { body: minted } = await client.json("POST", `/tenants/${segment(tenant, "tenant")}/keys`, { body });
      if (output.json) return printJson(output, minted);
      printFields(output, [
        ["id", minted.id],
        ["tenant", minted.tenant],
        ["name", minted.name],
        ["prefix", minted.prefix],
        ["expires", minted.expires_at],
        ["key", minted.key],
      ]);
      output.err("The key is shown this once: store it now.\n");
    });

  keys
    .command("ls")
    .description("list a tenant's keys (never a secret)")
    .argument("<tenant>", "tenant slug")
    .action(async (/** @type {string} */ tenant, /** @type {{}} */ _options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      // Not paged today; following next_cursor costs nothing if it ever is.
      const list = await client.listAll(`/tenants/${segment(tenant, "tenant")}/keys`, "keys");
      if (output.json) return printJson(output, { keys: list, next_cursor: null });
      printTable(
        output,
        [
          ["id", (k) => k.id],
          ["name", (k) => k.name],
          ["prefix", (k) => k.prefix],
          ["created", (k) => k.created_at],
          ["expires", (k) => k.expires_at],
          ["revoked", (k) => k.revoked_at],
          ["last used", (k) => k.last_used_at],
          ["uses", (k) => k.use_count],
        ],
        records(list),
        "No keys.",
      );
    });

  keys
    .command("revoke")
    .description("revoke a key by id")
    .argument("<id>", "key id (12 characters)")
    .action(async (/** @type {string} */ id, /** @type {{}} */ _options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const { body } = await client.json("DELETE", `/keys/${segment(id, "id")}`);
      if (output.json) return printJson(output, body);
      output.out(`Revoked key ${String(body.id ?? id)} (${String(body.name ?? "")}) at ${String(body.revoked_at ?? "-")}.\n`);
    });
}
