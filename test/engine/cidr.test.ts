import { describe, expect, it } from "vitest";
import { type CidrSet, EMPTY_CIDR_SET, cidrSetHas, parseCidrs, parseIp } from "../../src/engine/cidr";

function set(list: readonly string[]): CidrSet {
  const r = parseCidrs(list);
  if (!r.ok) throw new Error(`test CIDRs rejected: ${r.index} ${r.reason}`);
  return r.set;
}

function ip(text: string) {
  const a = parseIp(text);
  if (a === null) throw new Error(`test address rejected: ${text}`);
  return a;
}

describe("parseIp", () => {
  it.each([
    ["1.2.3.4", 0x01020304],
    ["0.0.0.0", 0],
    ["255.255.255.255", 0xffffffff],
    ["203.0.113.7", 0xcb007107],
    ["  10.0.0.1\t", 0x0a000001],
    ["100.64.0.10", 0x6440000a],
  ])("reads the dotted quad %j", (text, v4) => {
    expect(parseIp(text)).toEqual({ family: 4, v4 });
  });

  it.each([
    ["::ffff:1.2.3.4"],
    ["::FFFF:1.2.3.4"],
    ["::ffff:0102:0304"],
    ["::ffff:102:304"],
    ["0:0:0:0:0:ffff:1.2.3.4"],
    ["0000:0000:0000:0000:0000:ffff:0102:0304"],
    ["[::ffff:1.2.3.4]"],
    ["::ffff:1.2.3.4%eth0"],
    [" ::ffff:1.2.3.4 "],
  ])("reads the IPv4-mapped %j as IPv4", (text) => {
    expect(parseIp(text)).toEqual({ family: 4, v4: 0x01020304 });
  });

  it.each([
    ["2001:db8::1", [0x20010db8, 0, 0, 1]],
    ["2001:DB8::1", [0x20010db8, 0, 0, 1]],
    ["2001:0db8:0000:0000:0000:0000:0000:0001", [0x20010db8, 0, 0, 1]],
    ["2001:db8:0:0:0:0:0:1", [0x20010db8, 0, 0, 1]],
    ["2001:db8::0:1", [0x20010db8, 0, 0, 1]],
    ["[2001:db8::1]", [0x20010db8, 0, 0, 1]],
    ["2001:db8::1%eth0", [0x20010db8, 0, 0, 1]],
    ["2001:db8::1%25eth0", [0x20010db8, 0, 0, 1]],
    ["[2001:db8::1%en0]", [0x20010db8, 0, 0, 1]],
    ["::", [0, 0, 0, 0]],
    ["::1", [0, 0, 0, 1]],
    ["1::", [0x00010000, 0, 0, 0]],
    ["1:2:3:4:5:6:7::", [0x00010002, 0x00030004, 0x00050006, 0x00070000]],
    ["::2:3:4:5:6:7:8", [0x00000002, 0x00030004, 0x00050006, 0x00070008]],
    ["1:2:3:4:5:6:7:8", [0x00010002, 0x00030004, 0x00050006, 0x00070008]],
    ["fe80::1:2", [0xfe800000, 0, 0, 0x00010002]],
    ["::1.2.3.4", [0, 0, 0, 0x01020304]],
    ["64:ff9b::192.0.2.33", [0x0064ff9b, 0, 0, 0xc0000221]],
    ["1:2:3:4:5:6:1.2.3.4", [0x00010002, 0x00030004, 0x00050006, 0x01020304]],
    ["1::5:6:1.2.3.4", [0x00010000, 0, 0x00050006, 0x01020304]],
    ["FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF", [0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff]],
  ])("reads the IPv6 %j", (text, words) => {
    expect(parseIp(text)).toEqual({ family: 6, words });
  });

  it.each([
    [""],
    ["   "],
    ["01.2.3.4"],
    ["1.2.3.010"],
    ["1.2.3.00"],
    ["1.2.3"],
    ["1.2.3.4.5"],
    ["1.2.3.256"],
    ["1.2.3.1000"],
    ["1..3.4"],
    [".1.2.3"],
    ["1.2.3.4."],
    ["0x7f000001"],
    ["2130706433"],
    ["1.2.3.4:80"],
    ["[1.2.3.4]"],
    ["1.2.3.4%eth0"],
    ["[::1]:80"],
    ["[::1"],
    ["::1]"],
    ["[]"],
    [":"],
    [":::"],
    ["1:::2"],
    ["::1::"],
    ["1::2::3"],
    [":1:2:3:4:5:6:7"],
    ["1:2:3:4:5:6:7:"],
    ["1:2:3:4:5:6:7"],
    ["1:2:3:4:5:6:7:8:9"],
    ["1:2:3:4::5:6:7:8"],
    ["12345::"],
    ["g::1"],
    ["::1%"],
    ["::1%eth 0"],
    ["::1%a%b"],
    ["::ffff:1.2.3"],
    ["::ffff:01.2.3.4"],
    ["::1.2.3.4:5"],
    ["1:2:3:4:5:6:7:1.2.3.4"],
    ["1.2.3.4::"],
    ["1.2.3.4, 5.6.7.8"],
    ["1.2. 3.4"],
    ["unknown"],
    ["localhost"],
    ["１.２.３.４"],
    [`${" ".repeat(300)}1.2.3.4`],
  ])("rejects %j", (text) => {
    expect(parseIp(text)).toBeNull();
  });

  it("returns null for a value that is not a string", () => {
    expect(parseIp(undefined as unknown as string)).toBeNull();
    expect(parseIp(42 as unknown as string)).toBeNull();
  });
});

describe("parseCidrs", () => {
  it("compiles an empty list to a set that holds nothing", () => {
    const r = parseCidrs([]);
    expect(r.ok).toBe(true);
    if (r.ok) expect(cidrSetHas(r.set, ip("1.2.3.4"))).toBe(false);
  });

  it("accepts IPv4 and IPv6 networks and bare addresses", () => {
    const r = parseCidrs(["10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "2001:db8:ffff::1", " 172.16.0.0/12 "]);
    expect(r.ok).toBe(true);
  });

  it.each([
    ["10.0.0.0/33", 0],
    ["2001:db8::/129", 0],
    ["10.0.0.0/", 0],
    ["10.0.0.0/-1", 0],
    ["10.0.0.0/08", 0],
    ["10.0.0.0/8/8", 0],
    ["10.0.0.0 /8", 0],
    ["10.0.0.0/ 8", 0],
    ["10.0.0/8", 0],
    ["fe80::1%eth0/64", 0],
    ["[2001:db8::]/32", 0],
    ["", 0],
    ["/8", 0],
    ["10.0.0.0/0x8", 0],
  ])("rejects %j, naming its index", (bad) => {
    const r = parseCidrs(["192.0.2.0/24", "2001:db8::/32", bad]);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.index).toBe(2);
      expect(r.reason.length).toBeGreaterThan(0);
    }
  });

  it("stops at the first invalid entry", () => {
    const r = parseCidrs(["10.0.0.0/8", "nope", "1.2.3.4/99"]);
    expect(r).toMatchObject({ ok: false, index: 1 });
  });

  it("rejects an entry that is not a string", () => {
    const r = parseCidrs(["10.0.0.0/8", 7 as unknown as string]);
    expect(r).toMatchObject({ ok: false, index: 1 });
  });

  it("masks the host bits of an IPv4 CIDR", () => {
    const s = set(["10.1.2.3/8"]);
    expect(cidrSetHas(s, ip("10.0.0.0"))).toBe(true);
    expect(cidrSetHas(s, ip("10.255.255.255"))).toBe(true);
    expect(cidrSetHas(s, ip("11.0.0.0"))).toBe(false);
    expect(cidrSetHas(s, ip("9.255.255.255"))).toBe(false);
  });

  it("masks the host bits of an IPv6 CIDR", () => {
    const s = set(["2001:db8:1:2:3:4:5:6/48"]);
    expect(cidrSetHas(s, ip("2001:db8:1::"))).toBe(true);
    expect(cidrSetHas(s, ip("2001:db8:1:ffff:ffff:ffff:ffff:ffff"))).toBe(true);
    expect(cidrSetHas(s, ip("2001:db8:2::"))).toBe(false);
  });
});

describe("cidrSetHas", () => {
  it("treats a bare IPv4 address as a /32", () => {
    const s = set(["192.0.2.7"]);
    expect(cidrSetHas(s, ip("192.0.2.7"))).toBe(true);
    expect(cidrSetHas(s, ip("192.0.2.6"))).toBe(false);
    expect(cidrSetHas(s, ip("192.0.2.8"))).toBe(false);
  });

  it("treats a bare IPv6 address as a /128", () => {
    const s = set(["2001:db8::7"]);
    expect(cidrSetHas(s, ip("2001:DB8:0:0::7"))).toBe(true);
    expect(cidrSetHas(s, ip("2001:db8::6"))).toBe(false);
    expect(cidrSetHas(s, ip("2001:db8::1:7"))).toBe(false);
  });

  it.each([
    ["0.0.0.0/0", "255.255.255.255", true],
    ["0.0.0.0/0", "0.0.0.0", true],
    ["128.0.0.0/1", "127.255.255.255", false],
    ["128.0.0.0/1", "128.0.0.0", true],
    ["203.0.113.0/24", "203.0.113.255", true],
    ["203.0.113.0/24", "203.0.114.0", false],
    ["203.0.113.0/25", "203.0.113.128", false],
    ["::/0", "2001:db8::1", true],
    ["::/0", "1.2.3.4", false],
    ["2001:db8::/32", "2001:db8:ffff:ffff::1", true],
    ["2001:db8::/32", "2001:db9::", false],
    ["2001:db8::/33", "2001:db8:8000::", false],
    ["2001:db8::/33", "2001:db8:7fff::", true],
    ["2001:db8:0:0:8000::/65", "2001:db8::8000:0:0:1", true],
    ["2001:db8:0:0:8000::/65", "2001:db8::7fff:0:0:1", false],
    ["2001:db8::/127", "2001:db8::1", true],
    ["2001:db8::/127", "2001:db8::2", false],
    ["::ffff:10.0.0.0/104", "10.200.0.1", true],
    ["::ffff:10.0.0.0/104", "::ffff:10.200.0.1", true],
    ["::ffff:10.0.0.0/104", "11.0.0.1", false],
    ["::ffff:0:0/96", "8.8.8.8", true],
    ["10.0.0.0/8", "::ffff:10.1.1.1", true],
    ["10.0.0.0/8", "::ffff:0a01:0101", true],
    ["10.0.0.0/8", "::10.1.1.1", false],
    ["173.245.48.0/20", "173.245.63.255", true],
    ["2400:cb00::/32", "2400:CB00:1::1", true],
  ])("places CIDR %s around %s: %s", (cidr, addr, inside) => {
    expect(cidrSetHas(set([cidr]), ip(addr))).toBe(inside);
  });

  it("matches any CIDR of a mixed set", () => {
    const s = set(["10.0.0.0/8", "192.168.0.0/16", "2001:db8::/32", "fd00::/8"]);
    expect(cidrSetHas(s, ip("192.168.4.4"))).toBe(true);
    expect(cidrSetHas(s, ip("fd12:3456::1"))).toBe(true);
    expect(cidrSetHas(s, ip("172.16.0.1"))).toBe(false);
    expect(cidrSetHas(s, ip("fe80::1"))).toBe(false);
  });

  it("holds nothing when empty", () => {
    expect(cidrSetHas(EMPTY_CIDR_SET, ip("1.2.3.4"))).toBe(false);
    expect(cidrSetHas(EMPTY_CIDR_SET, ip("::1"))).toBe(false);
  });
});
