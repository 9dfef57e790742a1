import { DurableObject } from "cloudflare:workers";

export class TenantQuota extends DurableObject<Env> {}
