import type { D1Migration } from "cloudflare:test";

declare global {
  namespace Cloudflare {
    interface Env {
      TEST_MIGRATIONS: D1Migration[];
      ADMIN_TOKEN?: string;
      AUDITOR_TOKEN?: string;
      /** The auxiliary worker test/fixtures/service-origin.mjs, bound as a service (vitest.config.ts). */
      SERVICE_ORIGIN: Fetcher;
    }
  }
}
