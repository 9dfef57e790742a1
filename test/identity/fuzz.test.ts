import { describe, expect, it } from "vitest";
import { type CidrSet, type ParsedAddress, parseCidrs, parseIp } from "../../src/engine/cidr";
import { canonicalKey, resolveClientAddress } from "../../src/identity/client-address";
import { mulberry32 } from "../prng";

const ROUNDS = 10_000;

const trustedList = parseCidrs(["0.0.0.0/1", "8000::/1", "::ffff:0:0/97"]);
if (!trustedList.ok) throw new Error("fuzz CIDRs rejected");
// Trusts half of each family, so random peers and entries take every branch
// of the scan: untrusted peer, trusted peer, skip, take, stop.
const TRUST_HALF: CidrSet = trustedList.set;

/** Runs `fn`, and if it throws, fails with the input that made it throw. */
function noThrow<T>(fn: () => T, input: unknown): T {
  try {
    return fn();
  } catch (e) {
    throw new Error(`threw ${String(e)} for ${JSON.stringify(input)}`);
  }
}

/** Whether `key` is a canonical key: it parses back to itself. */
function isCanonicalKey(key: string): boolean {
  if (key.endsWith("/64")) {
    const a = parseIp(key.slice(0, -3));
    return a !== null && a.family === 6 && canonicalKey(a) === key;
  }
  const a = parseIp(key);
  return a !== null && a.family === 4 && canonicalKey(a) === key;
}

function isWellFormed(a: ParsedAddress): boolean {
  const u32 = (x: number) => Number.isInteger(x) && x >= 0 && x <= 0xffffffff;
  return a.family === 4 ? u32(a.v4) : a.words.length === 4 && a.words.every(u32);
}

// Each generator makes strings of a different texture, weighted towards the
// characters addresses are made of so that near-misses are common.
const ALPHABETS = [
  "0123456789.",
  "0123456789abcdefABCDEF:",
  "0123456789abcdef:.%[]",
  "0123456789.:, []%\t",
  "0123456789abcdefxX:.%[], \t-/eth",
  "f:0.1",
];

function randomString(rand: () => number): string {
  const mode = Math.floor(rand() * 4);
  const len = Math.floor(rand() * (mode === 3 ? 300 : 48));
  if (mode === 0) {
    // Arbitrary UTF-16 code units, lone surrogates included.
    let s = "";
    for (let i = 0; i < len; i++) s += String.fromCharCode(Math.floor(rand() * 0x10000));
    return s;
  }
  if (mode === 1) {
    // Random bytes below 0x100.
    let s = "";
    for (let i = 0; i < len; i++) s += String.fromCharCode(Math.floor(rand() * 0x100));
    return s;
  }
  const alphabet = ALPHABETS[Math.floor(rand() * ALPHABETS.length)] ?? "";
  let s = "";
  for (let i = 0; i < len; i++) s += alphabet[Math.floor(rand() * alphabet.length)];
  return s;
}

/** A real address spelt in one of its forms, then perhaps mangled by one character. */
function nearAddress(rand: () => number): string {
  const h = () => Math.floor(rand() * 0x10000).toString(16);
  const o = () => String(Math.floor(rand() * 256));
  const forms = [
    () => `${o()}.${o()}.${o()}.${o()}`,
    () => `${h()}:${h()}::${h()}`,
    () => `::ffff:${o()}.${o()}.${o()}.${o()}`,
    () => `::ffff:${h()}:${h()}`,
    () => `[${h()}::${h()}%eth${o()}]`,
    () => Array.from({ length: 8 }, h).join(":").toUpperCase(),
  ];
  const form = forms[Math.floor(rand() * forms.length)];
  let s = form ? form() : "";
  if (rand() < 0.5) {
    const at = Math.floor(rand() * (s.length + 1));
    const ch = ":.%[],0f \u0000"[Math.floor(rand() * 10)] ?? "";
    s = rand() < 0.5 ? s.slice(0, at) + ch + s.slice(at) : s.slice(0, at) + s.slice(at + 1);
  }
  return s;
}

describe("random input", () => {
  it(`never throws in parseIp, and every address it returns keys canonically (${ROUNDS} strings)`, () => {
    const rand = mulberry32(0x1d3a7);
    let parsed = 0;
    for (let n = 0; n < ROUNDS; n++) {
      const text = rand() < 0.3 ? nearAddress(rand) : randomString(rand);
      const a = noThrow(() => parseIp(text), text);
      if (a === null) continue;
      parsed++;
      expect(isWellFormed(a), JSON.stringify(text)).toBe(true);
      expect(isCanonicalKey(canonicalKey(a)), JSON.stringify(text)).toBe(true);
    }
    // The generators are meant to hit valid addresses too, not only garbage.
    expect(parsed).toBeGreaterThan(ROUNDS / 50);
  });

  it(`never throws in resolveClientAddress, and answers unknown or a canonical key (${ROUNDS} requests)`, () => {
    const rand = mulberry32(0xbadc0de);
    for (let n = 0; n < ROUNDS; n++) {
      const peer = rand() < 0.1 ? null : rand() < 0.6 ? nearAddress(rand) : randomString(rand);
      const parts = Array.from({ length: Math.floor(rand() * 6) }, () =>
        rand() < 0.5 ? nearAddress(rand) : randomString(rand),
      );
      const shape = Math.floor(rand() * 3);
      const xff = shape === 0 ? null : shape === 1 ? parts.join(rand() < 0.5 ? "," : ", ") : parts;
      const key = noThrow(() => resolveClientAddress(peer, xff, TRUST_HALF), { peer, xff });
      expect(key === "unknown" || isCanonicalKey(key), JSON.stringify({ peer, xff, key })).toBe(true);
    }
  });
});
