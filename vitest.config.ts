import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

// Two projects, one `npm test`:
//
// - "workers": every test under test/ except test/e2e runs inside workerd
//   with the real bindings from wrangler.toml: D1 (migrations applied in
//   test/apply-migrations.ts), the TenantQuota Durable Object, and ORIGIN_URL
//   pointing at the recording origin that test/global-setup.ts starts on
//   127.0.0.1.
// - "e2e": test/e2e runs in Node against the gateway under `wrangler dev`
//   with a fresh local D1, started once by test/e2e/global-setup.ts (the CLI
//   as a child process; later the console in a browser).
export default defineConfig(async () => {
  const migrations = await readD1Migrations("./migrations");
  return {
    test: {
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
            include: ["test/**/*.test.ts"],
            exclude: ["test/e2e/**"],
            globalSetup: ["./test/global-setup.ts"],
            setupFiles: ["./test/apply-migrations.ts", "./test/unhandled-rejections.ts"],
            testTimeout: 30_000,
            hookTimeout: 30_000,
          },
        },
        {
          test: {
            name: "e2e",
            include: ["test/e2e/**/*.test.ts"],
            environment: "node",
            globalSetup: ["./test/e2e/global-setup.ts"],
            testTimeout: 60_000,
            hookTimeout: 60_000,
          },
        },
      ],
    },
  };
});
