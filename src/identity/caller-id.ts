// Who a request's caller is, named one way for every output that names it:
// the traffic rollups and their top refused callers, alerts, Analytics
// Engine data points and the request log's `refusals_summarised` line.
import type { Exchange } from "../exchange";
import { parseApiKey, readCredentials } from "./api-key";

/**
 * The request's credential (see readCredentials), read from its headers the
 * first time a step or an output asks and kept on the exchange with whether
 * a different second one came with it (`x.credentialConflict`).
 */
export function credentialOf(x: Exchange): string | null {
  const known = x.credential;
  if (known !== undefined) return known;
  const read = readCredentials(x.request.headers);
  x.credential = read.credential;
  x.credentialConflict = read.conflicting;
  return read.credential;
}

/**
 * Needs the exchange after its steps ran; returns its caller's id: `key:<id>`
 * or `jwt:<hex>` once the credential step ran; a managed key refused by its
 * block before any lookup by the id its credential names; otherwise its
 * address `ip:<address or /64>` (held in memory only: written as a keyed
 * digest); null when not even the address is known.
 */
export function callerIdOf(x: Exchange): string | null {
  const caller = x.caller;
  if (caller.kind !== "anonymous") return caller.callerKey;
  if (x.blockId !== null) {
    const credential = credentialOf(x);
    const key = credential === null ? null : parseApiKey(credential);
    if (key !== null) return `key:${key.id}`;
  }
  return x.clientKey === "unknown" ? null : `ip:${x.clientKey}`;
}
