// IP address parsing and CIDR sets: the pieces the client-address resolver
// (identity/client-address.ts) and the trusted_proxies config are built from.
// Pure parsing, so it sits in the engine, below config.ts and identity/.
//
// Everything here runs on every request, so the parsers are hand-written
// single passes over the characters: no regular expressions (no backtracking
// hazards) and a hard cap on input length, which bounds the work per call.

/**
 * A parsed address. IPv4-mapped IPv6 (`::ffff:1.2.3.4`, `::ffff:102:304`)
 * arrives here as family 4: the design counts it as IPv4 everywhere, so a
 * client cannot get a second bucket by spelling its address the long way.
 */
export type ParsedAddress =
  // `v4`: the address as an unsigned 32-bit integer.
  | { readonly family: 4; readonly v4: number }
  // `words`: the 128 bits as four unsigned 32-bit words, most significant first.
  | { readonly family: 6; readonly words: readonly [number, number, number, number] };

/**
 * A compiled list of CIDRs. Build it once with `parseCidrs` (at config time)
 * and test it with `cidrSetHas`; the fields are an implementation detail.
 */
export interface CidrSet {
  readonly v4: readonly { readonly net: number; readonly mask: number }[];
  readonly v6: readonly {
    readonly net: readonly [number, number, number, number];
    readonly mask: readonly [number, number, number, number];
  }[];
}

/**
 * Longer input is rejected without being looked at. The longest real spelling
 * is a bracketed IPv6 with an IPv4 tail (47 characters) plus a zone id; 256
 * leaves room for generous zone names and padding whitespace.
 */
export const MAX_ADDRESS_CHARS = 256;

/**
 * Parses one IP address, strictly. Returns null for anything that is not
 * exactly one address; never throws.
 *
 * Accepted: surrounding whitespace (trimmed); IPv4 dotted quads; IPv6 in every
 * RFC 4291 / RFC 5952 form (full, `::`-compressed, any case, leading zeros in
 * groups, an embedded IPv4 tail); an IPv6 zone id (`fe80::1%eth0`, characters
 * A–Z a–z 0–9 `-._~`), which is dropped because it names an interface on the
 * sender's host, not a different address; an IPv6 address in brackets without
 * a port (`[2001:db8::1]`), because some proxies write X-Forwarded-For entries
 * that way.
 *
 * Rejected: empty input; anything with a port (`1.2.3.4:80`, `[::1]:80`);
 * brackets around IPv4; a zone id on IPv4; IPv4 parts with leading zeros
 * (`01.2.3.4`, `1.2.3.010`) — inet_aton reads those as octal, so the same text
 * names different addresses to different parsers and we accept neither; the
 * short forms `1.2.3` and `0x7f000001`; more than one `::`; input longer than
 * MAX_ADDRESS_CHARS.
 */
export function parseIp(text: string): ParsedAddress | null {
  return parseAddress(text, true);
}

type CidrResult = { ok: true; set: CidrSet } | { ok: false; index: number; reason: string };

/**
 * Compiles a list of CIDRs (`10.0.0.0/8`, `2001:db8::/32`) into a CidrSet.
 * A bare address is a single host (/32 or /128). The first invalid entry fails
 * the whole list, naming its index, so config validation can point at it.
 *
 * A CIDR with host bits set (`10.1.2.3/8`) is accepted and masked to its
 * network (`10.0.0.0/8`): that is what every router and `ipaddress` in strict
 * mode off does, and refusing a deploy over it helps no one.
 *
 * Zone ids and brackets are refused here: they make no sense in config.
 * An IPv4-mapped CIDR (`::ffff:10.0.0.0/104`) becomes the IPv4 CIDR it spells
 * (`10.0.0.0/8`), since mapped addresses are parsed as IPv4. A plain IPv6 CIDR
 * such as `::/0` therefore never matches a mapped (that is, IPv4) address.
 */
export function parseCidrs(list: readonly string[]): CidrResult {
  const v4: { net: number; mask: number }[] = [];
  const v6: { net: [number, number, number, number]; mask: [number, number, number, number] }[] = [];
  for (let index = 0; index < list.length; index++) {
    const entry: unknown = list[index];
    if (typeof entry !== "string") return { ok: false, index, reason: "not a string" };
    const text = entry.trim();
    const slash = text.indexOf("/");
    const addrText = slash === -1 ? text : text.slice(0, slash);
    const addr = parseAddress(addrText, false);
    if (addr === null) return { ok: false, index, reason: `"${clip(entry)}" is not an IPv4 or IPv6 address or CIDR` };
    const spelledAsV6 = addrText.includes(":");
    const maxPrefix = spelledAsV6 ? 128 : 32;
    let prefix = maxPrefix;
    if (slash !== -1) {
      const parsed = parsePrefix(text, slash + 1);
      if (parsed === -1 || parsed > maxPrefix) {
        return { ok: false, index, reason: `"${clip(entry)}" needs a prefix length from 0 to ${maxPrefix}` };
      }
      prefix = parsed;
    }
    if (addr.family === 4 && (!spelledAsV6 || prefix >= 96)) {
      const bits = spelledAsV6 ? prefix - 96 : prefix;
      const mask = maskWord(bits);
      v4.push({ net: (addr.v4 & mask) >>> 0, mask });
      continue;
    }
    // Either a real IPv6 CIDR, or a mapped address with a prefix shorter than
    // /96, which spans more than the mapped range and so stays IPv6.
    const words: readonly [number, number, number, number] =
      addr.family === 6 ? addr.words : [0, 0, 0xffff, addr.v4];
    const mask: [number, number, number, number] = [
      maskWord(prefix),
      maskWord(prefix - 32),
      maskWord(prefix - 64),
      maskWord(prefix - 96),
    ];
    v6.push({
      net: [
        (words[0] & mask[0]) >>> 0,
        (words[1] & mask[1]) >>> 0,
        (words[2] & mask[2]) >>> 0,
        (words[3] & mask[3]) >>> 0,
      ],
      mask,
    });
  }
  return { ok: true, set: { v4, v6 } };
}

/** An empty set, for callers that trust no proxy. */
export const EMPTY_CIDR_SET: CidrSet = { v4: [], v6: [] };

/**
 * Whether the address lies in any CIDR of the set. A linear scan: trusted
 * proxy lists are short (Cloudflare's own is about twenty ranges), and a scan
 * of a few dozen mask-and-compare steps beats any index at that size.
 */
export function cidrSetHas(set: CidrSet, addr: ParsedAddress): boolean {
  if (addr.family === 4) {
    for (const c of set.v4) {
      if ((addr.v4 & c.mask) >>> 0 === c.net) return true;
    }
    return false;
  }
  const w = addr.words;
  for (const c of set.v6) {
    if (
      (w[0] & c.mask[0]) >>> 0 === c.net[0] &&
      (w[1] & c.mask[1]) >>> 0 === c.net[1] &&
      (w[2] & c.mask[2]) >>> 0 === c.net[2] &&
      (w[3] & c.mask[3]) >>> 0 === c.net[3]
    ) {
      return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------------------

/** The mask for the top `bits` bits of one 32-bit word; bits outside 0–32 clamp. */
function maskWord(bits: number): number {
  if (bits <= 0) return 0;
  if (bits >= 32) return 0xffffffff;
  // `<< 32` is `<< 0` in JavaScript, hence the clamps above.
  return (0xffffffff << (32 - bits)) >>> 0;
}

/** A decimal prefix length from `start` to the end of `text`, or -1. */
function parsePrefix(text: string, start: number): number {
  const len = text.length - start;
  if (len < 1 || len > 3) return -1;
  // "/08" is refused for the same reason as "08" in an address.
  if (len > 1 && text.charCodeAt(start) === 0x30) return -1;
  let n = 0;
  for (let i = start; i < text.length; i++) {
    const d = text.charCodeAt(i) - 0x30;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

function clip(text: string): string {
  return text.length > 64 ? `${text.slice(0, 64)}…` : text;
}

function parseAddress(text: unknown, lenient: boolean): ParsedAddress | null {
  if (typeof text !== "string" || text.length === 0 || text.length > MAX_ADDRESS_CHARS) return null;
  // Config entries (lenient = false) were trimmed whole by parseCidrs;
  // whitespace left inside one, as in "10.0.0.0 /8", is a typo to report.
  const s = lenient ? text.trim() : text;
  let start = 0;
  let end = s.length;
  if (end === 0) return null;

  let decorated = false;
  if (s.charCodeAt(0) === 0x5b /* [ */) {
    if (!lenient || s.charCodeAt(end - 1) !== 0x5d /* ] */) return null;
    start = 1;
    end -= 1;
    decorated = true;
  }
  const pct = s.indexOf("%", start);
  if (pct !== -1 && pct < end) {
    if (!lenient || !isZoneId(s, pct + 1, end)) return null;
    end = pct;
    decorated = true;
  }
  if (start >= end) return null;

  const colon = s.indexOf(":", start);
  if (colon === -1 || colon >= end) {
    // Brackets and zone ids belong to IPv6 only.
    if (decorated) return null;
    const v4 = parseV4(s, start, end);
    return v4 === -1 ? null : { family: 4, v4 };
  }

  const groups = parseV6(s, start, end);
  if (groups === null) return null;
  const words: [number, number, number, number] = [
    ((groups[0] ?? 0) * 0x10000 + (groups[1] ?? 0)) >>> 0,
    ((groups[2] ?? 0) * 0x10000 + (groups[3] ?? 0)) >>> 0,
    ((groups[4] ?? 0) * 0x10000 + (groups[5] ?? 0)) >>> 0,
    ((groups[6] ?? 0) * 0x10000 + (groups[7] ?? 0)) >>> 0,
  ];
  // ::ffff:0:0/96 is IPv4-mapped: the same host as the IPv4 address.
  if (words[0] === 0 && words[1] === 0 && words[2] === 0xffff) return { family: 4, v4: words[3] };
  return { family: 6, words };
}

/** RFC 6874's zone id characters (unreserved), at least one. */
function isZoneId(s: string, start: number, end: number): boolean {
  if (start >= end) return false;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    const ok =
      (c >= 0x30 && c <= 0x39) ||
      (c >= 0x41 && c <= 0x5a) ||
      (c >= 0x61 && c <= 0x7a) ||
      c === 0x2d /* - */ ||
      c === 0x2e /* . */ ||
      c === 0x5f /* _ */ ||
      c === 0x7e; /* ~ */
    if (!ok) return false;
  }
  return true;
}

/**
 * A strict dotted quad in s[start, end): four decimal parts 0–255, no leading
 * zeros, nothing else. Returns the address as an unsigned 32-bit integer, or -1.
 */
function parseV4(s: string, start: number, end: number): number {
  let value = 0;
  let parts = 0;
  let part = 0;
  let digits = 0;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x2e /* . */) {
      if (digits === 0 || parts === 3) return -1;
      value = value * 256 + part;
      parts++;
      part = 0;
      digits = 0;
      continue;
    }
    const d = c - 0x30;
    if (d < 0 || d > 9) return -1;
    if (digits > 0 && part === 0) return -1; // leading zero
    part = part * 10 + d;
    digits++;
    if (part > 255) return -1;
  }
  if (digits === 0 || parts !== 3) return -1;
  return value * 256 + part;
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

/**
 * An IPv6 address in s[start, end) (no brackets, no zone) as eight 16-bit
 * groups, or null. One pass: groups of 1–4 hex digits separated by single
 * colons, at most one `::` standing for one or more zero groups, and an
 * optional dotted-quad tail standing for the last two groups.
 */
function parseV6(s: string, start: number, end: number): number[] | null {
  const groups = [0, 0, 0, 0, 0, 0, 0, 0];
  let n = 0; // groups read so far
  let gap = -1; // where `::` stood, counted in groups read before it
  let i = start;
  if (s.charCodeAt(i) === 0x3a /* : */) {
    // A leading colon is only valid as the first half of a leading `::`.
    if (s.charCodeAt(i + 1) !== 0x3a) return null;
    gap = 0;
    i += 2;
  }
  while (i < end) {
    let j = i;
    let group = 0;
    for (; j < end; j++) {
      const h = hexValue(s.charCodeAt(j));
      if (h === -1) break;
      if (j - i < 4) group = group * 16 + h;
    }
    if (j < end && s.charCodeAt(j) === 0x2e /* . */) {
      // The IPv4 tail: it must run to the end and fit in the last two groups.
      if (n > 6) return null;
      const v4 = parseV4(s, i, end);
      if (v4 === -1) return null;
      groups[n++] = Math.floor(v4 / 0x10000);
      groups[n++] = v4 & 0xffff;
      break;
    }
    const digits = j - i;
    if (digits === 0 || digits > 4 || n === 8) return null;
    groups[n++] = group;
    if (j === end) break;
    if (s.charCodeAt(j) !== 0x3a) return null;
    j++;
    if (j < end && s.charCodeAt(j) === 0x3a) {
      if (gap !== -1) return null; // a second `::`
      gap = n;
      j++;
    } else if (j === end) {
      return null; // a trailing single colon
    }
    i = j;
  }
  if (gap === -1) return n === 8 ? groups : null;
  // `::` stands for at least one zero group.
  if (n > 7) return null;
  const zeros = 8 - n;
  for (let k = n - 1; k >= gap; k--) {
    groups[k + zeros] = groups[k] ?? 0;
    groups[k] = 0;
  }
  return groups;
}
