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
