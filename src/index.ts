// The Worker's default export and the Durable Object export, nothing else.
import { env } from "cloudflare:workers";
import { deliverAlerts } from "./alerts/deliver";
import { createWorker } from "./app";

export { LimitLedger } from "./durable/limit-ledger";
export { OrgQuota } from "./durable/org-quota";
export { TenantQuota } from "./durable/tenant-quota";

// The env the isolate starts with: an invalid config is logged as it loads (the `wrangler dev` terminal shows it on a reload).
const worker = createWorker(env);

export default {
  fetch: (request, env, ctx) => worker.fetch(request, env, ctx),
  // The ALERTS queue's consumer: webhook deliveries (src/alerts/deliver.ts).
  queue: (batch, env, _ctx) => deliverAlerts(batch, env),
} satisfies ExportedHandler<Env>;
