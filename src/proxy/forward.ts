// Forwards an admitted request to the origin and streams the answer back.
// Bodies are never buffered: the request's stream is handed to fetch and the
// origin's stream is handed to the client.
import { problem } from "../errors";
import { declaredLength, fixedLengthBody } from "./content-length";
import { dropHopByHop } from "./hop-by-hop";
import { type OriginBase, originUrlFor } from "./origin-url";

export interface ForwardIdentity {
  /** The resolved client address (full, not the /64 limiter key). */
  readonly clientAddress: string;
  readonly tenant: string | null;
  readonly keyId: string | null;
  /** Remove the credential headers before forwarding (`strip_credential`). */
  readonly stripCredential: boolean;
}

/** Headers the client may not set for the origin: the gateway writes them itself. */
const SPOOFABLE = ["forwarded", "x-forwarded-host", "x-forwarded-for", "x-tollgate-tenant", "x-tollgate-key-id"] as const;

export function originRequestHeaders(incoming: Headers, who: ForwardIdentity): Headers {
  const headers = new Headers(incoming);
  dropHopByHop(headers);
  for (const name of SPOOFABLE) headers.delete(name);
  if (who.stripCredential) {
    headers.delete("authorization");
    headers.delete("x-api-key");
  }
  headers.set("x-forwarded-for", who.clientAddress);
  if (who.tenant !== null) headers.set("x-tollgate-tenant", who.tenant);
  if (who.keyId !== null) headers.set("x-tollgate-key-id", who.keyId);
  return headers;
}

/**
 * Forward `request` to `base` (or, with no base, to the zone's own origin via
 * fetch(request)). Returns the origin's response with hop-by-hop headers
 * removed and mutable headers, or 502 origin_unreachable.
 */
export async function forward(request: Request, url: URL, base: OriginBase | null, who: ForwardIdentity): Promise<Response> {
  const headers = originRequestHeaders(request.headers, who);
  const target = base === null ? request.url : originUrlFor(base, url.pathname, url.search);
  let body: ReadableStream<Uint8Array> | null = request.method === "GET" || request.method === "HEAD" ? null : request.body;
  if (body !== null) {
    const bytes = declaredLength(request.headers);
    if (bytes !== null) body = fixedLengthBody(body, bytes);
  }
  let response: Response;
  try {
    response = await fetch(target, {
      method: request.method,
      headers,
      body,
      // The client sees the origin's redirects as they are; the gateway never follows them.
      redirect: "manual",
    });
  } catch {
    // The reason (DNS, refused, reset, aborted) is not the client's business.
    return problem("origin_unreachable", { detail: "The origin could not be reached." });
  }
  // One copy of the origin's headers (the new Response's own, mutable), then the drops.
  const out = new Response(response.body, response);
  dropHopByHop(out.headers);
  return out;
}
