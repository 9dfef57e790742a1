// @ts-check
// tollgate tenants ls|get|put|set|rm. `put` creates or replaces a tenant
// whole (and says what the replacement dropped); `set` changes only the
// fields it names (PUT /tenants/{tenant}/limits, the API's partial update).
import { segment } from "../admin-client.mjs";
import { CliError, usageError } from "../cli-error.mjs";
import { jsonObjectArgument, limitsArgument, LIMITS_HELP, shadowLimits } from "../input.mjs";
import { cell, objectField, printFields, printJson, printTable, records } from "../output.mjs";
import { session } from "../session.mjs";

/** @typedef {import("commander").Command} Command */
/** @typedef {{ limits?: string, quota?: string, org?: string, body?: string, shadow?: boolean }} PutOptions */
/** @typedef {{ limits?: string, quota?: string, org?: string | false, shadow?: boolean }} SetOptions */

/** Whether a stored field holds anything (`{}`, null and "" hold nothing). */
function holds(/** @type {unknown} */ value) {
  if (value === null || value === undefined || value === "") return false;
  return typeof value !== "object" || Object.keys(value).length > 0;
}

/**
 * What a whole replacement drops: each field the tenant holds now that the new body does not give.
 * @param {Record<string, unknown>} existing the tenant as GET answers it
 * @param {Record<string, unknown>} body
 */
export function droppedFields(existing, body) {
  /** @type {string[]} */
  const dropped = [];
  for (const name of ["org", "limits", "quota"]) {
    if (holds(existing[name]) && !holds(body[name])) dropped.push(`${name} ${typeof existing[name] === "string" ? existing[name] : JSON.stringify(existing[name])}`);
  }
  return dropped;
}

/** Tenants whose usage is read at once. */
const USAGE_FAN_OUT = 8;

/**
 * Adds each tenant's live usage (`usage: {bytes, objects, reserved_bytes}`
 * from GET /tenants/{tenant}), a few calls at a time; null where it could
 * not be read (the quota object did not answer, the tenant just went).
 * @param {import("../admin-client.mjs").AdminClient} client
 * @param {Record<string, unknown>[]} tenants
 */
async function addUsage(client, tenants) {
  for (let i = 0; i < tenants.length; i += USAGE_FAN_OUT) {
    await Promise.all(
      tenants.slice(i, i + USAGE_FAN_OUT).map(async (t) => {
        try {
          t.usage = objectField((await client.json("GET", `/tenants/${segment(String(t.tenant), "tenant")}`)).body, "usage");
        } catch {
          t.usage = null;
        }
      }),
    );
  }
}

/** `used/hard` of one kind, or `used` without a hard quota; `?` when usage could not be read. */
function usageCell(/** @type {Record<string, unknown>} */ tenant, /** @type {"bytes" | "objects"} */ kind) {
  const usage = objectField(tenant, "usage");
  if (usage === null) return "?";
  const hard = objectField(objectField(tenant, "quota") ?? {}, kind)?.hard;
  return hard === undefined ? cell(usage[kind]) : `${cell(usage[kind])}/${cell(hard)}`;
}

/** A Quota on one line: `bytes soft 800 hard 1000; objects hard 10`, or `-`. */
export function quotaText(/** @type {unknown} */ quota) {
  if (typeof quota !== "object" || quota === null) return "-";
  const parts = [];
  for (const [kind, bounds] of Object.entries(quota)) {
    if (typeof bounds !== "object" || bounds === null) continue;
    const set = Object.entries(bounds).map(([name, value]) => `${name} ${cell(value)}`);
    if (set.length > 0) parts.push(`${kind} ${set.join(" ")}`);
  }
  return parts.length === 0 ? "-" : parts.join("; ");
}

/**
 * The tenant as it is before a replacement, or null when there is none.
 * @param {import("../admin-client.mjs").AdminClient} client
 * @param {string} path
 */
async function currentTenant(client, path) {
  try {
    return (await client.json("GET", path)).body;
  } catch (error) {
    if (error instanceof CliError && /^not_found \(404\)/.test(error.message)) return null;
    throw error;
  }
}

/**
 * The limits of `--shadow`: each one marked shadow; a usage error without limits to mark.
 * @param {string} command
 * @param {unknown} limits
 */
function shadowOf(command, limits) {
  if (typeof limits !== "object" || limits === null) throw usageError(`${command}: --shadow marks the limits of --limits; give --limits`);
  return shadowLimits(/** @type {Record<string, unknown>} */ (limits));
}

/**
 * @param {Command} program
 * @param {import("../session.mjs").Runtime} runtime
 */
export function registerTenantCommands(program, runtime) {
  const tenants = program.command("tenants").description("list, show, create or replace, and delete tenants");

  tenants
    .command("ls")
    .description("list every tenant (all pages) with its quota and live usage")
    .option("--no-usage", "skip the live usage (one call per tenant)")
    .action(async (/** @type {{ usage: boolean }} */ options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const list = records(await client.listAll("/tenants", "tenants"));
      if (options.usage) await addUsage(client, list);
      if (output.json) return printJson(output, { tenants: list, next_cursor: null });
      const columns = /** @type {Array<readonly [string, (t: Record<string, unknown>) => unknown]>} */ ([
        ["tenant", (t) => t.tenant],
        ["org", (t) => t.org],
      ]);
      if (options.usage) columns.push(["bytes", (t) => usageCell(t, "bytes")], ["objects", (t) => usageCell(t, "objects")]);
      columns.push(["quota", (t) => quotaText(t.quota)], ["updated", (t) => t.updated_at]);
      printTable(output, columns, list, "No tenants.");
    });

  tenants
    .command("get")
    .description("show a tenant: limits, quota and live usage")
    .argument("<tenant>", "tenant slug")
    .action(async (/** @type {string} */ tenant, /** @type {{}} */ _options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const { body } = await client.json("GET", `/tenants/${segment(tenant, "tenant")}`);
      if (output.json) return printJson(output, body);
      const usage = objectField(body, "usage");
      printFields(output, [
        ["tenant", body.tenant],
        ["org", body.org],
        ["limits", body.limits],
        ["quota", body.quota],
        ["bytes", usage?.bytes],
        ["objects", usage?.objects],
        ["reserved_bytes", usage?.reserved_bytes],
        ["created", body.created_at],
        ["updated", body.updated_at],
      ]);
    });

  tenants
    .command("put")
    .description("create a tenant, or replace it whole: what you leave out is removed (to change only some fields, use 'tenants set')")
    .argument("<tenant>", "tenant slug")
    .option("--limits <json>", "the tenant's limits as JSON, or @file.json (shape below)")
    .option("--shadow", "mark every limit in --limits as shadow: tried beside the limits in force, never refusing ('tollgate shadow' shows whom it would refuse)")
    .option("--quota <json>", "Quota as JSON, or @file.json")
    .option("--org <org>", "the org the tenant belongs to")
    .option("--body <json>", "the whole body as JSON, or @file.json; the flags above override its fields")
    .addHelpText("after", `
${LIMITS_HELP.tenant}

Replacing a tenant that exists removes its org, limits or quota when you do
not give them again; the command says what it dropped. 'tollgate tenants set'
changes only the fields you name.

Example:
  tollgate tenants put acme --limits '{"request":{"key":[{"count":100,"window_s":60}]}}' \\
    --quota '{"bytes":{"soft":800000000,"hard":1000000000}}'

Trying a new limit beside the one in force ("shadow": true on it), then switching it on:
  tollgate tenants set acme --limits '{"request":{"key":[{"count":100,"window_s":60},{"count":20,"window_s":60,"shadow":true}]}}'
  tollgate shadow
  tollgate tenants set acme --limits '{"request":{"key":[{"count":100,"window_s":60},{"count":20,"window_s":60}]}}'`)
    .action(async (/** @type {string} */ tenant, /** @type {PutOptions} */ options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      /** @type {Record<string, unknown>} */
      const body = options.body === undefined ? {} : jsonObjectArgument("--body", options.body);
      if (options.limits !== undefined) body.limits = limitsArgument("--limits", options.limits, "tenant");
      if (options.shadow === true) body.limits = shadowOf("tenants put", body.limits);
      if (options.quota !== undefined) body.quota = jsonObjectArgument("--quota", options.quota);
      if (options.org !== undefined) body.org = options.org;
      const path = `/tenants/${segment(tenant, "tenant")}`;
      const existing = await currentTenant(client, path);
      const answer = await client.json("PUT", path, { body });
      if (output.json) return printJson(output, answer.body);
      const name = String(answer.body.tenant ?? tenant);
      if (answer.status === 201 || existing === null) {
        output.out(`Created tenant ${name}.\n`);
        return;
      }
      const dropped = droppedFields(existing, body);
      output.out(`Replaced tenant ${name} whole${dropped.length === 0 ? "." : `; dropped what was not given again: ${dropped.join("; ")}.`}\n`);
      if (dropped.length > 0) output.err(`To change only some fields, use 'tollgate tenants set ${name} --org|--limits|--quota'.\n`);
    });

  tenants
    .command("set")
    .description("change only the fields named (org, limits, quota) of a tenant that exists; the rest stay as they are")
    .argument("<tenant>", "tenant slug")
    .option("--limits <json>", "the tenant's limits as JSON, or @file.json (shape below); '{}' clears them")
    .option("--shadow", "mark every limit in --limits as shadow: tried beside the limits in force, never refusing ('tollgate shadow' shows whom it would refuse)")
    .option("--quota <json>", "Quota as JSON, or @file.json; '{}' clears it")
    .option("--org <org>", "move the tenant into this org (it must exist)")
    .option("--no-org", "take the tenant out of its org")
    .addHelpText("after", `
${LIMITS_HELP.tenant}

Examples:
  tollgate tenants set acme --quota '{"bytes":{"hard":2000000000}}'
  tollgate tenants set acme --org bigco
  tollgate tenants set acme --no-org`)
    .action(async (/** @type {string} */ tenant, /** @type {SetOptions} */ options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      /** @type {Record<string, unknown>} */
      const body = {};
      if (options.limits !== undefined) body.limits = limitsArgument("--limits", options.limits, "tenant");
      if (options.shadow === true) body.limits = shadowOf("tenants set", body.limits);
      if (options.quota !== undefined) body.quota = jsonObjectArgument("--quota", options.quota);
      if (options.org !== undefined) body.org = options.org === false ? null : options.org;
      const names = Object.keys(body);
      if (names.length === 0) throw usageError("tenants set: name at least one of --org, --no-org, --limits, --quota");
      const { body: answer } = await client.json("PUT", `/tenants/${segment(tenant, "tenant")}/limits`, { body });
      if (output.json) return printJson(output, answer);
      output.out(`Set ${names.join(", ")} of tenant ${String(answer.tenant ?? tenant)}; everything else is unchanged.\n`);
    });

  tenants
    .command("rm")
    .description("delete a tenant; its keys stop working")
    .argument("<tenant>", "tenant slug")
    .action(async (/** @type {string} */ tenant, /** @type {{}} */ _options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const { body } = await client.json("DELETE", `/tenants/${segment(tenant, "tenant")}`);
      if (output.json) return printJson(output, body);
      output.out(`Deleted tenant ${String(body.tenant ?? tenant)} and its ${String(body.keys_deleted ?? 0)} key(s).\n`);
    });
}
