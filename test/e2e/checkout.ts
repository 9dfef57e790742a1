// A throwaway checkout for tests that run what a reader runs in theirs
// (`npx tollgate`, `npm start`, `. ./.tollgate.env`) without touching the
// developer's own .tollgate.env, .dev.vars or .wrangler/ state: package.json,
// wrangler.toml and scripts/ are copied (scripts find the checkout from
// their own path, and wrangler keeps its state beside wrangler.toml); the
// sources, the migrations and node_modules are linked.
import { cpSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

const COPIED = ["package.json", "package-lock.json", "wrangler.toml", "scripts"];
const LINKED = ["src", "migrations", "node_modules", "docs", "tsconfig.json", "worker-configuration.d.ts"];

export interface Checkout {
  readonly dir: string;
  remove(): void;
}

export function makeCheckout(prefix = "tollgate-checkout-"): Checkout {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  for (const name of COPIED) cpSync(join(ROOT, name), join(dir, name), { recursive: true });
  for (const name of LINKED) symlinkSync(join(ROOT, name), join(dir, name));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The environment a reader's shell has: this process's, without the TOLLGATE_* and dev variables a test run may carry. */
export function readerEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || name.startsWith("TOLLGATE_") || ["ADMIN_TOKEN", "AUDITOR_TOKEN", "DEV_KEY", "GATEWAY_PORT", "ORIGIN_PORT"].includes(name)) continue;
    env[name] = value;
  }
  // vitest's own variables would make the CLI or wrangler believe they run under a test.
  for (const name of Object.keys(env)) if (name.startsWith("VITEST") || name === "NODE_ENV") delete env[name];
  return { ...env, NO_COLOR: "1", ...extra };
}
