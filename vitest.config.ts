import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

// Every test runs inside workerd with the real bindings from wrangler.toml:
// D1 (migrations applied in test/apply-migrations.ts), the TenantQuota Durable
// Object, and ORIGIN_URL pointing at the recording origin that
// test/global-setup.ts starts on 127.0.0.1.
export default defineConfig(async () => {
  const migrations = await readD1Migrations("./migrations");
  return {
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
        },
      })),
    ],
    test: {
      globalSetup: ["./test/global-setup.ts"],
      setupFiles: ["./test/apply-migrations.ts"],
      testTimeout: 30_000,
      hookTimeout: 30_000,
    },
  };
});
