// @ts-check
// What a command reads besides its arguments: JSON from a flag (`--limits
// '{"request":[...]}'`) or from a file (`--limits @limits.json`), and an
// expiry as a time (`--expires-at 2030-01-31T00:00:00Z`) or a duration from
// now (`--expires-in 1h`). A mistake in either is a usage error (exit 2).
import { readFileSync } from "node:fs";
import { oneLine, usageError } from "./cli-error.mjs";

/**
 * The JSON value of a flag: inline text, or `@path` for a file's contents.
 * @param {string} flag e.g. `--limits`, for the error
 * @param {string} value
 * @returns {unknown}
 */
export function jsonArgument(flag, value) {
  let text = value;
  if (value.startsWith("@")) {
    const path = value.slice(1);
    try {
      text = readFileSync(path, "utf8");
    } catch (error) {
      const code = error instanceof Error && "code" in error ? String(error.code) : "unreadable";
      throw usageError(`${flag}: cannot read ${path} (${code})`);
    }
  }
  try {
    return /** @type {unknown} */ (JSON.parse(text));
  } catch (error) {
    throw usageError(`${flag}: not valid JSON (${oneLine(error instanceof Error ? error.message : String(error))})`);
  }
}

/**
 * A JSON object from a flag (`--body`, `--limits`, `--quota`).
 * @param {string} flag
 * @param {string} value
 * @returns {Record<string, unknown>}
 */
export function jsonObjectArgument(flag, value) {
  const parsed = jsonArgument(flag, value);
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw usageError(`${flag}: must be a JSON object`);
  return /** @type {Record<string, unknown>} */ (parsed);
}

const DURATION = /^(\d+)(s|m|h|d)$/;
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** A duration back from now, as --since, --from and --to take it: minutes, hours or days. */
const AGO = /^(\d+)(m|h|d)$/;

/**
 * A duration back from now (`90m`, `24h`, `7d`) as epoch ms, or null when
 * `value` is not one (the caller reads it as a time).
 * @param {string} value
 * @param {number} nowMs
 */
export function agoMs(value, nowMs) {
  const match = AGO.exec(value);
  if (match === null) return null;
  return nowMs - Number(match[1]) * UNIT_MS[/** @type {keyof typeof UNIT_MS} */ (match[2])];
}

/**
 * `expires_at` for a body: `--expires-at` as given (the API validates it),
 * or now + `--expires-in` (`90s`, `30m`, `1h`, `7d`) as ISO 8601; undefined
 * when neither is set.
 * @param {{ expiresAt?: string, expiresIn?: string }} options
 * @param {number} nowMs
 */
export function expiresAt(options, nowMs) {
  if (options.expiresAt !== undefined && options.expiresIn !== undefined) throw usageError("--expires-at and --expires-in: give one, not both");
  if (options.expiresAt !== undefined) return options.expiresAt;
  if (options.expiresIn === undefined) return undefined;
  const match = DURATION.exec(options.expiresIn);
  if (match === null) throw usageError(`--expires-in: not a duration like 90s, 30m, 1h or 7d: '${options.expiresIn}'`);
  const unit = /** @type {keyof typeof UNIT_MS} */ (match[2]);
  return new Date(nowMs + Number(match[1]) * UNIT_MS[unit]).toISOString();
}

const LIMIT_EXAMPLE = '{"count":100,"window_s":60}';

/** Every field a limit takes, for the help texts; and where charge_on_status lives, since operators look for it here. */
const LIMIT_FIELDS = `A limit is {"count", "window_s", "burst"?, "scope"?: "isolate"|"global", "delay_max_ms"?,
"shadow"?, "penalty"?}; at most 3 per list, and 3 shadow ones beside them.
  burst         the largest burst (default: count)
  scope         "isolate" (each isolate on its own) or "global" (across all); default: the config's
  delay_max_ms  0 to 10000: hold a request whose wait is at most this long and forward it
                when the limit allows (Tollgate-Delayed-Ms), instead of answering 429; default 0
  shadow        true: try it without enforcing it; what it would refuse goes on, marked
                Tollgate-Shadow and counted ('tollgate shadow'); false switches it on
  penalty       {"after", "within_s", "block_s"}: a caller it refuses 'after' times within
                within_s seconds is blocked for block_s seconds (see 'tollgate blocks ls')
Charging only on the origin's status (charge_on_status, e.g. ["4xx"] for failed logins) is a
route's field in the TOLLGATE config, not a limit's: see docs/design.md and \`tollgate explain\`.`;

/**
 * The two shapes `--limits` takes, for the help texts: a tenant's limits
 * name whom each list applies to; a key's and an override's are lists.
 */
export const LIMITS_HELP = {
  tenant: `--limits shape (a tenant's): category → whom it applies to → a list of limits, where
whom is "key" (each of its keys), "jwt" (each JWT caller) or "tenant" (the tenant as a whole):
  '{"request":{"key":[${LIMIT_EXAMPLE}],"tenant":[{"count":1000,"window_s":60,"burst":2000}]}}'
${LIMIT_FIELDS}
(A key's or an override's --limits is a plain list per category: '{"request":[${LIMIT_EXAMPLE}]}'.)`,
  key: `--limits shape (a key's or an override's): category → a list of limits:
  '{"request":[${LIMIT_EXAMPLE}],"upload":[{"count":10,"window_s":3600}]}'
${LIMIT_FIELDS}
(A tenant's --limits names whom each list applies to: '{"request":{"key":[${LIMIT_EXAMPLE}]}}'.)`,
};

/**
 * `--shadow`: every limit of `limits` (either shape) marked as a shadow one,
 * tried beside the limits in force rather than enforced.
 * @param {Record<string, unknown>} limits
 * @returns {Record<string, unknown>}
 */
export function shadowLimits(limits) {
  const mark = (/** @type {unknown} */ list) => (Array.isArray(list) ? list.map((l) => (typeof l === "object" && l !== null ? { ...l, shadow: true } : l)) : list);
  return Object.fromEntries(
    Object.entries(limits).map(([category, entry]) => [
      category,
      Array.isArray(entry) ? mark(entry) : typeof entry === "object" && entry !== null ? Object.fromEntries(Object.entries(entry).map(([whom, list]) => [whom, mark(list)])) : entry,
    ]),
  );
}

/**
 * `--limits` as JSON in the shape its command takes: for a tenant each
 * category maps to `{key?, jwt?, tenant?}` lists, for a key or an override
 * each category maps to a list. The other shape is a usage error that says
 * which one was expected, with an example.
 * @param {string} flag
 * @param {string} value
 * @param {"tenant" | "key"} shape
 */
export function limitsArgument(flag, value, shape) {
  const limits = jsonObjectArgument(flag, value);
  for (const [category, entry] of Object.entries(limits)) {
    if (shape === "tenant" && Array.isArray(entry)) {
      throw usageError(`${flag}: a tenant's limits name whom each list applies to ("key", "jwt" or "tenant"), e.g. {"${category}":{"key":[${LIMIT_EXAMPLE}]}}; '${category}' is a plain list, the shape of a key's or an override's limits`);
    }
    if (shape === "key" && entry !== null && typeof entry === "object" && !Array.isArray(entry)) {
      throw usageError(`${flag}: a key's or an override's limits are a list per category, e.g. {"${category}":[${LIMIT_EXAMPLE}]}; '${category}' names whom it applies to, the shape of a tenant's limits`);
    }
  }
  return limits;
}

/** A full managed key, `tg_<12-character id>_<secret>`: only its id is kept. */
const FULL_KEY = /^key:tg_([0-9a-z]{12})_[0-9a-z]+$/;

/**
 * A caller argument as the API takes it. `key:` wants the key's id (the part
 * after `tg_`), and an operator often has the whole key at hand: a full key
 * `key:tg_<id>_<secret>` becomes `key:<id>`, the secret dropped here so it is
 * never sent, printed or logged. `note` says so (on stderr) when it happens.
 * @param {string} caller
 * @param {(text: string) => void} note
 */
export function callerArgument(caller, note) {
  const full = FULL_KEY.exec(caller);
  if (full !== null) {
    note(`Took the key id ${full[1]} from the full key; its secret was not sent.\n`);
    return `key:${full[1]}`;
  }
  if (caller.startsWith("key:tg_")) {
    throw usageError("key: give the key's id, the 12 characters after tg_ (tg_<id>_<secret>), or the whole key");
  }
  return caller;
}
