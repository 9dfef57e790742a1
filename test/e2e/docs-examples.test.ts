// Every shell example of README.md and docs/*.md, run as written against a
// gateway of this file's own (wrangler dev, fresh D1, the demo origin), in a
// throwaway checkout where `npm start` has left what it leaves: tenant `dev`,
// its key, and .tollgate.env. Each document runs in one shell, in order, from
// an emptied gateway; each block's claimed output is checked by the rule in
// doc-examples.ts. A block that cannot run here says why in its marker and is
// reported skipped with that reason. The only change to a block is the
// address: the gateway and the origin of this run stand in for
// http://127.0.0.1:8787 and 127.0.0.1:8788.
//
// `npx tollgate …` runs package.json's bin with node, as npm exec resolves
// it in a checkout, without npm's own second of start-up per call (the
// pages hold dozens): the first test runs the real `npx tollgate` once in the
// checkout, so the command as the pages write it is checked too.
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminCaller, ensureDevTenantAndKey } from "../../scripts/lib/dev-seed.mjs";
import { writeDevEnv } from "../../scripts/lib/dev-env.mjs";
import { type Checkout, makeCheckout, readerEnv, ROOT } from "./checkout";
import { boundValue, type DocBlock, type DocStep, matchClaims, readDocSteps } from "./doc-examples";
import { type RunningGateway, startGateway } from "./gateway";
import { ShellSession } from "./shell-session";

const BLOCK_TIMEOUT_MS = 90_000;
const PACKAGE = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string; bin: { tollgate: string } };
/** What `npx tollgate` runs in a checkout: the bin package.json names, with node. */
const NPX_TOLLGATE = `npx() { if [ "$1" = tollgate ]; then shift; node '${PACKAGE.bin.tollgate}' "$@"; else command npx "$@"; fi; }`;
const DOCUMENTS = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((name) => name.endsWith(".md")).sort().map((name) => `docs/${name}`)];

let gw: RunningGateway;
let checkout: Checkout;

beforeAll(async () => {
  checkout = makeCheckout("tollgate-docs-");
  gw = await startGateway();
}, 300_000); // a start slot's wait (./start-slots.ts) and the start's own 120 s

afterAll(async () => {
  await gw?.stop();
  checkout?.remove();
});

type Admin = ReturnType<typeof adminCaller>;

/** Every page of a listing's `field`. */
async function listAll(admin: Admin, path: string, field: string): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  let cursor: string | null = null;
  do {
    const page = await admin("GET", `${path}?limit=200${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`);
    expect(page.status, `GET ${path}`).toBe(200);
    rows.push(...(page.body[field] as Record<string, unknown>[]));
    cursor = (page.body.next_cursor as string | null | undefined) ?? null;
  } while (cursor !== null);
  return rows;
}

/** The gateway as a document's reader finds it: no tenant, org, override or block but `dev`, whose key is in .tollgate.env. */
async function freshGateway(): Promise<void> {
  const admin = adminCaller(gw.gatewayUrl, gw.adminToken);
  for (const t of await listAll(admin, "/tenants", "tenants")) expect((await admin("DELETE", `/tenants/${t.tenant}`)).status).toBe(200);
  for (const o of await listAll(admin, "/orgs", "orgs")) expect((await admin("DELETE", `/orgs/${o.org}`)).status).toBe(200);
  for (const o of await listAll(admin, "/overrides", "overrides")) expect((await admin("DELETE", `/overrides/${encodeURIComponent(String(o.caller_key))}`)).status).toBe(200);
  for (const b of await listAll(admin, "/blocks", "blocks")) expect((await admin("DELETE", `/blocks/${b.id}`)).status).toBe(200);
  const { key } = await ensureDevTenantAndKey(admin, undefined);
  writeDevEnv(checkout.dir, { TOLLGATE_URL: gw.gatewayUrl, TOLLGATE_ADMIN_TOKEN: gw.adminToken, ADMIN_TOKEN: gw.adminToken, AUDITOR_TOKEN: gw.auditorToken, DEV_KEY: key });
}

/** This run's addresses in place of `npm start`'s, and the values bound so far in place of their literals. */
function substitute(text: string, bound: ReadonlyMap<string, string>): string {
  let out = text.replaceAll("http://127.0.0.1:8787", gw.gatewayUrl).replaceAll("127.0.0.1:8788", new URL(gw.originUrl).host);
  // A bound literal is replaced where it stands on its own: `17` in `/blocks/17`, not in `2017`.
  for (const [literal, value] of bound) out = out.replace(new RegExp(`(?<![A-Za-z0-9])${literal.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![A-Za-z0-9])`, "g"), value);
  return out;
}

function title(block: DocBlock): string {
  const first = block.code.split("\n").find((line) => line.trim() !== "" && !line.trim().startsWith("#")) ?? "";
  return `${block.file}:${block.line} ${first.trim().slice(0, 70)}`;
}

it("runs `npx tollgate` in a checkout as the pages write it: package.json's bin", async () => {
  const printed = await new Promise<string>((resolve, reject) =>
    execFile("npx", ["tollgate", "--version"], { cwd: checkout.dir, env: readerEnv() }, (error, stdout, stderr) => (error === null ? resolve(stdout) : reject(new Error(`${error.message}\n${stderr}`)))),
  );
  expect(printed.trim()).toBe(PACKAGE.version);
  expect(DOCUMENTS).toContain("README.md");
}, 60_000);

for (const file of DOCUMENTS) {
  const steps: DocStep[] = readDocSteps(file, readFileSync(join(ROOT, file), "utf8"));
  const blocks = steps.filter((step): step is DocBlock => step.kind === "block");
  if (blocks.length === 0) continue;

  describe(file, () => {
    let shell: ShellSession;
    const bound = new Map<string, string>();

    beforeAll(async () => {
      await freshGateway();
      shell = new ShellSession(checkout.dir, readerEnv(), NPX_TOLLGATE);
    }, 60_000);
    afterAll(() => shell?.close());

    steps.forEach((step, index) => {
      if (step.kind === "bind") return;
      if (step.skip !== null) {
        it.skip(`${title(step)} — not run: ${step.skip}`, () => {});
        return;
      }
      it(title(step), async () => {
        const run = await shell.run(substitute(step.code, bound), BLOCK_TIMEOUT_MS);
        // The binds that follow this block (before the next one) take their values from its output.
        for (const next of steps.slice(index + 1)) {
          if (next.kind === "block") break;
          const value = boundValue(next, run.output);
          expect(value, `${next.file}:${next.line}: ${next.field} is not in the output above it:\n${run.output}`).not.toBeNull();
          bound.set(next.literal, value!);
        }
        expect(run.exitCode, `exit status of ${step.file}:${step.line}; it printed:\n${run.output}`).toBe(step.exitCode);
        const claims = { output: step.output === null ? null : { ...step.output, text: substitute(step.output.text, bound) }, arrows: step.arrows.map((claim) => substitute(claim, bound)) };
        const result = matchClaims(claims, run.output);
        expect(result.ok ? "" : result.reason, `the output ${step.file}:${step.output?.line ?? step.line} claims; it printed:\n${run.output}`).toBe("");
      }, BLOCK_TIMEOUT_MS + 10_000);
    });
  });
}
