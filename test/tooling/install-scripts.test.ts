// npm 11 runs a dependency's install script only with a word about it unless
// package.json's `allowScripts` says yes or no: every package of the lockfile
// that has one must be named there, so a fresh `npm ci` is quiet and the
// choice is reviewed, not implied.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");

interface LockEntry {
  readonly version?: string;
  readonly hasInstallScript?: boolean;
}

function readJson<T>(path: string): T {
  return JSON.parse(readFileSync(resolve(ROOT, path), "utf8")) as T;
}

/** `node_modules/a/node_modules/@b/c` → `@b/c`. */
function packageName(lockPath: string): string {
  return lockPath.slice(lockPath.lastIndexOf("node_modules/") + "node_modules/".length);
}

function npm(args: readonly string[]): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    execFile("npm", [...args], { cwd: ROOT }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === "number" ? err.code : 1;
      done({ code, output: `${stdout}${stderr}` });
    });
  });
}

describe("install scripts", () => {
  const pkg = readJson<{ allowScripts?: Record<string, boolean> }>("package.json");
  const lock = readJson<{ packages: Record<string, LockEntry> }>("package-lock.json");
  const withScripts = [...new Set(Object.entries(lock.packages).filter(([, entry]) => entry.hasInstallScript === true).map(([path]) => packageName(path)))].sort();

  it("names every locked package that has an install script in allowScripts, allowed or denied", () => {
    const policy = pkg.allowScripts ?? {};
    expect(withScripts.length).toBeGreaterThan(0);
    expect(withScripts.filter((name) => typeof policy[name] !== "boolean")).toEqual([]);
  });

  it("allows the scripts that check the binaries the project runs (esbuild, workerd), and no other", () => {
    const allowed = Object.entries(pkg.allowScripts ?? {}).filter(([, yes]) => yes).map(([name]) => name).sort();
    expect(allowed).toEqual(["esbuild", "workerd"]);
  });

  it("leaves npm nothing to warn about where npm knows allowScripts", async () => {
    const { code, output } = await npm(["install-scripts", "ls"]);
    if (code !== 0 && /Unknown command|not a valid command/i.test(output)) return; // npm before allowScripts: nothing to warn
    expect(output).toContain("No packages with unreviewed install scripts.");
  });
});
