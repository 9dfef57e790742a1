// The last step of the pipeline: forward to ORIGIN_URL (parsed once per
// isolate).
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../context";
import { problem } from "../errors";
import { forward } from "./forward";
import { type OriginBaseResult, parseOriginBase } from "./origin-url";

let lastOriginUrl: string | undefined;
let lastOriginBase: OriginBaseResult | null = null;

function originBase(originUrl: string | undefined): OriginBaseResult {
  if (lastOriginBase === null || originUrl !== lastOriginUrl) {
    lastOriginBase = parseOriginBase(originUrl);
    lastOriginUrl = originUrl;
  }
  return lastOriginBase;
}

export function forwardToOrigin(): MiddlewareHandler<GatewayEnv> {
  return async function forwardToOrigin(c) {
    const base = originBase(c.env.ORIGIN_URL);
    if (!base.ok) {
      return problem("config_invalid", { detail: `The gateway configuration is invalid: ${base.message}.`, extras: { field: "ORIGIN_URL" } });
    }
    const caller = c.get("caller");
    return forward(c.req.raw, new URL(c.req.url), base.base, {
      clientAddress: c.get("clientAddress"),
      tenant: caller.kind === "key" ? caller.tenant : null,
      keyId: caller.kind === "key" ? caller.keyId : null,
      stripCredential: c.get("config").stripCredential,
    });
  };
}
