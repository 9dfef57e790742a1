// Caller keys and block targets as the admin API accepts them, turned into
// the one spelling the gateway uses, so a caller or network written two ways
// is one row:
//   ip:<address>     IPv4 dotted quad; IPv6 as its /64 (`ip:2001:db8:1:2::/64`),
//                    given as any address in it or as the /64 itself
//   net:<CIDR>       the network, host bits cleared (`net:10.0.0.0/8`); a bare
//                    address is a /32 or /128; IPv4-mapped IPv6 is IPv4
//   key:<id>         a managed key's id
//   jwt:<64 hex>     SHA-256 of `iss \n sub`, lower-case
//   tenant:<slug>    a tenant
import { parseCidrs, parseIp } from "../engine/cidr";
import { canonicalKey, formatAddress, UNKNOWN_CLIENT } from "../identity/client-address";
import { KEY_ID, MAX_CALLER_KEY_CHARS, TENANT_SLUG } from "./schemas";
import { invalid, type Parsed } from "./validate";

export type CallerKeyKind = "ip" | "net" | "key" | "jwt" | "tenant";

const JWT_DIGEST = /^[0-9a-f]{64}$/;

const SHAPES: Readonly<Record<CallerKeyKind, string>> = {
  ip: "ip:<address>",
  net: "net:<CIDR>",
  key: "key:<id>",
  jwt: "jwt:<64 lower-case hex>",
  tenant: "tenant:<slug>",
};

/** Reasons a kind is refused where it makes no sense, instead of "unknown kind". */
export type KindRefusals = Partial<Record<CallerKeyKind, string>>;

function maskWord(bits: number): number {
  if (bits <= 0) return 0;
  if (bits >= 32) return 0xffffffff;
  return (0xffffffff << (32 - bits)) >>> 0;
}

/** `<network>/<prefix>` of a CIDR the config's parser accepts, or null. */
export function canonicalNetwork(text: string): string | null {
  if (text.trim() !== text || !parseCidrs([text]).ok) return null;
  const slash = text.indexOf("/");
  const addrText = slash === -1 ? text : text.slice(0, slash);
  const addr = parseIp(addrText);
  if (addr === null) return null;
  const spelledAsV6 = addrText.includes(":");
  let prefix = slash === -1 ? (spelledAsV6 ? 128 : 32) : Number(text.slice(slash + 1));
  if (addr.family === 4 && (!spelledAsV6 || prefix >= 96)) {
    if (spelledAsV6) prefix -= 96;
    return `${canonicalKey({ family: 4, v4: (addr.v4 & maskWord(prefix)) >>> 0 })}/${prefix}`;
  }
  // A real IPv6 network, or a mapped one wider than the mapped range (it stays IPv6, as in parseCidrs).
  const words = addr.family === 6 ? addr.words : ([0, 0, 0xffff, addr.v4] as const);
  const net = [0, 1, 2, 3].map((i) => ((words[i] as number) & maskWord(prefix - 32 * i)) >>> 0) as [number, number, number, number];
  return `${formatAddress({ family: 6, words: net })}/${prefix}`;
}

function canonicalIp(value: string): string | null {
  if (value === UNKNOWN_CLIENT) return value;
  let address = value;
  const slash = address.indexOf("/");
  if (slash !== -1) {
    if (address.slice(slash) !== "/64") return null;
    address = address.slice(0, slash);
  }
  if (address.trim() !== address) return null;
  const parsed = parseIp(address);
  if (parsed === null || (slash !== -1 && parsed.family !== 6)) return null;
  return canonicalKey(parsed);
}

/**
 * Validates `raw` as one of `kinds` and returns its canonical spelling; a
 * refusal is 400 invalid_request naming `field`. `refusals` gives the reason
 * for a kind that is known but not accepted here.
 */
export function parseCallerKey(raw: unknown, field: string, kinds: readonly CallerKeyKind[], refusals: KindRefusals = {}): Parsed<string> {
  const expected = `must be ${kinds.map((k) => SHAPES[k]).join(", ")}`;
  if (typeof raw !== "string" || raw.length > MAX_CALLER_KEY_CHARS) return { ok: false, response: invalid(field, expected) };
  const colon = raw.indexOf(":");
  const kind = raw.slice(0, colon) as CallerKeyKind;
  const value = raw.slice(colon + 1);
  // Own properties only: `constructor:x` must not find Object.prototype's.
  if (colon === -1 || !Object.hasOwn(SHAPES, kind)) return { ok: false, response: invalid(field, expected) };
  if (!kinds.includes(kind)) return { ok: false, response: invalid(field, (Object.hasOwn(refusals, kind) ? refusals[kind] : undefined) ?? expected) };
  let canonical: string | null = null;
  switch (kind) {
    case "ip":
      canonical = canonicalIp(value);
      break;
    case "net":
      canonical = canonicalNetwork(value);
      break;
    case "key":
      canonical = KEY_ID.test(value) ? value : null;
      break;
    case "jwt":
      canonical = JWT_DIGEST.test(value) ? value : null;
      break;
    case "tenant":
      canonical = TENANT_SLUG.test(value) ? value : null;
      break;
  }
  if (canonical === null) return { ok: false, response: invalid(field, `is not a valid ${SHAPES[kind]}`) };
  return { ok: true, value: `${kind}:${canonical}` };
}
