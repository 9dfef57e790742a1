// Headers that describe one connection, not the message (RFC 9110 section 7.6.1),
// plus the proxy credentials. Dropped in both directions, with every name the
// Connection header lists, while the forward copies headers (forward.ts).
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
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

/** The lower-case names a Connection header lists, or null when there is none (or it lists nothing). */
export function listedInConnection(connection: string | null): ReadonlySet<string> | null {
  if (connection === null) return null;
  let listed: Set<string> | null = null;
  for (const name of connection.split(",")) {
    const trimmed = name.trim().toLowerCase();
    if (trimmed === "" || HOP_BY_HOP.has(trimmed)) continue;
    (listed ??= new Set()).add(trimmed);
  }
  return listed;
}
