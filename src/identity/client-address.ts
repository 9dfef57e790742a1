// Who is asking, by address: the peer Cloudflare saw, or,
// behind proxies we trust, the first untrusted hop in X-Forwarded-For. The
// result is the limiter's key, so every spelling of one client must map to one
// string and a client must not be able to choose among several.

import { type CidrSet, MAX_ADDRESS_CHARS, type ParsedAddress, cidrSetHas, parseIp } from "../engine/cidr";

/**
 * The key for requests whose peer address is missing or unparsable. In
 * production CF-Connecting-IP is always set, so this is local tools and tests;
 * all such requests share this one bucket, which is the safe direction to fail.
 */
export const UNKNOWN_CLIENT = "unknown";

/**
 * How many X-Forwarded-For entries are read, counting from the right. A real
 * chain of proxies is a handful of hops; the cap bounds the work a client can
 * cause with a long header. Entries further left than this are treated as if
 * they were not there.
 */
export const MAX_XFF_ENTRIES = 64;

/**
 * The limiter's spelling of an address: IPv4 as a dotted quad
 * (`203.0.113.7`); IPv6 as its /64 network in RFC 5952 form (lower case,
 * no leading zeros, the longest run of two or more zero groups — the first, on
 * a tie — written `::`) with a `/64` suffix (`2001:db8:1:2::/64`). A /64 is
 * what one subscriber gets, so keying finer would let one client rotate
 * through 2^64 buckets. IPv4-mapped addresses were already made IPv4 by
 * parseIp, so they key as IPv4.
 */
export function canonicalKey(addr: ParsedAddress): string {
  if (addr.family === 4) {
    const a = addr.v4;
    return `${a >>> 24}.${(a >>> 16) & 0xff}.${(a >>> 8) & 0xff}.${a & 0xff}`;
  }
  const [w0, w1] = addr.words;
  const g: readonly number[] = [w0 >>> 16, w0 & 0xffff, w1 >>> 16, w1 & 0xffff];
  // The low 64 bits are zero, so the longest zero run is the tail: it starts
  // after the last non-zero group of the top four and is at least four groups
  // long, while any run inside the top four is at most three.
  let last = 3;
  while (last >= 0 && g[last] === 0) last--;
  if (last === -1) return "::/64";
  let head = (g[0] ?? 0).toString(16);
  for (let i = 1; i <= last; i++) head += `:${(g[i] ?? 0).toString(16)}`;
  return `${head}::/64`;
}

/**
 * The canonical key (see canonicalKey) of the client behind a request.
 *
 * `peer` is CF-Connecting-IP. When it parses and lies in `trusted`, and
 * X-Forwarded-For is present, its entries — across every header line, in
 * order, comma-separated; pass the joined string `Headers.get` returns or the
 * lines as an array — are scanned from the right: the first entry that is a
 * valid address outside `trusted` is the client; an entry that does not parse
 * (including an empty one, as in `a,,b` or a trailing comma) met before that
 * stops the scan and the peer is used, since nothing to its left can be
 * vouched for; when every entry is trusted the leftmost is used. Only the
 * rightmost MAX_XFF_ENTRIES entries are read.
 *
 * A missing or unparsable peer gives UNKNOWN_CLIENT. Never throws.
 */
export function resolveClientAddress(
  peer: string | null,
  xffLines: readonly string[] | string | null,
  trusted: CidrSet,
): string {
  const addr = resolveClient(peer, xffLines, trusted);
  return addr === null ? UNKNOWN_CLIENT : canonicalKey(addr);
}

/**
 * The full address, RFC 5952 for IPv6 (not its /64): what the origin is told
 * in X-Forwarded-For. IPv4 and IPv4-mapped addresses are dotted quads.
 */
export function formatAddress(addr: ParsedAddress): string {
  if (addr.family === 4) return canonicalKey(addr);
  const g: number[] = [];
  for (const w of addr.words) g.push(w >>> 16, w & 0xffff);
  // The longest run of two or more zero groups (the first on a tie) becomes "::".
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (from: number, to: number) => g.slice(from, to).map((x) => x.toString(16)).join(":");
  if (bestStart === -1) return hex(0, 8);
  return `${hex(0, bestStart)}::${hex(bestStart + bestLen, 8)}`;
}

/** As resolveClientAddress, but the parsed address itself; null for a missing or unparsable peer. */
export function resolveClient(
  peer: string | null,
  xffLines: readonly string[] | string | null,
  trusted: CidrSet,
): ParsedAddress | null {
  const peerAddr = typeof peer === "string" ? parseIp(peer) : null;
  if (peerAddr === null) return null;
  if (xffLines === null || xffLines === undefined || !cidrSetHas(trusted, peerAddr)) {
    return peerAddr;
  }
  const lines: readonly unknown[] = typeof xffLines === "string" ? [xffLines] : Array.isArray(xffLines) ? xffLines : [];

  let leftmostTrusted: ParsedAddress | null = null;
  let scanned = 0;
  // Walk the lines from the last, and each line from its end, slicing out
  // one entry at a time: the header is never split whole, so the work stops
  // at the cap however long the header is.
  for (let li = lines.length - 1; li >= 0; li--) {
    const line = lines[li];
    if (typeof line !== "string") return peerAddr;
    let end = line.length;
    for (;;) {
      if (scanned === MAX_XFF_ENTRIES) return leftmostTrusted ?? peerAddr;
      scanned++;
      const comma = end === 0 ? -1 : line.lastIndexOf(",", end - 1);
      // Too long to be an address: skip the copy and treat it as unparsable.
      const addr = end - comma - 1 > MAX_ADDRESS_CHARS ? null : parseIp(line.slice(comma + 1, end));
      if (addr === null) return peerAddr;
      if (!cidrSetHas(trusted, addr)) return addr;
      leftmostTrusted = addr;
      if (comma === -1) break;
      end = comma;
    }
  }
  return leftmostTrusted ?? peerAddr;
}
