// Headers that describe one connection, not the message (RFC 9110 §7.6.1),
// plus the proxy credentials. Dropped in both directions, with every name the
// Connection header lists.
const HOP_BY_HOP: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "proxy-authorization",
  "proxy-authenticate",
  "proxy-connection",
]);

/** Remove hop-by-hop headers, including every name listed in `Connection`, in place. */
export function dropHopByHop(headers: Headers): void {
  const listed = headers.get("connection");
  if (listed !== null) {
    for (const name of listed.split(",")) {
      const trimmed = name.trim().toLowerCase();
      if (trimmed !== "") headers.delete(trimmed);
    }
  }
  for (const name of HOP_BY_HOP) headers.delete(name);
}
