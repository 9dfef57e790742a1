// Runs the `tollgate` bin as a real child process (`node src/cli/tollgate.mjs`,
// the file package.json's `bin` names), so the wiring is tested too, or its
// `main()` in the test process where only the commands' behaviour is tested.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { main } from "../../src/cli/main.mjs";
import { gateway } from "./fixture";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { bin: { tollgate: string } };
/** The bin as package.json declares it. */
export const BIN = join(ROOT, pkg.bin.tollgate);

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * `tollgate ...args` with only the TOLLGATE_* variables given here (the
 * developer's own are removed), in `cwd` (default: the repository).
 */
export function runCli(args: readonly string[], options: { env?: Record<string, string>; cwd?: string } = {}): Promise<CliResult> {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const name of Object.keys(env)) if (name.startsWith("TOLLGATE_")) delete env[name];
  Object.assign(env, options.env);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd ?? ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * The same command line through `main()` inside the test process: for sweeps
 * over many commands (each --help), where a process apiece would only time
 * node's start-up again. Everything else runs the bin as a child process.
 */
export async function runCliInProcess(args: readonly string[], env: Record<string, string> = {}): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  const code = await main(args, {
    env,
    out: (text) => void (stdout += text),
    err: (text) => void (stderr += text),
    nowMs: () => Date.now(),
  });
  return { code, stdout, stderr };
}

/** The environment that points the CLI at the e2e gateway with a token (admin by default). */
export function gatewayEnv(role: "admin" | "auditor" = "admin"): Record<string, string> {
  const g = gateway();
  return { TOLLGATE_URL: g.gatewayUrl, TOLLGATE_ADMIN_TOKEN: role === "admin" ? g.adminToken : g.auditorToken };
}

/**
 * `tollgate ...args` against the e2e gateway as admin, through `main()` in
 * the test process: the same code the bin runs, without a node start-up per
 * command (~0.2 s of CPU each, for ~150 commands, on the two cores the whole
 * suite shares). The bin itself, its environment and its exit codes, is run
 * as a child process through `runCli()` (the wrong-token, auditor and
 * unreachable-gateway tests, `cli-usage.test.ts`, the docs' examples).
 */
export function tollgate(...args: string[]): Promise<CliResult> {
  return runCliInProcess(args, gatewayEnv());
}

/** Parses `--json` output, failing the test with the CLI's stderr when it is not JSON. */
export function jsonOut<T = Record<string, unknown>>(result: CliResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`not JSON (exit ${result.code}):\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  }
}

/** The data rows of a table (header dropped), each split on runs of 2+ spaces. */
export function tableRows(stdout: string): string[][] {
  return stdout
    .trimEnd()
    .split("\n")
    .slice(1)
    .map((line) => line.split(/\s{2,}/));
}
