// The Worker's default export and the Durable Object export, nothing else.
import { createApp } from "./app";

export { OrgQuota } from "./durable/org-quota";
export { TenantQuota } from "./durable/tenant-quota";

const app = createApp();

export default {
  fetch: (request, env, ctx) => app.fetch(request, env, ctx),
} satisfies ExportedHandler<Env>;
