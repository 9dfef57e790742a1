import { defineConfig } from "drizzle-kit";

// drizzle-kit writes SQL migrations into migrations/, which wrangler applies
// (`npm run db:migrate:local`, `wrangler d1 migrations apply DB --remote`) and
// the test setup applies with applyD1Migrations. Never edit a landed migration.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./migrations",
});
