// @ts-check
// The one way the console talks to the admin API: same origin, JSON in and
// out. The token is sent once, to sign in (POST /session), and what comes
// back is an HttpOnly session cookie no script can read; every other call
// carries that cookie and `X-Tollgate-Console: 1`, without which the API
// ignores the cookie. A refusal arrives as problem+json (RFC 9457) and leaves
// here as an ApiError whose `message` is the API's own `detail`, and whose
// `field` names the invalid field of a 400, so a form can show the message
// next to it.

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
 * @property {(path: string, body?: unknown, headers?: Record<string, string>) => Promise<any>} post
 * @property {(path: string) => Promise<any>} del
 */

/** Sent with every console call: the API accepts the session cookie only beside it. */
const CONSOLE_HEADERS = { "x-tollgate-console": "1", accept: "application/json" };

/**
 * A client of the admin API for this browser's console session.
 * `onUnauthorized` runs when the API stops accepting the session (12 hours
 * passed, or the token changed) so the console can sign out.
 * @param {{ onUnauthorized?: (error: ApiError) => void }} [hooks]
 * @returns {Api}
 */
export function createApi(hooks = {}) {
  /**
   * @param {string} method
   * @param {string} path
   * @param {{ query?: Record<string, string | undefined>, body?: unknown, text?: boolean, headers?: Record<string, string> }} options
   */
  async function call(method, path, options) {
    const url = new URL(ADMIN_BASE + path, location.origin);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined && value !== "") url.searchParams.set(name, value);
    }
    /** @type {Record<string, string>} */
    const headers = { ...options.headers, ...CONSOLE_HEADERS };
    if (options.body !== undefined) headers["content-type"] = "application/json";
    const init = { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body), cache: /** @type {RequestCache} */ ("no-store"), credentials: /** @type {RequestCredentials} */ ("same-origin") };

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
    post: (path, body, headers) => call("POST", path, { body: body ?? {}, headers }),
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
 * @typedef {{ signed_in: boolean, role?: "admin" | "auditor", ended?: boolean, expires_at?: string }} SessionState
 */

/**
 * @param {string} method
 * @param {Record<string, string>} [extra]
 * @returns {Promise<SessionState>}
 */
async function sessionCall(method, extra = {}) {
  let response;
  try {
    response = await fetch(new URL(`${ADMIN_BASE}/session`, location.origin), { method, headers: { ...CONSOLE_HEADERS, ...extra }, cache: "no-store", credentials: "same-origin" });
  } catch {
    throw new ApiError(0, { code: "network", detail: "The gateway could not be reached. Check the connection and try again." });
  }
  if (!response.ok) throw await errorOf(response);
  return /** @type {SessionState} */ (await response.json());
}

/**
 * Whether this browser holds a live console session, and as which role.
 * Always a 200: a console that loads signed out makes no refused request.
 */
export function sessionState() {
  return sessionCall("GET");
}

/**
 * Exchanges the admin or auditor token for the session cookie and answers
 * the role. The token goes in this one request's header and is kept nowhere.
 * @param {string} token
 */
export function startSession(token) {
  return sessionCall("POST", { authorization: `Bearer ${token}` });
}

/** Clears the session cookie. */
export function endSession() {
  return sessionCall("DELETE");
}
