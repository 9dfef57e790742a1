// `npm run lint:deps` (dependency-cruiser with .dependency-cruiser.cjs) is
// the rule that keeps src/'s layers: this file shows it passes on src/ and
// fails on a violation planted in a scratch tree that has the same layout.
import { execFile } from "node:child_process";
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const DEPCRUISE = join(ROOT, "node_modules/dependency-cruiser/bin/dependency-cruise.mjs");
const CONFIG = join(ROOT, ".dependency-cruiser.cjs");

interface Run {
  readonly code: number;
  readonly output: string;
}

function depcruise(cwd: string): Promise<Run> {
  return new Promise((done) => {
    execFile(process.execPath, [DEPCRUISE, "src", "--config", CONFIG, "--output-type", "err"], { cwd }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === "number" ? err.code : 1;
      done({ code, output: `${stdout}${stderr}` });
    });
  });
}

const scratch: string[] = [];

/** A scratch project whose src/ holds just these files. */
async function plant(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "tollgate-deps-"));
  scratch.push(dir);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

afterAll(async () => {
  await Promise.all(scratch.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe("npm run lint:deps", () => {
  it("passes on src/: no cycle, no import up the layers", async () => {
    const run = await depcruise(ROOT);
    expect(run.output).toContain("no dependency violations found");
    expect(run.code).toBe(0);
  });

  it("fails on a type-only import cycle between two cache files", async () => {
    const dir = await plant({
      "src/cache/a.ts": 'import type { B } from "./b";\nexport type A = { b: B };\n',
      "src/cache/b.ts": 'import type { A } from "./a";\nexport type B = { a: A | null };\n',
    });
    const run = await depcruise(dir);
    expect(run.code).not.toBe(0);
    expect(run.output).toContain("no-circular");
  });

  it("fails when the engine imports a step, even for a type", async () => {
    const dir = await plant({
      "src/engine/gcra.ts": 'import type { Check } from "../limits/check";\nexport type Step = Check;\n',
      "src/limits/check.ts": "export type Check = () => null;\n",
    });
    const run = await depcruise(dir);
    expect(run.code).not.toBe(0);
    expect(run.output).toContain("engine-is-pure");
  });

  it("fails when a cache file names the runtime, and when durable/ names a step", async () => {
    const dir = await plant({
      "src/cache/tenant-cache.ts": 'import type { Runtime } from "../runtime";\nexport type T = Runtime;\n',
      "src/runtime.ts": "export interface Runtime { readonly now: () => number }\n",
      "src/durable/tenant-quota.ts": 'import { rateLimit } from "../limits/rate-limit";\nexport const step = rateLimit;\n',
      "src/limits/rate-limit.ts": "export function rateLimit(): null { return null; }\n",
    });
    const run = await depcruise(dir);
    expect(run.code).not.toBe(0);
    expect(run.output).toContain("cache-and-identity-below-limits");
    expect(run.output).toContain("durable-and-db-are-low");
  });

  it("fails when the CLI imports the Worker's source", async () => {
    const dir = await plant({
      "src/cli/main.mjs": 'import { problem } from "../errors.ts";\nexport const p = problem;\n',
      "src/errors.ts": "export function problem(): null { return null; }\n",
    });
    const run = await depcruise(dir);
    expect(run.code).not.toBe(0);
    expect(run.output).toContain("cli-is-a-client");
  });
});
