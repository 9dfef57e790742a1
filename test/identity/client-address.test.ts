import { describe, expect, it } from "vitest";
import { type CidrSet, EMPTY_CIDR_SET, cidrSetHas, parseCidrs, parseIp } from "../../src/engine/cidr";
import { MAX_XFF_ENTRIES, canonicalKey, formatAddress, resolveClient, resolveClientAddress } from "../../src/identity/client-address";
import { mulberry32 } from "../prng";

function set(list: readonly string[]): CidrSet {
  const r = parseCidrs(list);
  if (!r.ok) throw new Error(`test CIDRs rejected: ${r.index} ${r.reason}`);
  return r.set;
}

function key(text: string): string | null {
  const a = parseIp(text);
  return a === null ? null : canonicalKey(a);
}

// Proxies in 10.0.0.0/8 and 2001:db8:ffff::/48 are trusted in most cases below.
const TRUSTED = set(["10.0.0.0/8", "2001:db8:ffff::/48"]);

describe("canonicalKey", () => {
  it.each([
    ["203.0.113.7", "203.0.113.7"],
    ["0.0.0.0", "0.0.0.0"],
    ["255.255.255.255", "255.255.255.255"],
    ["::ffff:203.0.113.7", "203.0.113.7"],
    ["::FFFF:CB00:7107", "203.0.113.7"],
    ["2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"],
    ["2001:0DB8:0001:0002:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"],
    ["2001:db8::1", "2001:db8::/64"],
    ["2001:db8:0:1::1", "2001:db8:0:1::/64"],
    ["2001:0:0:1::", "2001:0:0:1::/64"],
    ["0:0:0:1::5", "0:0:0:1::/64"],
    ["0:1::", "0:1::/64"],
    ["::1", "::/64"],
    ["::", "::/64"],
    ["::1.2.3.4", "::/64"],
    ["fe80::1%eth0", "fe80::/64"],
    ["[2400:CB00:2048:1::C629:D7A2]", "2400:cb00:2048:1::/64"],
    ["ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff:ffff::/64"],
  ])("keys %j as %j", (text, expected) => {
    expect(key(text)).toBe(expected);
  });

  it("gives two addresses in one /64 the same key", () => {
    expect(key("2001:db8:1:2::1")).toBe(key("2001:db8:1:2:abcd:ef01:2345:6789"));
  });

  it("gives the neighbouring /64 a different key", () => {
    expect(key("2001:db8:1:2::1")).not.toBe(key("2001:db8:1:3::1"));
    expect(key("2001:db8:1:2::1")).not.toBe(key("2001:db8:1:1:ffff:ffff:ffff:ffff"));
  });

  it("gives one key to every spelling of one IPv6 address", () => {
    const spellings = [
      "2001:db8:a:b:0:0:0:1",
      "2001:DB8:A:B::1",
      "2001:0db8:000a:000b:0000:0000:0000:0001",
      "[2001:db8:a:b::1]",
      "2001:db8:a:b::1%eth0",
      " 2001:db8:a:b::0.0.0.1 ",
      "2001:db8:a:b:0::1",
    ];
    expect(new Set(spellings.map(key))).toEqual(new Set(["2001:db8:a:b::/64"]));
  });

  it("matches the URL parser's RFC 5952 spelling for random /64s", () => {
    const rand = mulberry32(0x5eed64);
    for (let n = 0; n < 2000; n++) {
      // Bias groups towards zero so that compression cases come up often.
      const g = Array.from({ length: 4 }, () => (rand() < 0.4 ? 0 : Math.floor(rand() * 0x10000)));
      const tail = Array.from({ length: 4 }, () => Math.floor(rand() * 0x10000));
      const full = [...g, ...tail].map((x) => x.toString(16)).join(":");
      const host = new URL(`http://[${g.map((x) => x.toString(16)).join(":")}:0:0:0:0]/`).hostname;
      const expected = `${host.slice(1, -1)}/64`;
      const padded = [...g, ...tail].map((x) => x.toString(16).padStart(4, "0").toUpperCase()).join(":");
      expect(key(full), full).toBe(expected);
      expect(key(padded), padded).toBe(expected);
      expect(key(new URL(`http://[${full}]/`).hostname), full).toBe(expected);
    }
  });
});

describe("resolveClientAddress", () => {
  const cases: readonly {
    name: string;
    peer: string | null;
    xff: readonly string[] | string | null;
    trusted?: CidrSet;
    want: string;
  }[] = [
    { name: "uses an untrusted peer and ignores its X-Forwarded-For", peer: "198.51.100.9", xff: "203.0.113.7", want: "198.51.100.9" },
    { name: "uses the peer when no proxy is trusted", peer: "10.0.0.1", xff: "203.0.113.7", trusted: EMPTY_CIDR_SET, want: "10.0.0.1" },
    { name: "uses a trusted peer when X-Forwarded-For is absent", peer: "10.0.0.1", xff: null, want: "10.0.0.1" },
    { name: "uses a trusted peer when X-Forwarded-For has no lines", peer: "10.0.0.1", xff: [], want: "10.0.0.1" },
    { name: "takes the entry a trusted peer forwarded", peer: "10.0.0.1", xff: "203.0.113.7", want: "203.0.113.7" },
    { name: "takes the rightmost untrusted entry", peer: "10.0.0.1", xff: "198.51.100.1, 203.0.113.7", want: "203.0.113.7" },
    { name: "skips trusted entries from the right", peer: "10.0.0.1", xff: "198.51.100.1, 203.0.113.7, 10.9.9.9, 10.8.8.8", want: "203.0.113.7" },
    { name: "ignores a spoofed leftmost entry", peer: "10.0.0.1", xff: "1.1.1.1,203.0.113.7", want: "203.0.113.7" },
    { name: "takes the leftmost entry when every entry is trusted", peer: "10.0.0.1", xff: "10.1.1.1, 10.2.2.2, 10.3.3.3", want: "10.1.1.1" },
    { name: "stops at an unparsable entry and uses the peer", peer: "10.0.0.1", xff: "203.0.113.7, garbage, 10.2.2.2", want: "10.0.0.1" },
    { name: "stops at an unparsable rightmost entry", peer: "10.0.0.1", xff: "203.0.113.7, 198.51.100.1:443", want: "10.0.0.1" },
    { name: "ignores an unparsable entry left of the one taken", peer: "10.0.0.1", xff: "garbage, 203.0.113.7", want: "203.0.113.7" },
    { name: "stops at an empty entry", peer: "10.0.0.1", xff: "203.0.113.7,,10.2.2.2", want: "10.0.0.1" },
    { name: "stops at a trailing comma", peer: "10.0.0.1", xff: "203.0.113.7,", want: "10.0.0.1" },
    { name: "stops at an empty header", peer: "10.0.0.1", xff: "", want: "10.0.0.1" },
    { name: "stops at a header of spaces", peer: "10.0.0.1", xff: "   ", want: "10.0.0.1" },
    { name: "trims spaces and tabs around entries", peer: "10.0.0.1", xff: " 203.0.113.7 \t,\t10.2.2.2 ", want: "203.0.113.7" },
    { name: "reads several lines as one list", peer: "10.0.0.1", xff: ["198.51.100.1, 203.0.113.7", "10.2.2.2", "10.3.3.3, 10.4.4.4"], want: "203.0.113.7" },
    { name: "reads the last line first", peer: "10.0.0.1", xff: ["198.51.100.1", "203.0.113.7"], want: "203.0.113.7" },
    { name: "crosses lines to find the leftmost trusted entry", peer: "10.0.0.1", xff: ["10.1.1.1", "10.2.2.2"], want: "10.1.1.1" },
    { name: "crosses lines to reach an untrusted entry", peer: "10.0.0.1", xff: ["203.0.113.7", "10.2.2.2, 10.3.3.3"], want: "203.0.113.7" },
    { name: "stops at an empty line", peer: "10.0.0.1", xff: ["203.0.113.7", ""], want: "10.0.0.1" },
    { name: "treats a joined header like its lines", peer: "10.0.0.1", xff: "10.1.1.1, 10.2.2.2, 203.0.113.7, 10.3.3.3", want: "203.0.113.7" },
    { name: "keys a forwarded IPv6 client by its /64", peer: "10.0.0.1", xff: "2001:db8:1:2::99", want: "2001:db8:1:2::/64" },
    { name: "keys a forwarded mapped client as IPv4", peer: "10.0.0.1", xff: "::ffff:203.0.113.7", want: "203.0.113.7" },
    { name: "keys a forwarded hex-mapped client as IPv4", peer: "10.0.0.1", xff: "::ffff:cb00:7107", want: "203.0.113.7" },
    { name: "accepts a bracketed IPv6 entry", peer: "10.0.0.1", xff: "[2001:DB8:1:2::99]", want: "2001:db8:1:2::/64" },
    { name: "stops at a bracketed IPv6 entry with a port", peer: "10.0.0.1", xff: "[2001:db8:1:2::99]:8080", want: "10.0.0.1" },
    { name: "accepts an IPv6 entry with a zone id", peer: "10.0.0.1", xff: "fe80::1%eth0", want: "fe80::/64" },
    { name: "stops at a leading-zero IPv4 entry", peer: "10.0.0.1", xff: "203.0.113.7, 010.2.2.2", want: "10.0.0.1" },
    { name: "trusts an IPv6 proxy peer", peer: "2001:db8:ffff:1::1", xff: "203.0.113.7", want: "203.0.113.7" },
    { name: "skips trusted IPv6 entries", peer: "2001:db8:ffff::1", xff: "2001:db8:5::1, 2001:DB8:FFFF:0:0::2", want: "2001:db8:5::/64" },
    { name: "trusts a mapped peer by its IPv4 CIDR", peer: "::ffff:10.0.0.1", xff: "203.0.113.7", want: "203.0.113.7" },
    { name: "keys an untrusted IPv6 peer by its /64", peer: "2001:DB8:AB:CD::1", xff: "203.0.113.7", want: "2001:db8:ab:cd::/64" },
    { name: "keys an untrusted mapped peer as IPv4", peer: "::ffff:198.51.100.9", xff: null, want: "198.51.100.9" },
    { name: "answers unknown without a peer", peer: null, xff: "203.0.113.7", want: "unknown" },
    { name: "answers unknown for an empty peer", peer: "", xff: null, want: "unknown" },
    { name: "answers unknown for an unparsable peer", peer: "10.0.0.1:443", xff: "203.0.113.7", want: "unknown" },
    { name: "trims the peer", peer: " 198.51.100.9 ", xff: null, want: "198.51.100.9" },
  ];

  it.each(cases)("$name", ({ peer, xff, trusted, want }) => {
    expect(resolveClientAddress(peer, xff, trusted ?? TRUSTED)).toBe(want);
  });

  it(`reads only the rightmost ${MAX_XFF_ENTRIES} entries`, () => {
    const trustedHops = Array.from({ length: MAX_XFF_ENTRIES }, (_, i) => `10.0.${i >> 8}.${i & 0xff}`);
    // The client is one entry past the cap: the leftmost entry read is used.
    expect(resolveClientAddress("10.0.0.1", ["203.0.113.7", ...trustedHops], TRUSTED)).toBe(trustedHops[0]);
    expect(resolveClientAddress("10.0.0.1", ["203.0.113.7", ...trustedHops.slice(1)], TRUSTED)).toBe("203.0.113.7");
    expect(resolveClientAddress("10.0.0.1", [`garbage, ${trustedHops.join(", ")}`], TRUSTED)).toBe(trustedHops[0]);
  });

  it("answers a header of a million entries without reading it all", () => {
    // Every entry but the last MAX_XFF_ENTRIES is garbage: an answer at all
    // shows they were never parsed (a garbage entry met would stop the scan
    // and give the peer), so the work is bounded by the cap, not the header.
    const read = Array.from({ length: MAX_XFF_ENTRIES }, () => "10.1.1.1");
    const huge = [...Array.from({ length: 1_000_000 }, () => "not-an-address"), ...read].join(",");
    expect(resolveClientAddress("10.0.0.1", huge, TRUSTED)).toBe("10.1.1.1");
  });

  it("stops at a single enormous entry", () => {
    expect(resolveClientAddress("10.0.0.1", `203.0.113.7,${"9".repeat(1_000_000)}`, TRUSTED)).toBe("10.0.0.1");
  });

  it("does not throw on values outside its types", () => {
    const odd: unknown[] = [undefined, 42, {}, [42], [null, "1.2.3.4"], ["1.2.3.4", undefined]];
    for (const v of odd) {
      expect(() => resolveClientAddress("10.0.0.1", v as string, TRUSTED)).not.toThrow();
      expect(() => resolveClientAddress(v as string, "1.2.3.4", TRUSTED)).not.toThrow();
    }
    expect(resolveClientAddress("10.0.0.1", ["203.0.113.7", 42 as unknown as string], TRUSTED)).toBe("10.0.0.1");
  });

  it("agrees with a plain split-and-scan reading on random headers", () => {
    const rand = mulberry32(0xc0ffee);
    const pool = [
      "203.0.113.7", "198.51.100.1", "10.1.1.1", "10.2.2.2", "::ffff:10.3.3.3", "2001:db8:1:2::1",
      "2001:db8:ffff::9", "[2001:db8:5::1]", "", " ", "garbage", "1.2.3.4:80", "01.2.3.4", "fe80::1%lo",
    ];
    const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
    for (let n = 0; n < 3000; n++) {
      const lineCount = Math.floor(rand() * 4);
      const lines = Array.from({ length: lineCount }, () =>
        Array.from({ length: 1 + Math.floor(rand() * 5) }, () => pick(pool)).join(pick([",", ", ", " ,"])),
      );
      const peer = pick(["10.0.0.1", "203.0.113.99", "2001:db8:ffff::1", "bad", ""]);
      const xff = rand() < 0.5 ? lines : lines.join(", ");
      expect(resolveClientAddress(peer, xff, TRUSTED), JSON.stringify({ peer, xff })).toBe(
        referenceResolve(peer, lines, TRUSTED),
      );
    }
  });
});

/** The rule of docs/design.md step 1 spelled the obvious way, to compare against. */
function referenceResolve(peer: string, lines: readonly string[], trusted: CidrSet): string {
  const p = parseIp(peer);
  if (p === null) return "unknown";
  if (!cidrSetHas(trusted, p) || lines.length === 0) return canonicalKey(p);
  const entries = lines.join(",").split(",");
  for (let i = entries.length - 1; i >= 0; i--) {
    const a = parseIp(entries[i] ?? "");
    if (a === null) return canonicalKey(p);
    if (!cidrSetHas(trusted, a)) return canonicalKey(a);
  }
  return canonicalKey(parseIp(entries[0] ?? "") ?? p);
}

describe("formatAddress", () => {
  it.each([
    ["203.0.113.7", "203.0.113.7"],
    ["::ffff:203.0.113.7", "203.0.113.7"],
    ["2001:DB8:0:0:0:0:0:1", "2001:db8::1"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
    ["2001:db8:1:2:3:4:5:6", "2001:db8:1:2:3:4:5:6"],
    ["2001:0:0:1::1", "2001:0:0:1::1"],
    ["::", "::"],
    ["::1", "::1"],
    ["fe80::1%eth0", "fe80::1"],
    ["1:0:1:0:1:0:1:0", "1:0:1:0:1:0:1:0"],
  ])("writes %s as %s (the full address, not the /64)", (input, expected) => {
    const addr = parseIp(input);
    expect(addr).not.toBeNull();
    expect(formatAddress(addr!)).toBe(expected);
  });

  it("resolves the same client as resolveClientAddress", () => {
    const trusted = parseCidrs(["10.0.0.0/8"]);
    if (!trusted.ok) throw new Error("bad fixture");
    const addr = resolveClient("10.0.0.1", "2001:db8:1:2:3:4:5:6, 10.0.0.2", trusted.set);
    expect(formatAddress(addr!)).toBe("2001:db8:1:2:3:4:5:6");
    expect(resolveClientAddress("10.0.0.1", "2001:db8:1:2:3:4:5:6, 10.0.0.2", trusted.set)).toBe("2001:db8:1:2::/64");
    expect(resolveClient(null, null, trusted.set)).toBeNull();
  });
});
