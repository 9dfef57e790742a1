import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cidrSetHas, type ParsedAddress, parseCidrs, parseIp } from "../../src/engine/cidr";
import { compileNetBlocks, type NetBlockEntry } from "../../src/engine/net-blocks";

function ip(text: string): ParsedAddress {
  const a = parseIp(text);
  if (a === null) throw new Error(`test address rejected: ${text}`);
  return a;
}

const blocks = (...cidrs: string[]): NetBlockEntry[] => cidrs.map((cidr, i) => ({ id: `b${i}`, cidr }));

describe("compileNetBlocks", () => {
  it("finds the most specific IPv4 block, to the first and last address of each", () => {
    const m = compileNetBlocks(blocks("10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24", "10.1.2.3", "192.0.2.0/24"));
    expect(m.size).toBe(5);
    expect(m.match(ip("10.200.0.1"))).toBe("b0");
    expect(m.match(ip("10.1.200.1"))).toBe("b1");
    expect(m.match(ip("10.1.2.4"))).toBe("b2");
    expect(m.match(ip("10.1.2.3"))).toBe("b3");
    expect(m.match(ip("10.1.2.0"))).toBe("b2");
    expect(m.match(ip("10.1.2.255"))).toBe("b2");
    expect(m.match(ip("10.1.3.0"))).toBe("b1");
    expect(m.match(ip("10.0.0.0"))).toBe("b0");
    expect(m.match(ip("10.255.255.255"))).toBe("b0");
    expect(m.match(ip("9.255.255.255"))).toBeNull();
    expect(m.match(ip("11.0.0.0"))).toBeNull();
    expect(m.match(ip("192.0.2.77"))).toBe("b4");
    expect(m.match(ip("192.0.3.0"))).toBeNull();
    expect(m.match(ip("2001:db8::1"))).toBeNull();
  });

  it("keys nothing by /64: a /64 block covers its whole /64 and not the next, a /128 one host, a /48 many /64s", () => {
    const m = compileNetBlocks(blocks("2001:db8:1:2::/64", "2001:db8:1:3::7/128", "2001:db8:aa::/48"));
    expect(m.match(ip("2001:db8:1:2::"))).toBe("b0");
    expect(m.match(ip("2001:db8:1:2:ffff:ffff:ffff:ffff"))).toBe("b0");
    expect(m.match(ip("2001:db8:1:2:dead:beef:0:1"))).toBe("b0");
    expect(m.match(ip("2001:db8:1:1:ffff:ffff:ffff:ffff"))).toBeNull();
    expect(m.match(ip("2001:db8:1:3::"))).toBeNull();
    expect(m.match(ip("2001:db8:1:3::7"))).toBe("b1");
    expect(m.match(ip("2001:db8:1:3::8"))).toBeNull();
    expect(m.match(ip("2001:db8:1:3::6"))).toBeNull();
    expect(m.match(ip("2001:db8:aa:ffff:1::"))).toBe("b2");
    expect(m.match(ip("2001:db8:aa:1::1"))).toBe("b2");
    expect(m.match(ip("2001:db8:ab::"))).toBeNull();
  });

  it("counts IPv4-mapped IPv6 as IPv4, for blocks and for addresses", () => {
    const m = compileNetBlocks(blocks("::ffff:10.0.0.0/104", "198.51.100.0/24", "::/0"));
    expect(m.match(ip("10.9.8.7"))).toBe("b0");
    expect(m.match(ip("::ffff:10.9.8.7"))).toBe("b0");
    expect(m.match(ip("::ffff:c633:6401"))).toBe("b1");
    expect(m.match({ family: 6, words: [0, 0, 0xffff, 0xc6336401] })).toBe("b1");
    // ::/0 is every IPv6 address and no IPv4 one.
    expect(m.match(ip("192.0.2.1"))).toBeNull();
    expect(m.match(ip("::ffff:192.0.2.1"))).toBeNull();
    expect(m.match(ip("fe80::1"))).toBe("b2");
    expect(m.match(ip("::"))).toBe("b2");
  });

  it("covers the whole space with /0 blocks, up to the last address", () => {
    const m = compileNetBlocks(blocks("0.0.0.0/0", "255.255.255.255", "::/0", "ffff::/16", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"));
    expect(m.match(ip("0.0.0.0"))).toBe("b0");
    expect(m.match(ip("255.255.255.254"))).toBe("b0");
    expect(m.match(ip("255.255.255.255"))).toBe("b1");
    expect(m.match(ip("fffe:ffff::"))).toBe("b2");
    expect(m.match(ip("ffff::"))).toBe("b3");
    expect(m.match(ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"))).toBe("b3");
    expect(m.match(ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"))).toBe("b4");
  });

  it("gives the first of two blocks of the same network, however spelled, and skips entries that are not CIDRs", () => {
    const m = compileNetBlocks([
      { id: "bad", cidr: "10.0.0.0/33" },
      { id: "first", cidr: "10.1.2.3/8" },
      { id: "second", cidr: "10.0.0.0/8" },
      { id: "worse", cidr: "not an address" },
      { id: "v6-first", cidr: "2001:DB8::/32" },
      { id: "v6-second", cidr: "2001:db8:0::1/32" },
    ]);
    expect(m.size).toBe(4);
    expect(m.invalid).toEqual([0, 3]);
    expect(m.match(ip("10.2.3.4"))).toBe("first");
    expect(m.match(ip("2001:db8::5"))).toBe("v6-first");
    expect(compileNetBlocks([]).match(ip("10.0.0.1"))).toBeNull();
  });

  it("answers as a linear scan for the longest prefix does, over random nested and adjacent blocks", () => {
    // Blocks and addresses drawn near a few bases, so blocks nest, touch and repeat; addresses include every block's edges and their neighbours.
    const v4Block = fc.record({ base: fc.constantFrom(0x0a000000, 0xc0000200, 0xffffff00, 0), offset: fc.integer({ min: 0, max: 0xffff }), prefix: fc.integer({ min: 0, max: 32 }) });
    const v6Block = fc.record({ base: fc.constantFrom(0x20010db8n << 96n, 0n, (1n << 128n) - (1n << 20n)), offset: fc.bigInt({ min: 0n, max: (1n << 80n) - 1n }), prefix: fc.integer({ min: 0, max: 128 }) });
    const entryArb = fc.oneof(
      v4Block.map(({ base, offset, prefix }) => ({ family: 4 as const, net: BigInt((base + offset) >>> 0), prefix })),
      v6Block.map(({ base, offset, prefix }) => ({ family: 6 as const, net: (base + offset) & ((1n << 128n) - 1n), prefix })),
    );
    fc.assert(
      fc.property(fc.array(entryArb, { minLength: 1, maxLength: 60 }), fc.array(fc.bigInt({ min: 0n, max: (1n << 80n) - 1n }), { maxLength: 20 }), (specs, extras) => {
        const entries = specs.map((s, i) => ({ id: `n${i}`, cidr: `${spell(s.family, s.net)}/${s.prefix}` }));
        const matcher = compileNetBlocks(entries);
        expect(matcher.invalid).toEqual([]);
        const probes: ParsedAddress[] = [];
        for (const s of specs) {
          const bits = s.family === 4 ? 32 : 128;
          const size = 1n << BigInt(bits - s.prefix);
          const start = (s.net / size) * size;
          for (const a of [start, start + size - 1n, start - 1n, start + size, start + size / 2n]) {
            if (a >= 0n && a < 1n << BigInt(bits)) probes.push(ip(spell(s.family, a)));
          }
        }
        for (const x of extras) probes.push(ip(spell(6, (0x20010db8n << 96n) + x)), ip(spell(4, x & 0xffffffffn)));
        for (const addr of probes) expect(matcher.match(addr)).toBe(longestPrefix(entries, addr));
      }),
      { numRuns: 300 },
    );
  });
});

function spell(family: 4 | 6, value: bigint): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 255n)).join(".");
  const groups: string[] = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) groups.push(((value >> shift) & 0xffffn).toString(16));
  return groups.join(":");
}

function popcount(words: readonly number[]): number {
  let bits = 0;
  for (let w of words) for (w >>>= 0; w !== 0; w = (w & (w - 1)) >>> 0) bits++;
  return bits;
}

/** The reference: every entry in order, the longest prefix that covers addr, the first on a tie. */
function longestPrefix(entries: readonly NetBlockEntry[], addr: ParsedAddress): string | null {
  let best: string | null = null;
  let bestBits = -1;
  for (const { id, cidr } of entries) {
    const parsed = parseCidrs([cidr]);
    if (!parsed.ok || !cidrSetHas(parsed.set, addr)) continue;
    const c4 = parsed.set.v4[0];
    const bits = c4 !== undefined ? popcount([c4.mask]) : popcount(parsed.set.v6[0]!.mask);
    if (bits > bestBits) {
      best = id;
      bestBits = bits;
    }
  }
  return best;
}
