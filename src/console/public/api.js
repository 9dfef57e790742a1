// @ts-check
// The one way the console talks to the admin API: same origin, the token in
// `Authorization` (never in a URL), JSON in and out. A refusal arrives as
// problem+json (RFC 9457) and leaves here as an ApiError whose `message` is
// the API's own `detail`, and whose `field` names the invalid field of a 400,
// so a form can show the message next to it.

export const ADMIN_BASE = "/_tollgate/admin/v1";

/**
 * A call refused by the `admin` rate limit is retried once when the wait is at
 * most this. Safe for writes too: the limit refuses before anything is done.
 */
const MAX_RETRY_WAIT_MS = 3000;

/**
 * @typedef {{ status?: number, code?: string, detail?: string, hint?: string, field?: string, retry_after_ms?: number }} Problem
 */

export class ApiError extends Error {
  /**
   * @param {number} status HTTP status; 0 when the gateway could not be reached
   * @param {Problem} problem
   */
  constructor(status, problem) {
    super(problem.detail ?? `The gateway answered ${status}.`);
    this.name = "ApiError";
    this.status = status;
    /** The problem's stable code, e.g. `invalid_request`, `admin_forbidden`; `network` when unreachable. */
    this.code = problem.code ?? "unknown";
    /** On 400: the invalid field as a dotted path (`limits.request.key.0.count`), else null. */
    this.field = problem.field ?? null;
    this.retryAfterMs = problem.retry_after_ms ?? null;
  }

  /** The message without the `field: ` prefix the API puts before it, for showing next to that field. */
  get fieldMessage() {
    const prefix = `${this.field}: `;
    return this.field !== null && this.message.startsWith(prefix) ? this.message.slice(prefix.length) : this.message;
  }
}

/**
 * @param {Response} response
 * @returns {Promise<ApiError>}
 */
async function errorOf(response) {
  /** @type {Problem} */
  let problem = {};
  try {
    const body = await response.json();
    if (typeof body === "object" && body !== null) problem = body;
  } catch {
    // not JSON: the generic message below
  }
  return new ApiError(response.status, problem);
}

/** @param {number} ms */
function wait(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * @typedef {Object} Api
 * @property {(path: string, query?: Record<string, string | undefined>) => Promise<any>} get
 * @property {(path: string, query?: Record<string, string | undefined>) => Promise<string>} text
 * @property {(path: string, body?: unknown) => Promise<any>} put
 * @property {(path: string, body?: unknown) => Promise<any>} post
 * @property {(path: string) => Promise<any>} del
 */

/**
 * A client of the admin API for one token. `onUnauthorized` runs when the
 * API stops accepting the token (rotated, say) so the console can sign out.
 * @param {string} token
 * @param {{ onUnauthorized?: (error: ApiError) => void }} [hooks]
 * @returns {Api}
 */
export function createApi(token, hooks = {}) {
  /**
   * @param {string} method
   * @param {string} path
   * @param {{ query?: Record<string, string | undefined>, body?: unknown, text?: boolean }} options
   */
  async function call(method, path, options) {
    const url = new URL(ADMIN_BASE + path, location.origin);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined && value !== "") url.searchParams.set(name, value);
    }
    /** @type {Record<string, string>} */
    const headers = { authorization: `Bearer ${token}`, accept: "application/json" };
    if (options.body !== undefined) headers["content-type"] = "application/json";
    const init = { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body), cache: /** @type {RequestCache} */ ("no-store"), credentials: /** @type {RequestCredentials} */ ("omit") };

    for (let attempt = 0; ; attempt += 1) {
      let response;
      try {
        response = await fetch(url, init);
      } catch {
        throw new ApiError(0, { code: "network", detail: "The gateway could not be reached. Check the connection and try again." });
      }
      if (response.ok) {
        if (options.text) return response.text();
        const body = await response.text();
        return body === "" ? null : JSON.parse(body);
      }
      const error = await errorOf(response);
      const retryable = attempt === 0 && error.code === "rate_limited" && error.retryAfterMs !== null && error.retryAfterMs <= MAX_RETRY_WAIT_MS;
      if (retryable) {
        await wait(/** @type {number} */ (error.retryAfterMs));
        continue;
      }
      if (error.status === 401) hooks.onUnauthorized?.(error);
      throw error;
    }
  }

  return {
    get: (path, query) => call("GET", path, { query }),
    text: (path, query) => call("GET", path, { query, text: true }),
    put: (path, body) => call("PUT", path, { body: body ?? {} }),
    post: (path, body) => call("POST", path, { body: body ?? {} }),
    del: (path) => call("DELETE", path, {}),
  };
}

/**
 * One path segment from what an operator typed (a tenant, key id, caller
 * key), so nothing typed can reach another path: percent-encoded except `:`
 * (as the API's examples write caller keys), `.` and `..` encoded so URL
 * parsing cannot resolve them, and a network suffix (`ip:2001:db8:1:2::/64`)
 * kept as the API's routes expect it.
 * @param {string} value
 */
export function seg(value) {
  const encode = (/** @type {string} */ part) => encodeURIComponent(part).replace(/%3A/gi, ":");
  if (value === "." || value === "..") return value.replaceAll(".", "%2E");
  const network = /^([a-z]+:[^/]+)\/(\d{1,3})$/.exec(value);
  return network === null ? encode(value) : `${encode(network[1] ?? "")}/${network[2]}`;
}

/**
 * Whether GET `path` finds something: false on 404, any other refusal thrown.
 * The create forms ask first, since PUT would replace what is there.
 * @param {Api} api
 * @param {string} path
 */
export async function exists(api, path) {
  try {
    await api.get(path);
    return true;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return false;
    throw error;
  }
}

/**
 * What this token may do, asked of the API itself: a DELETE of a block that
 * cannot exist (ids start at 1). The admin token gets 400 (or 404) and
 * nothing changes; the auditor token gets 403 `admin_forbidden` before the
 * route runs; a wrong token 401. No special endpoint, no side effect, and no
 * audit event (only writes that happen are audited).
 * @param {Api} api
 * @returns {Promise<"admin" | "auditor">}
 */
export async function probeRole(api) {
  try {
    await api.del("/blocks/0");
    return "admin";
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    if (error.status === 403 && error.code === "admin_forbidden") return "auditor";
    if (error.status === 400 || error.status === 404) return "admin";
    throw error;
  }
}
