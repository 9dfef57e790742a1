// node bench/jwt.mjs — what a JWT caller costs the gateway, in one process
// (Node's WebCrypto, the same jose build the Worker bundles): µs per first
// verification of a token (decode, key selection, signature check, claims,
// caller digest) for RS256, ES256 and EdDSA, and ns per verification of a
// token already in the claims cache (peek, the synchronous hot path, and
// `await verify`). Also looksLikeJwt on a typical token and on a managed
// key (refused before the regex). Prints a Markdown table; `--json` prints
// the figures as JSON instead. A benchmark, never a timed test.
//
// - First verifications use static keys (no JWKS fetch); every token is
//   distinct, so each one is a claims-cache miss. jose caches the imported
//   key, as it does in the gateway, so key import is not counted.
// - Cached verifications cycle through 1,000 verified tokens built before the
//   clock starts (strings from a header arrive new each request; V8 then
//   hashes the string once per lookup, which this includes only for the
//   first lap).
// - Figures are the median of interleaved rounds.
import { spawnSync } from "node:child_process";
import os from "node:os";
import { fileURLToPath } from "node:url";

// The verifier is TypeScript: run this file again under tsx unless that has already happened.
if (process.env.TOLLGATE_BENCH_CHILD !== "1") {
  const child = spawnSync(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: "inherit",
    env: { ...process.env, TOLLGATE_BENCH_CHILD: "1" },
  });
  process.exit(child.status ?? 1);
}

const { exportJWK, generateKeyPair, SignJWT } = await import("jose");
const { jwtConfigSchema } = await import("../src/identity/jwt-config.ts");
const { compileJwtConfig } = await import("../src/identity/jwt-verifier.ts");
const { looksLikeJwt } = await import("../src/identity/jwt-token.ts");

const ISS = "https://auth.example.com/";
const NOW_MS = Date.UTC(2030, 0, 1);
const NOW_S = NOW_MS / 1000;
const ROUNDS = 7;
const FIRST_PER_ROUND = 200;
const CACHED_TOKENS = 1000;
const CACHED_PER_ROUND = 2_000_000;
const json = process.argv.includes("--json");

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function keyFor(alg) {
  const { privateKey, publicKey } = await generateKeyPair(alg, alg === "EdDSA" ? { crv: "Ed25519" } : {});
  const kid = `bench-${alg}`;
  return { alg, kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: "sig" } };
}

let serial = 0;
function sign(key) {
  serial += 1;
  // A typical access token: a few standard claims, an org and scopes.
  return new SignJWT({ iss: ISS, sub: `user-${serial}`, aud: "api", org_id: "acme", scope: "read:objects write:objects", iat: NOW_S, exp: NOW_S + 3600 })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: "JWT" })
    .sign(key.privateKey);
}

function verifierWith(keys) {
  const config = jwtConfigSchema.parse({ issuers: [{ issuer: ISS, keys: keys.map((k) => k.jwk), audiences: ["api"], tenant_claim: "org_id" }] });
  return compileJwtConfig(config, { staleIfErrorS: 300 });
}

const keys = await Promise.all(["RS256", "ES256", "EdDSA"].map(keyFor));

// First verifications: µs each, per algorithm, rounds interleaved.
const firstUs = Object.fromEntries(keys.map((k) => [k.alg, []]));
for (let round = 0; round <= ROUNDS; round++) {
  for (const key of keys) {
    const verifier = verifierWith([key]);
    const tokens = await Promise.all(Array.from({ length: FIRST_PER_ROUND }, () => sign(key)));
    await verifier.verify(await sign(key), NOW_MS); // imports the key (jose caches it)
    const started = performance.now();
    for (const token of tokens) {
      const outcome = await verifier.verify(token, NOW_MS);
      if (!outcome.ok) throw new Error(`${key.alg}: ${outcome.code}`);
    }
    const us = ((performance.now() - started) * 1000) / FIRST_PER_ROUND;
    if (round > 0) firstUs[key.alg].push(us); // round 0 warms the JIT
  }
}

// Cached verifications: ns each.
const hot = verifierWith(keys);
const hotTokens = [];
for (let i = 0; i < CACHED_TOKENS; i++) hotTokens.push(await sign(keys[i % keys.length]));
for (const token of hotTokens) if (!(await hot.verify(token, NOW_MS)).ok) throw new Error("hot token refused");

const peekNs = [];
const verifyNs = [];
const shapeNs = [];
const keyShapeNs = [];
// Managed keys have the shape tg_<12>_<32>; looksLikeJwt refuses them before its regex.
const managedKeys = Array.from({ length: CACHED_TOKENS }, (_, i) => `tg_${String(i).padStart(12, "0")}_${"a".repeat(32)}`);
let sink = 0;
for (let round = 0; round <= ROUNDS; round++) {
  let started = performance.now();
  for (let i = 0; i < CACHED_PER_ROUND; i++) {
    const outcome = hot.peek(hotTokens[i % CACHED_TOKENS], NOW_MS + i);
    if (outcome?.ok) sink++;
  }
  const peek = ((performance.now() - started) * 1e6) / CACHED_PER_ROUND;

  const asyncN = CACHED_PER_ROUND / 10;
  started = performance.now();
  for (let i = 0; i < asyncN; i++) {
    const outcome = await hot.verify(hotTokens[i % CACHED_TOKENS], NOW_MS + i);
    if (outcome.ok) sink++;
  }
  const verify = ((performance.now() - started) * 1e6) / asyncN;

  started = performance.now();
  for (let i = 0; i < CACHED_PER_ROUND; i++) if (looksLikeJwt(hotTokens[i % CACHED_TOKENS])) sink++;
  const shape = ((performance.now() - started) * 1e6) / CACHED_PER_ROUND;

  started = performance.now();
  for (let i = 0; i < CACHED_PER_ROUND; i++) if (!looksLikeJwt(managedKeys[i % CACHED_TOKENS])) sink++;
  const keyShape = ((performance.now() - started) * 1e6) / CACHED_PER_ROUND;

  if (round > 0) {
    peekNs.push(peek);
    verifyNs.push(verify);
    shapeNs.push(shape);
    keyShapeNs.push(keyShape);
  }
}
if (sink === 0) throw new Error("nothing verified");

const results = {
  firstVerificationUs: Object.fromEntries(Object.entries(firstUs).map(([alg, v]) => [alg, Math.round(median(v) * 10) / 10])),
  cachedPeekNs: Math.round(median(peekNs)),
  cachedVerifyNs: Math.round(median(verifyNs)),
  looksLikeJwtNs: Math.round(median(shapeNs)),
  looksLikeJwtManagedKeyNs: Math.round(median(keyShapeNs)),
  tokenChars: hotTokens.map((t) => t.length).sort((a, b) => a - b)[Math.floor(hotTokens.length / 2)],
  machine: `Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? "CPU"}, load ${os.loadavg()[0].toFixed(2)}`,
};

if (json) {
  console.log(JSON.stringify(results, null, 2));
} else {
  console.log(`## JWT verification (${results.machine}; median of ${ROUNDS} rounds)\n`);
  console.log("| case | cost |\n| --- | --- |");
  for (const [alg, us] of Object.entries(results.firstVerificationUs)) console.log(`| first verification, ${alg} | ${us} µs |`);
  console.log(`| cached, \`peek\` (sync) | ${results.cachedPeekNs} ns |`);
  console.log(`| cached, \`await verify\` | ${results.cachedVerifyNs} ns |`);
  console.log(`| \`looksLikeJwt\` (${results.tokenChars}-char token) | ${results.looksLikeJwtNs} ns |`);
  console.log(`| \`looksLikeJwt\` (managed key) | ${results.looksLikeJwtManagedKeyNs} ns |`);
}
