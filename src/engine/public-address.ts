// Which addresses and host names the gateway may be told to send to on the
// operator's behalf (an alert webhook): public ones, or loopback for local
// work. Everything else a Worker can reach that the public cannot — private
// networks, link-local (the cloud metadata endpoints), shared address space,
// documentation and benchmarking ranges, multicast, the NAT64 and 6to4
// prefixes that embed an IPv4 address — is refused at config validation, so
// a config cannot point the gateway's signed POSTs at an internal service.
// A public name that resolves to an internal address is not caught here (the
// name is not resolved at validation).
import { type CidrSet, cidrSetHas, parseCidrs, parseIp, type ParsedAddress } from "./cidr";

/** Special-purpose ranges that are not globally reachable (RFC 6890 and its updates), loopback excepted. */
const NON_PUBLIC_RANGES: readonly string[] = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.0.2.0/24",
  "192.88.99.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/4",
  "240.0.0.0/4",
  // IPv4-compatible (deprecated) and unspecified; mapped addresses (::ffff:0:0/96) parse as IPv4 above.
  "::/96",
  "64:ff9b::/96",
  "64:ff9b:1::/48",
  "100::/64",
  "2001::/23",
  "2001:db8::/32",
  "2002::/16",
  "3fff::/20",
  "5f00::/16",
  "fc00::/7",
  "fe80::/10",
  "fec0::/10",
  "ff00::/8",
];

const LOOPBACK_RANGES: readonly string[] = ["127.0.0.0/8", "::1/128"];

function compiled(list: readonly string[]): CidrSet {
  const parsed = parseCidrs(list);
  if (!parsed.ok) throw new Error(`public-address: entry ${parsed.index} does not parse`);
  return parsed.set;
}

const NON_PUBLIC = compiled(NON_PUBLIC_RANGES);
const LOOPBACK = compiled(LOOPBACK_RANGES);

/** Names that only mean something inside a network or a cloud: the metadata services, and the reserved internal suffixes. */
const INTERNAL_NAMES: ReadonlySet<string> = new Set(["metadata.google.internal", "metadata.goog", "instance-data"]);
const INTERNAL_SUFFIXES: readonly string[] = [".internal", ".local", ".localdomain", ".home.arpa", ".intranet", ".lan", ".corp"];

/** What a URL's host is: a loopback host, a public one, or one that is not public (an address or name that reaches an internal network). */
export type HostReach = "loopback" | "public" | "not_public";

/**
 * Classifies a URL's hostname as the WHATWG URL parser gives it (IPv4
 * canonicalised, IPv6 in brackets, lower case). A name with no dot other
 * than `localhost` is not public: resolvers complete it with the host's
 * search domains.
 */
export function hostReach(hostname: string): HostReach {
  let host = hostname.toLowerCase();
  if (host.endsWith(".")) host = host.slice(0, -1);
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1);
  if (host === "localhost") return "loopback";
  const addr: ParsedAddress | null = parseIp(host);
  if (addr !== null) {
    if (cidrSetHas(LOOPBACK, addr)) return "loopback";
    return cidrSetHas(NON_PUBLIC, addr) ? "not_public" : "public";
  }
  if (host === "" || !host.includes(".") || INTERNAL_NAMES.has(host)) return "not_public";
  return INTERNAL_SUFFIXES.some((suffix) => host.endsWith(suffix)) ? "not_public" : "public";
}
