// @ts-check
// tollgate orgs ls|get|put|rm — a group of tenants with a hard quota of its
// own. Deleting an org that tenants still name is refused.
import { segment } from "../admin-client.mjs";
import { jsonObjectArgument } from "../input.mjs";
import { printFields, printJson, printTable, records } from "../output.mjs";
import { session } from "../session.mjs";

/** @typedef {import("commander").Command} Command */
/** @typedef {{ quota?: string, body?: string }} PutOptions */

/**
 * @param {Command} program
 * @param {import("../session.mjs").Runtime} runtime
 */
export function registerOrgCommands(program, runtime) {
  const orgs = program.command("orgs").description("list, show, set and delete orgs (groups of tenants)");

  orgs
    .command("ls")
    .description("list every org (all pages)")
    .action(async (/** @type {{}} */ _options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const list = await client.listAll("/orgs", "orgs");
      if (output.json) return printJson(output, { orgs: list, next_cursor: null });
      printTable(
        output,
        [["org", (o) => o.org], ["tenants", (o) => o.tenant_count], ["quota", (o) => o.quota], ["created", (o) => o.created_at], ["updated", (o) => o.updated_at]],
        records(list),
        "No orgs.",
      );
    });

  orgs
    .command("get")
    .description("show an org: its quota and the usage of its tenants together")
    .argument("<org>", "org slug")
    .action(async (/** @type {string} */ org, /** @type {{}} */ _options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const { body } = await client.json("GET", `/orgs/${segment(org, "org")}`);
      if (output.json) return printJson(output, body);
      const tenants = Array.isArray(body.tenants) ? body.tenants.map(String) : [];
      printFields(output, [
        ["org", body.org],
        ["quota", body.quota],
        ["usage", body.usage],
        ["tenant count", body.tenant_count],
        // GET /orgs/{org} lists at most its first 500 tenants.
        ["tenants", tenants.join(", ")],
        ["created", body.created_at],
        ["updated", body.updated_at],
      ]);
    });

  orgs
    .command("put")
    .description("create or replace an org")
    .argument("<org>", "org slug")
    .option("--quota <json>", "Quota as JSON, or @file.json")
    .option("--body <json>", "the whole body as JSON, or @file.json; --quota overrides its field")
    .addHelpText("after", `
Example:
  tollgate orgs put bigco --quota '{"bytes":{"hard":5000000000}}'`)
    .action(async (/** @type {string} */ org, /** @type {PutOptions} */ options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      /** @type {Record<string, unknown>} */
      const body = options.body === undefined ? {} : jsonObjectArgument("--body", options.body);
      if (options.quota !== undefined) body.quota = jsonObjectArgument("--quota", options.quota);
      const answer = await client.json("PUT", `/orgs/${segment(org, "org")}`, { body });
      if (output.json) return printJson(output, answer.body);
      output.out(`${answer.status === 201 ? "Created" : "Replaced"} org ${String(answer.body.org ?? org)}.\n`);
    });

  orgs
    .command("rm")
    .description("delete an org (refused while tenants name it)")
    .argument("<org>", "org slug")
    .action(async (/** @type {string} */ org, /** @type {{}} */ _options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const { body } = await client.json("DELETE", `/orgs/${segment(org, "org")}`);
      if (output.json) return printJson(output, body);
      output.out(`Deleted org ${org}.\n`);
    });
}
