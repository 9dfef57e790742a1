// What bench/run.mjs measures: the requests (cases), which of them are
// compared with which (each gateway case against the control that does the
// same job without the gateway), and the targets a comparison is held to.
// Every case runs in the one Worker of bench/cost-worker.js; its
// `x-bench-variant` header picks the gateway or a control.
import { SSE_PLAIN_PATH, SSE_PRICED_PATH } from "./gateway-config.mjs";

export const ITEM_PATH = "/bench/item?x=1";
/** The client address every request but a flood's carries (the runtime sets CF-Connecting-IP on every deployed request). */
export const CLIENT_ADDRESS = "203.0.113.9";

/**
 * keys: {hot, exhausted} managed keys; hotJwt: a JWT of the bench issuer.
 * Returns {name: {label, group, expect, spec}}: `spec` is the client's
 * request (path, headers, kind); `group` says which cases share a round
 * ("small": answers of a few bytes; "sse": the 100 KB stream).
 */
export function costCases({ keys, hotJwt, withBase = false }) {
  const as = (variant, extra = {}) => ({ "x-bench-variant": variant, "cf-connecting-ip": CLIENT_ADDRESS, ...extra });
  const bearer = (token) => ({ authorization: `Bearer ${token}` });
  const small = (label, expect, headers, kind = "get", path = ITEM_PATH) => ({ label, group: "small", expect, spec: { path, headers, kind } });
  const sse = (label, headers, path) => ({ label, group: "sse", expect: 200, spec: { path, headers, kind: "get" } });
  const cases = {
    ok: small("control: the Worker answering by itself (the runtime's floor)", 200, as("ok")),
    pass: small("control: plain pass-through, no hygiene, no log line", 200, as("pass", bearer(keys.hot))),
    hygienic: small("control: forward with the contract's header hygiene and its log line", 200, as("hygienic", bearer(keys.hot))),
    key: small("gateway: hot managed key, admitted", 200, as("gateway", bearer(keys.hot))),
    jwt: small("gateway: hot JWT (RS256), admitted", 200, as("gateway", bearer(hotJwt))),
    anonymous: small("gateway: anonymous caller, admitted", 200, as("gateway")),
    off: small('gateway: mode "off", forwarding without checks', 200, as("gateway-off", bearer(keys.hot))),
    rate_limited: small("gateway: 429, a key over its limit", 429, as("gateway", bearer(keys.exhausted))),
    answer_429: small("control: the same 429, no checks", 429, as("answer-429", bearer(keys.exhausted))),
    invalid_key: small("gateway: 401, a made-up key from a fresh address", 401, as("gateway"), "flood"),
    answer_401: small("control: the same HMAC check and 401", 401, as("answer-401"), "flood"),
    sse_pass: sse("control: 100 KB SSE, plain pass-through", as("pass", bearer(keys.hot)), SSE_PRICED_PATH),
    sse_hygienic: sse("control: 100 KB SSE, hygienic forward and log line", as("hygienic", bearer(keys.hot)), SSE_PRICED_PATH),
    sse_unpriced: sse("gateway: 100 KB SSE, route without response_charge", as("gateway", bearer(keys.hot)), SSE_PLAIN_PATH),
    sse_priced: sse("gateway: 100 KB SSE, route with response_charge (json)", as("gateway", bearer(keys.hot)), SSE_PRICED_PATH),
  };
  if (withBase) {
    for (const name of BASE_CASES) {
      const c = cases[name];
      cases[`${name}_base`] = { ...c, label: `${c.label}, --base build`, spec: { ...c.spec, headers: { ...c.spec.headers, "x-bench-variant": "gateway-base" } } };
    }
  }
  return cases;
}

/** The gateway's cases that `--base=<rev>` also runs on the other build, each compared with its twin. */
export const BASE_CASES = ["key", "jwt", "anonymous", "rate_limited", "invalid_key", "sse_priced"];

/**
 * Each gateway case against a control, in the same rounds: `b` over `a`.
 * `target`: the most `b / a` may be (the CPU targets); `perKiB`: also say
 * the difference per KiB of the answer.
 */
export const CPU_COMPARISONS = [
  { b: "key", a: "pass" },
  { b: "key", a: "hygienic", target: 1.1 },
  { b: "jwt", a: "pass" },
  { b: "jwt", a: "hygienic", target: 1.1 },
  { b: "anonymous", a: "pass" },
  { b: "anonymous", a: "hygienic", target: 1.1 },
  { b: "hygienic", a: "pass" },
  { b: "off", a: "pass" },
  { b: "rate_limited", a: "answer_429", target: 1.25 },
  { b: "invalid_key", a: "answer_401", target: 1.25 },
  { b: "sse_priced", a: "sse_pass", perKiB: true },
  { b: "sse_priced", a: "sse_hygienic", perKiB: true },
  { b: "sse_priced", a: "sse_unpriced", perKiB: true },
  ...BASE_CASES.map((name) => ({ b: name, a: `${name}_base` })),
];

/** The closed-loop throughput part: the gateway's hot key and `mode: "off"` against both forwards; the fixed-rate latency part: the hot key. */
export const LOAD_CASES = { throughput: ["pass", "hygienic", "key", "off"], latency: ["pass", "hygienic", "key"] };
export const LOAD_COMPARISONS = { throughput: [["key", "pass"], ["key", "hygienic"], ["hygienic", "pass"], ["off", "pass"]], latency: [["key", "pass"], ["key", "hygienic"], ["hygienic", "pass"]] };
export const THROUGHPUT_TARGETS = [
  { b: "key", a: "pass", atLeast: 0.9 },
  { b: "off", a: "pass", atLeast: 0.95 },
];
export const P99_TARGET = { b: "key", a: "pass", atMost: 1.1 };

/** Workers Standard: USD per million CPU milliseconds, and per million requests, as read on PRICE_READ_ON. */
export const CPU_USD_PER_MILLION_MS = 0.02;
export const REQUEST_USD_PER_MILLION = 0.3;
export const PRICE_READ_ON = "2026-12-05";
export const PRICE_SOURCE = "https://developers.cloudflare.com/workers/platform/pricing/";

/** USD per million requests for `us` µs of CPU each. */
export function usdPerMillion(us) {
  return (us / 1000) * CPU_USD_PER_MILLION_MS;
}

/**
 * A target's verdict from a ratio's median and 95 % interval: met when the
 * whole interval is on the right side, missed when the whole interval is on
 * the wrong side, not settled when the interval holds the target.
 */
export function verdict(ratio, { atMost, atLeast }) {
  if (ratio.low === null) return "no figure";
  if (atMost !== undefined) return ratio.high <= atMost ? "met" : ratio.low > atMost ? "missed" : "not settled";
  return ratio.low >= atLeast ? "met" : ratio.high < atLeast ? "missed" : "not settled";
}
