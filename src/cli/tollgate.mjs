#!/usr/bin/env node
// @ts-check
// The `tollgate` command (package.json `bin`): plain ESM that Node 20 runs as
// it is, so `npx tollgate` works from a checkout with no build step. The
// sources are JavaScript checked by TypeScript (src/cli/tsconfig.json).
import { main } from "./main.mjs";

// `tollgate tenants ls | head` closes the pipe early: that is not a failure.
process.stdout.on("error", (error) => {
  if (/** @type {NodeJS.ErrnoException} */ (error).code === "EPIPE") process.exit(0);
});

process.exitCode = await main(process.argv.slice(2), {
  env: process.env,
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  nowMs: () => Date.now(),
});
