// `npm run deploy:check`: builds the Worker's bundle as `wrangler deploy`
// would (`wrangler deploy --dry-run --outdir`), prints its size raw and
// gzipped, and fails when the gzipped size passes the budget. Cloudflare
// limits a Worker's compressed size (3 MB on the free plan); the budget is
// far under that so the cold start stays short. The console's static files
// are uploaded as assets, not in the bundle, and are not counted here.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

/** The gzipped bundle may not pass this. */
export const BUDGET_GZIP_KIB = 400;

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const wranglerBin = join(root, "node_modules", ".bin", "wrangler");
const outdir = mkdtempSync(join(tmpdir(), "tollgate-bundle-"));

/** Every file under `dir` that is part of the Worker's code (not source maps or esbuild's metadata). */
function bundleFiles(dir) {
  const files = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) files.push(...bundleFiles(path));
    else if (!name.endsWith(".map") && !name.endsWith(".json")) files.push(path);
  }
  return files;
}

try {
  const built = spawnSync(wranglerBin, ["deploy", "--dry-run", "--outdir", outdir], { cwd: root, encoding: "utf8", env: { ...process.env, WRANGLER_SEND_METRICS: "false" } });
  if (built.status !== 0) {
    process.stderr.write((built.stdout ?? "") + (built.stderr ?? ""));
    console.error("\n✗ wrangler deploy --dry-run failed (its output is above)");
    process.exit(1);
  }
  let raw = 0;
  let gzipped = 0;
  for (const file of bundleFiles(outdir)) {
    const bytes = readFileSync(file);
    raw += bytes.byteLength;
    gzipped += gzipSync(bytes, { level: 9 }).byteLength;
  }
  const kib = (n) => (n / 1024).toFixed(1);
  console.log(`bundle: ${kib(raw)} KiB, ${kib(gzipped)} KiB gzipped (budget ${BUDGET_GZIP_KIB} KiB gzipped)`);
  if (gzipped > BUDGET_GZIP_KIB * 1024) {
    console.error(`✗ the gzipped bundle is ${kib(gzipped - BUDGET_GZIP_KIB * 1024)} KiB over the budget`);
    process.exit(1);
  }
  console.log("✓ within the budget");
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
