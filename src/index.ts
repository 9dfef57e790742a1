export { TenantQuota } from "./durable/tenant-quota";
export default {
  async fetch(): Promise<Response> {
    return Response.json({ status: "ok" });
  },
} satisfies ExportedHandler<Env>;
