// Step 1 of the pipeline: who is asking, by address. Sets x.clientAddress
// (the full address, for X-Forwarded-For and X-Real-IP) and x.clientKey (the
// limiter's key: IPv4, or the IPv6 /64). Never refuses.
import type { Exchange } from "../exchange";
import type { CidrSet } from "../engine/cidr";
import { canonicalKey, formatAddress, resolveClient } from "./client-address";

export interface ClientAddressOptions {
  readonly trustedProxies: CidrSet;
}

/**
 * Needs the trusted proxies; returns a step that sets x.clientAddress, x.clientKey and x.clientIp.
 * @example clientAddress({ trustedProxies: parsed.set })(x); x.clientKey // "203.0.113.7"
 */
export function clientAddress(options: ClientAddressOptions): (x: Exchange) => void {
  const trusted = options.trustedProxies;
  const noProxies = trusted.v4.length === 0 && trusted.v6.length === 0;
  return function clientAddressStep(x) {
    const headers = x.request.headers;
    // With no trusted proxy X-Forwarded-For is never read: one header fewer per request.
    const addr = resolveClient(headers.get("cf-connecting-ip"), noProxies ? null : headers.get("x-forwarded-for"), trusted);
    if (addr !== null) {
      x.clientIp = addr;
      x.clientKey = canonicalKey(addr);
      x.clientAddress = addr.family === 4 ? x.clientKey : formatAddress(addr);
    }
  };
}
