import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import LongestFirstSequencer from "./test/longest-first-sequencer";

// Five projects, one `npm test`:
//
// - "workers": every test under test/ except test/e2e, test/engine and test/tooling runs inside workerd
//   with the real bindings from wrangler.toml: D1 (migrations applied in
//   test/apply-migrations.ts), the TenantQuota Durable Object, and ORIGIN_URL
//   pointing at the recording origin that test/global-setup.ts starts on
//   127.0.0.1.
// - "e2e": test/e2e runs in Node against the gateway under `wrangler dev`
//   with a fresh local D1, started once by test/e2e/global-setup.ts (the CLI
//   as a child process; later the console in a browser).
// - "e2e-d1": the e2e files that also write that D1 directly, against a
//   gateway of their own, one file at a time (after the others).
// - "engine": test/engine runs in Node (the engine is pure).
// - "tooling": test/tooling runs in Node and checks the project's own rules
//   (the layers `npm run lint:deps` enforces).
/** The e2e files that call `d1Execute` (see the "e2e-d1" project below), and the one file that runs them. */
const E2E_D1_FILES = ["test/e2e/cli-reconcile.test.ts", "test/e2e/cli-traffic.test.ts", "test/e2e/console-traffic.test.ts"];
const E2E_D1_RUNNER = "test/e2e/d1-writers.test.ts";

export default defineConfig(async () => {
  const migrations = await readD1Migrations("./migrations");
  return {
    test: {
      // Files run six at a time across all projects, the e2e files first,
      // longest first (./test/longest-first-sequencer.ts). Most of an e2e
      // file's time is waiting (wrangler dev starting, the CLI's child
      // processes, Chromium), so six keep both cores busy; at three the
      // suite took 346 s on an idle two-core machine, at six ~240 s.
      maxWorkers: 6,
      sequence: { sequencer: LongestFirstSequencer },
      projects: [
        {
          plugins: [
            cloudflareTest(({ inject }) => ({
              wrangler: { configPath: "./wrangler.toml" },
              miniflare: {
                bindings: {
                  ORIGIN_URL: `http://127.0.0.1:${inject("originPort")}`,
                  ADMIN_TOKEN: "test-admin-token-0123456789abcdefghij",
                  AUDITOR_TOKEN: "test-auditor-token-0123456789abcdefgh",
                  TEST_MIGRATIONS: migrations,
                },
                // A second Worker, bound as a service, for origins of kind
                // "service:BINDING" (test/integration/origins.test.ts).
                serviceBindings: { SERVICE_ORIGIN: "service-origin" },
                workers: [
                  {
                    name: "service-origin",
                    modules: true,
                    scriptPath: "./test/fixtures/service-origin.mjs",
                    compatibilityDate: "2026-04-01",
                  },
                ],
              },
            })),
          ],
          test: {
            name: "workers",
            // Each of the three runners keeps its workerd from file to file
            // instead of starting one per file: starting it and loading the
            // test runner's modules into it took ~5 s a file, most of the
            // project's 220 s (now ~70 s). So storage, Durable Objects and
            // module state carry over from one file to the next in a runner:
            // every file names its tenants, keys and periods uniquely and
            // never expects a table to be empty (test/README.md).
            isolate: false,
            include: ["test/**/*.test.ts"],
            exclude: ["test/e2e/**", "test/tooling/**", "test/engine/**"],
            globalSetup: ["./test/global-setup.ts"],
            setupFiles: ["./test/apply-migrations.ts", "./test/unhandled-rejections.ts", "./test/fast-check-seed.ts"],
            testTimeout: 30_000,
            hookTimeout: 30_000,
          },
        },
        {
          test: {
            name: "e2e",
            include: ["test/e2e/**/*.test.ts"],
            exclude: [...E2E_D1_FILES, E2E_D1_RUNNER],
            environment: "node",
            globalSetup: ["./test/e2e/global-setup.ts"],
            testTimeout: 60_000,
            // A browser launch may wait for a start slot (test/e2e/start-slots.ts) before its own 60 s.
            hookTimeout: 120_000,
          },
        },
        {
          // The e2e files that write the local D1 directly (`d1Execute`, a
          // second process on the same SQLite file) get a gateway of their
          // own and run one after another: beside another file's admin
          // writes, that second writer made the shared gateway's own D1 call
          // meet SQLITE_BUSY (a 503 where a test expected 201). They run as
          // one file that imports them (E2E_D1_RUNNER), not with
          // `fileParallelism: false`: vitest runs such a project only after
          // every other file, ~30 s added to the end of `npm test`.
          test: {
            name: "e2e-d1",
            include: [E2E_D1_RUNNER],
            environment: "node",
            globalSetup: ["./test/e2e/global-setup.ts"],
            testTimeout: 60_000,
            // A browser launch may wait for a start slot (test/e2e/start-slots.ts) before its own 60 s.
            hookTimeout: 120_000,
          },
        },
        {
          // The engine is pure (no Workers API, time passed in as nowMs), so
          // its tests run in Node: no workerd to start and no D1 to migrate
          // per file, which was most of each engine file's time.
          test: {
            name: "engine",
            include: ["test/engine/**/*.test.ts"],
            environment: "node",
            setupFiles: ["./test/fast-check-seed.ts"],
            testTimeout: 30_000,
          },
        },
        {
          test: {
            name: "tooling",
            include: ["test/tooling/**/*.test.ts"],
            environment: "node",
            testTimeout: 60_000,
          },
        },
      ],
    },
  };
});
