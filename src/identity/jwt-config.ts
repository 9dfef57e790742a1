// The `jwt` section of the TOLLGATE config: which identity
// providers' tokens the gateway accepts. The schema is exported for config.ts
// to hold under `jwt`; defaults and bounds are named constants. Unknown fields
// are refused at every depth, and a config that validates works: every
// algorithm listed here is one jose verifies in workerd (tested), a static key
// is a public key of a type those algorithms use, and durations are whole
// seconds within bounds. Messages name the rule, never the value.
import { z } from "zod";

/** Asymmetric JWS algorithms the gateway verifies. `none` and HMAC (HS*) are absent on purpose: a public key must never serve as a shared secret. */
export const JWT_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA", "Ed25519"] as const;
export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];

export const DEFAULT_JWT_ALGORITHMS: readonly JwtAlgorithm[] = ["RS256", "ES256", "EdDSA"];
export const DEFAULT_JWT_CLOCK_SKEW_S = 60;
/** Five minutes: more skew than that is a broken clock, and widens the window an expired token is honoured. */
export const MAX_JWT_CLOCK_SKEW_S = 300;
export const DEFAULT_JWKS_CACHE_S = 600;
/** One day: a key set older than that would keep a withdrawn key trusted too long. */
export const MAX_JWKS_CACHE_S = 86_400;
/** Issuers per config: each holds one key set in memory and is looked up by exact `iss`. */
export const MAX_JWT_ISSUERS = 32;
/** Static keys per issuer, and audiences per issuer. */
export const MAX_JWT_STATIC_KEYS = 100;
export const MAX_JWT_AUDIENCES = 32;

const ALGORITHM_MESSAGE = `must be one of ${JWT_ALGORITHMS.join(", ")} (none and HMAC algorithms are never accepted)`;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const b64u = z.string().regex(BASE64URL, "must be base64url").max(2048, "is too long");
const keyMeta = {
  kid: z.string().min(1).max(256).optional(),
  use: z.literal("sig", "must be sig when present").optional(),
  alg: z.enum(JWT_ALGORITHMS, ALGORITHM_MESSAGE).optional(),
  key_ops: z.array(z.literal("verify", "may only hold verify")).min(1).max(1).optional(),
  ext: z.boolean().optional(),
  x5c: z.array(z.string().max(16_384)).max(10).optional(),
  x5t: b64u.optional(),
  "x5t#S256": b64u.optional(),
  x5u: z.string().max(2048).optional(),
};

// Public keys only: a private member (d, p, q, …) or a symmetric key (k) is
// refused as an unknown field, so a secret pasted into the config by mistake
// is never used, and an `oct` key cannot turn a token's `alg: HS256` into a
// shared-secret check.
const jwkSchema = z.discriminatedUnion(
  "kty",
  [
    z.strictObject({ kty: z.literal("RSA"), n: b64u, e: b64u, ...keyMeta }),
    z.strictObject({ kty: z.literal("EC"), crv: z.enum(["P-256", "P-384"], "must be P-256 or P-384"), x: b64u, y: b64u, ...keyMeta }),
    z.strictObject({ kty: z.literal("OKP"), crv: z.literal("Ed25519", "must be Ed25519"), x: b64u, ...keyMeta }),
  ],
  "kty must be RSA, EC or OKP (a public key)",
);
export type StaticJwk = z.output<typeof jwkSchema>;

// The JWKS is fetched by the gateway: plain http is allowed only to a
// loopback origin (local development and the tests), since anyone on the path
// of a plain-http fetch could publish their own keys.
const jwksUrlSchema = z
  .string()
  .max(2048, "is too long")
  .refine((value) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return false;
    }
    if (url.username !== "" || url.password !== "") return false;
    if (url.protocol === "https:") return true;
    return url.protocol === "http:" && (url.hostname === "127.0.0.1" || url.hostname === "localhost" || url.hostname === "[::1]");
  }, "must be an https URL (http only to 127.0.0.1, localhost or [::1]) without credentials");

/** No C0 or C1 control character, nor DEL. */
const NO_CONTROL_CHARACTERS = /^[^\u0000-\u001f\u007f-\u009f]*$/;

const algorithmsSchema = z
  .array(z.enum(JWT_ALGORITHMS, ALGORITHM_MESSAGE))
  .min(1, "must hold at least one algorithm")
  .max(JWT_ALGORITHMS.length)
  .refine((list) => new Set(list).size === list.length, "must not repeat an algorithm");

export const jwtIssuerSchema = z
  .strictObject({
    // Matched exactly against `iss`, and it names the caller digest (iss + "\n" + sub): a control character (a newline above all) has no place in it.
    issuer: z.string().min(1, "must not be empty").max(2048, "is too long").regex(NO_CONTROL_CHARACTERS, "must not contain control characters"),
    jwks_url: jwksUrlSchema.optional(),
    keys: z.array(jwkSchema).min(1, "must hold at least one key").max(MAX_JWT_STATIC_KEYS, `at most ${MAX_JWT_STATIC_KEYS} keys`).optional(),
    audiences: z
      .array(z.string().min(1, "must not be empty").max(2048, "is too long"))
      .min(1, "must hold at least one audience when present")
      .max(MAX_JWT_AUDIENCES, `at most ${MAX_JWT_AUDIENCES} audiences`)
      .optional(),
    algorithms: algorithmsSchema.default([...DEFAULT_JWT_ALGORITHMS]),
    tenant_claim: z.string().min(1, "must not be empty").max(256, "is too long").optional(),
    clock_skew_s: z
      .number()
      .int("must be whole seconds")
      .min(0, "must be >= 0")
      .max(MAX_JWT_CLOCK_SKEW_S, `must be <= ${MAX_JWT_CLOCK_SKEW_S}`)
      .default(DEFAULT_JWT_CLOCK_SKEW_S),
  })
  .superRefine((value, ctx) => {
    if ((value.jwks_url === undefined) === (value.keys === undefined)) {
      ctx.addIssue({ code: "custom", path: ["jwks_url"], message: "exactly one of jwks_url and keys is required" });
    }
  });

export const jwtConfigSchema = z
  .strictObject({
    issuers: z.array(jwtIssuerSchema).min(1, "must hold at least one issuer").max(MAX_JWT_ISSUERS, `at most ${MAX_JWT_ISSUERS} issuers`),
    jwks_cache_s: z
      .number()
      .int("must be whole seconds")
      .min(1, "must be >= 1")
      .max(MAX_JWKS_CACHE_S, `must be <= ${MAX_JWKS_CACHE_S}`)
      .default(DEFAULT_JWKS_CACHE_S),
  })
  .superRefine((value, ctx) => {
    const seen = new Set<string>();
    value.issuers.forEach((entry, index) => {
      if (seen.has(entry.issuer)) ctx.addIssue({ code: "custom", path: ["issuers", index, "issuer"], message: "is listed twice" });
      seen.add(entry.issuer);
    });
  });

export type JwtConfig = z.output<typeof jwtConfigSchema>;
export type JwtIssuerConfig = z.output<typeof jwtIssuerSchema>;
