// What the figures were measured on.
import { execSync } from "node:child_process";
import os from "node:os";
import { wranglerVersion } from "./instances.mjs";

function git(root, args) {
  try {
    return execSync(`git ${args}`, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return null;
  }
}

export function machineInfo(root) {
  const cpus = os.cpus();
  const status = git(root, "status --porcelain -- src wrangler.toml package.json");
  return {
    cpu_model: cpus[0]?.model ?? "unknown",
    cpu_count: cpus.length,
    total_memory_mib: Math.round(os.totalmem() / 1024 / 1024),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    wrangler: wranglerVersion(root),
    date: new Date().toISOString(),
    git_commit: git(root, "rev-parse --short HEAD"),
    // The bench bundles the working tree: say when src/ differed from the commit.
    src_uncommitted_changes: status === null ? null : status.length > 0,
  };
}
