// The Worker's default export and the Durable Object export, nothing else.
import { createWorker } from "./app";

export { LimitLedger } from "./durable/limit-ledger";
export { OrgQuota } from "./durable/org-quota";
export { TenantQuota } from "./durable/tenant-quota";

const worker = createWorker();

export default {
  fetch: (request, env, ctx) => worker.fetch(request, env, ctx),
} satisfies ExportedHandler<Env>;
