// @ts-check
// tollgate tenants ls|get|put|rm — DESIGN §8 tenants.
import { segment } from "../admin-client.mjs";
import { jsonObjectArgument } from "../input.mjs";
import { objectField, printFields, printJson, printTable, records } from "../output.mjs";
import { session } from "../session.mjs";

/** @typedef {import("commander").Command} Command */
/** @typedef {{ limits?: string, quota?: string, org?: string, body?: string }} PutOptions */

/**
 * @param {Command} program
 * @param {import("../session.mjs").Runtime} runtime
 */
export function registerTenantCommands(program, runtime) {
  const tenants = program.command("tenants").description("list, show, create or replace, and delete tenants");

  tenants
    .command("ls")
    .description("list every tenant (all pages)")
    .action(async (/** @type {{}} */ _options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const list = await client.listAll("/tenants", "tenants");
      if (output.json) return printJson(output, { tenants: list, next_cursor: null });
      printTable(
        output,
        [["tenant", (t) => t.tenant], ["org", (t) => t.org], ["created", (t) => t.created_at], ["updated", (t) => t.updated_at]],
        records(list),
        "No tenants.",
      );
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
    .description("create a tenant, or replace it whole (fields not given are reset)")
    .argument("<tenant>", "tenant slug")
    .option("--limits <json>", "TenantLimits as JSON, or @file.json")
    .option("--quota <json>", "Quota as JSON, or @file.json")
    .option("--org <org>", "the org the tenant belongs to")
    .option("--body <json>", "the whole body as JSON, or @file.json; the flags above override its fields")
    .addHelpText("after", `
Example:
  tollgate tenants put acme --limits '{"request":{"key":[{"count":100,"window_s":60}]}}' \\
    --quota '{"bytes":{"soft":800000000,"hard":1000000000}}'`)
    .action(async (/** @type {string} */ tenant, /** @type {PutOptions} */ options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      /** @type {Record<string, unknown>} */
      const body = options.body === undefined ? {} : jsonObjectArgument("--body", options.body);
      if (options.limits !== undefined) body.limits = jsonObjectArgument("--limits", options.limits);
      if (options.quota !== undefined) body.quota = jsonObjectArgument("--quota", options.quota);
      if (options.org !== undefined) body.org = options.org;
      const answer = await client.json("PUT", `/tenants/${segment(tenant, "tenant")}`, { body });
      if (output.json) return printJson(output, answer.body);
      output.out(`${answer.status === 201 ? "Created" : "Replaced"} tenant ${String(answer.body.tenant ?? tenant)}.\n`);
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
