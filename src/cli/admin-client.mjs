// @ts-check
// The CLI's only way out: HTTP calls to the admin API. A refusal
// (problem+json) becomes a CliError carrying its `code` and `detail` on one
// line; so does a network failure. Nothing here prints.
import { oneLine, refusedError, usageError } from "./cli-error.mjs";

export const ADMIN_PREFIX = "/_tollgate/admin/v1";
/** One call's budget, connection to last byte; an export of 250,000 rows fits. */
const REQUEST_TIMEOUT_MS = 60_000;
/** Pages followed by one listing before it gives up (a cursor that never ends). */
const MAX_PAGES = 10_000;

/**
 * @typedef {object} AdminResponse
 * @property {number} status
 * @property {Headers} headers
 * @property {string} text the body as received
 */

/**
 * @typedef {object} CallOptions
 * @property {Record<string, string | undefined>} [query] entries left undefined are not sent
 * @property {unknown} [body] sent as JSON
 * @property {Record<string, string>} [headers] sent as well (e.g. Idempotency-Key)
 */

/** Hosts a plain-http URL may name: this machine only (`npm start`, `wrangler dev`). */
function isLoopback(/** @type {string} */ hostname) {
  return hostname === "localhost" || hostname.endsWith(".localhost") || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/**
 * The admin API's base: the gateway URL given (`https://gw.example.com`) plus
 * /_tollgate/admin/v1, unless it already ends with that. Plain `http://` is
 * refused for any host but this machine (the admin token would cross the
 * network in clear) unless `insecureHttp` says the operator means it.
 * @param {string | undefined} url
 * @param {{ insecureHttp?: boolean }} [options]
 */
export function adminBaseUrl(url, options = {}) {
  if (url === undefined || url.trim() === "") throw usageError("no gateway URL: set TOLLGATE_URL or pass --url");
  let parsed;
  try {
    parsed = new URL(url.trim());
  } catch {
    throw usageError(`--url: not a URL: ${url}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw usageError(`--url: must be http:// or https://, not ${parsed.protocol}`);
  if (parsed.protocol === "http:" && !isLoopback(parsed.hostname) && options.insecureHttp !== true) {
    throw usageError(`--url: refusing http:// to ${parsed.hostname}: the admin token would cross the network unencrypted. Use https://, or pass --insecure-http if you mean it`);
  }
  if (parsed.search !== "" || parsed.hash !== "") throw usageError("--url: must not have a query or fragment");
  const path = parsed.pathname.replace(/\/+$/, "");
  parsed.pathname = path.endsWith(ADMIN_PREFIX) ? path : `${path}${ADMIN_PREFIX}`;
  return parsed.toString();
}

/**
 * The API's advice in a refusal names API calls (it is written for every
 * client); the operator at a terminal typed commands, so these are named
 * as the commands that do the same.
 */
const CLI_WORDING = /** @type {const} */ ([
  [/create it with PUT \/orgs\/([a-z0-9._-]+)/g, "create it with 'tollgate orgs put $1'"],
  [/\(PUT \/tenants\/\{tenant\}\/limits with "org": null\)/g, "('tollgate tenants set <tenant> --no-org')"],
  [/PUT \/tenants\/\{tenant\}\/limits/g, "'tollgate tenants set <tenant>'"],
  [/DELETE \/callers\/([^\s/]+)\/state/g, "'tollgate reset $1'"],
  [/GET \/callers\/([^\s/]+)/g, "'tollgate explain $1'"],
]);

/** A refusal's detail in the CLI's words (see CLI_WORDING). */
export function inCliWords(/** @type {string} */ detail) {
  let text = detail;
  for (const [pattern, replacement] of CLI_WORDING) text = text.replace(pattern, replacement);
  return text;
}

/**
 * `code (status): detail` from a problem+json body, or a plain description
 * of a non-problem answer. Never the whole body: it could be a page of HTML.
 * @param {number} status
 * @param {string} text
 * @param {string} [origin] the gateway's origin, to say that it does not look like a Tollgate
 */
export function describeRefusal(status, text, origin) {
  try {
    const problem = /** @type {unknown} */ (JSON.parse(text));
    if (typeof problem === "object" && problem !== null && "code" in problem && typeof problem.code === "string") {
      const detail = "detail" in problem && typeof problem.detail === "string" ? inCliWords(problem.detail) : "";
      return oneLine(`${problem.code} (${status})${detail === "" ? "" : `: ${detail}`}`);
    }
  } catch {
    // not JSON: described below
  }
  return `${origin ?? "the gateway"} answered HTTP ${status} without a problem+json body: it does not look like a Tollgate admin API (check TOLLGATE_URL or --url)`;
}

/** The refusal for an answer of the wrong shape: most likely the URL is not a Tollgate at all. */
export function notTollgate(/** @type {string} */ origin, /** @type {string} */ what) {
  return refusedError(`${origin} is not answering as a Tollgate admin API does (${what}): check TOLLGATE_URL or --url`);
}

/** @param {unknown} error */
function networkReason(error) {
  if (error instanceof Error && error.name === "TimeoutError") return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  const cause = error instanceof Error ? error.cause : undefined;
  if (typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string") return cause.code;
  if (cause instanceof Error) return cause.message;
  return error instanceof Error ? error.message : String(error);
}

export class AdminClient {
  /**
   * @param {{ url: string | undefined, token: string | undefined, insecureHttp?: boolean }} target
   */
  constructor(target) {
    this.baseUrl = adminBaseUrl(target.url, { insecureHttp: target.insecureHttp });
    const token = target.token?.trim();
    if (token === undefined || token === "") throw usageError("no admin token: set TOLLGATE_ADMIN_TOKEN or pass --token");
    this.token = token;
  }

  /**
   * One call; any answer that is not 2xx is thrown as a refusal (exit 1).
   * @param {string} method
   * @param {string} path below the admin prefix, each variable segment already encoded
   * @param {CallOptions} [options]
   * @returns {Promise<AdminResponse>}
   */
  async call(method, path, options = {}) {
    const url = new URL(`${this.baseUrl}${path}`);
    for (const [name, value] of Object.entries(options.query ?? {})) if (value !== undefined) url.searchParams.set(name, value);
    /** @type {Record<string, string>} */
    const headers = { authorization: `Bearer ${this.token}`, accept: "application/json" };
    if (options.body !== undefined) headers["content-type"] = "application/json";
    Object.assign(headers, options.headers);
    let res;
    let text;
    try {
      res = await fetch(url, {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      text = await res.text();
    } catch (error) {
      throw refusedError(`could not reach ${url.origin}: ${oneLine(networkReason(error))}`);
    }
    if (!res.ok) throw refusedError(describeRefusal(res.status, text, url.origin));
    return { status: res.status, headers: res.headers, text };
  }

  /**
   * A call whose answer is a JSON object.
   * @param {string} method
   * @param {string} path
   * @param {CallOptions} [options]
   * @returns {Promise<{ status: number, headers: Headers, body: Record<string, unknown> }>}
   */
  async json(method, path, options = {}) {
    const res = await this.call(method, path, options);
    // A 204 (or an empty 200) is success with nothing to show.
    if (res.text.trim() === "") return { status: res.status, headers: res.headers, body: {} };
    let body;
    try {
      body = /** @type {unknown} */ (JSON.parse(res.text));
    } catch {
      throw notTollgate(new URL(this.baseUrl).origin, "its answer is not JSON");
    }
    if (typeof body !== "object" || body === null || Array.isArray(body)) throw notTollgate(new URL(this.baseUrl).origin, "its answer is not a JSON object");
    return { status: res.status, headers: res.headers, body: /** @type {Record<string, unknown>} */ (body) };
  }

  /**
   * Every page of a paged call (`{..., next_cursor}`), first to last, each
   * asked with the previous page's `next_cursor` as `cursor` until it is
   * null or absent. A cursor that repeats, or more than MAX_PAGES pages, is
   * refused rather than followed for ever.
   * @param {string} method
   * @param {string} path
   * @param {Record<string, string | undefined>} [query] sent with every page
   * @returns {AsyncGenerator<Record<string, unknown>, void, undefined>}
   */
  async *pages(method, path, query = {}) {
    /** @type {string | undefined} */
    let cursor;
    const seen = new Set();
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const { body } = await this.json(method, path, { query: { ...query, cursor } });
      yield body;
      const next = body.next_cursor;
      if (next === null || next === undefined || next === "") return;
      if (typeof next !== "string" || seen.has(next)) throw refusedError(`${method} ${path}: the gateway sent a bad next_cursor`);
      seen.add(next);
      cursor = next;
    }
    throw refusedError(`${method} ${path}: more than ${MAX_PAGES} pages`);
  }

  /**
   * Every item of a paged listing (`{<field>: [...], next_cursor}`), all pages.
   * @param {string} path
   * @param {string} field
   * @returns {Promise<unknown[]>}
   */
  async listAll(path, field) {
    /** @type {unknown[]} */
    const items = [];
    for await (const body of this.pages("GET", path)) {
      const list = body[field];
      if (!Array.isArray(list)) throw notTollgate(new URL(this.baseUrl).origin, `its answer has no "${field}" list`);
      items.push(...list);
    }
    return items;
  }
}

/**
 * One path segment from an argument (a tenant, id, caller key), so that no
 * argument can reach another path: everything is percent-encoded except `:`,
 * and `.`/`..` (which URL parsing would resolve) are refused. A caller key's
 * network suffix (`ip:2001:db8:1:2::/64`) keeps its slash, as the API's own
 * examples write it.
 * @param {string} value
 * @param {string} name what the argument is, for the error
 */
export function segment(value, name) {
  if (value === "" || value === "." || value === "..") throw usageError(`${name}: not a valid value: '${value}'`);
  const network = /^([a-z]+:[^/]+)\/(\d{1,3})$/.exec(value);
  const encode = (/** @type {string} */ part) => encodeURIComponent(part).replace(/%3A/gi, ":");
  return network === null ? encode(value) : `${encode(network[1] ?? "")}/${network[2]}`;
}
