// Every answer the gateway makes itself is application/problem+json (RFC 9457)
// with a stable `code` and a `hint`. This file is the only writer of that body:
// a union of codes, a total map from code to status and title, one function.
// Internal detail (stack traces, SQL, secrets) never goes in here; callers log
// it separately, without secrets.

export type ProblemCode =
  | "invalid_request"
  | "invalid_path"
  | "ambiguous_credential"
  | "credential_required"
  | "invalid_credential"
  | "credential_revoked"
  | "credential_expired"
  | "admin_unauthorized"
  | "quota_exceeded"
  | "admin_forbidden"
  | "blocked"
  | "tenant_unknown"
  | "not_found"
  | "conflict"
  | "length_required"
  | "request_too_large"
  | "rate_limited"
  | "too_many_in_flight"
  | "too_many_streams"
  | "auth_failures"
  | "config_invalid"
  | "internal_error"
  | "origin_unreachable"
  | "quota_unavailable"
  | "auth_unavailable"
  | "admin_disabled"
  | "admin_unavailable"
  | "limits_unavailable"
  | "budget_exhausted"
  | "credits_exhausted"
  | "budget_unavailable"
  | "policy_unavailable";

interface ProblemInfo {
  readonly status: number;
  readonly title: string;
  /** What the client can do about it; sent as `hint` unless the caller gives a better one. */
  readonly hint: string;
}

export const PROBLEMS: Readonly<Record<ProblemCode, ProblemInfo>> = {
  invalid_request: { status: 400, title: "Bad Request", hint: "Fix the field named in `field` and send the request again." },
  invalid_path: { status: 400, title: "Bad Request", hint: "Send the path without encoded separators (%2F, %5C), NUL (%00), or `.` and `..` segments." },
  ambiguous_credential: { status: 400, title: "Bad Request", hint: "Send one credential: `Authorization: Bearer <key>` or `X-Api-Key`, not two different ones." },
  credential_required: { status: 401, title: "Unauthorized", hint: "Send an API key in `Authorization: Bearer <key>` or `X-Api-Key`." },
  invalid_credential: { status: 401, title: "Unauthorized", hint: "Check the credential: an API key this gateway issued, or a valid token from an identity provider it trusts." },
  credential_revoked: { status: 401, title: "Unauthorized", hint: "This API key was revoked; ask the operator for a new one." },
  credential_expired: { status: 401, title: "Unauthorized", hint: "This credential has expired: get a new token, or ask the operator for a new API key." },
  admin_unauthorized: { status: 401, title: "Unauthorized", hint: "Send the admin token in `Authorization: Bearer <token>`." },
  quota_exceeded: { status: 403, title: "Forbidden", hint: "Delete stored objects or ask the operator to raise the quota; waiting does not help." },
  admin_forbidden: { status: 403, title: "Forbidden", hint: "The auditor token may only read; use the admin token to write." },
  blocked: { status: 403, title: "Forbidden", hint: "The operator has blocked this caller, network or tenant; contact them if you think this is wrong." },
  tenant_unknown: { status: 403, title: "Forbidden", hint: "The token names a tenant this gateway does not know; ask the operator to create it." },
  not_found: { status: 404, title: "Not Found", hint: "Check the identifier in the path." },
  conflict: { status: 409, title: "Conflict", hint: "Something still depends on this resource; remove what `detail` names first, then retry." },
  length_required: { status: 411, title: "Length Required", hint: "Send a `Content-Length` header with the body's size in bytes." },
  request_too_large: { status: 413, title: "Content Too Large", hint: "Send a smaller body; `limit` is the largest accepted size in bytes." },
  rate_limited: { status: 429, title: "Too Many Requests", hint: "Wait `retry_after_ms` milliseconds (see `Retry-After`) before sending again." },
  too_many_in_flight: { status: 429, title: "Too Many Requests", hint: "Too many of your requests are in progress at once; wait for some to finish." },
  too_many_streams: { status: 429, title: "Too Many Requests", hint: "Too many of your streams are open at once; close one before opening another." },
  auth_failures: { status: 429, title: "Too Many Requests", hint: "Too many failed authentications from this address; wait before trying again." },
  config_invalid: { status: 500, title: "Internal Server Error", hint: "The gateway's TOLLGATE configuration is invalid; the operator must fix the field named in `field`." },
  internal_error: { status: 500, title: "Internal Server Error", hint: "The gateway failed unexpectedly; try again later." },
  origin_unreachable: { status: 502, title: "Bad Gateway", hint: "The origin could not be reached; try again later." },
  quota_unavailable: { status: 503, title: "Service Unavailable", hint: "The quota service is unavailable; retry after `Retry-After` seconds." },
  auth_unavailable: { status: 503, title: "Service Unavailable", hint: "The credential could not be verified right now; retry shortly." },
  admin_disabled: { status: 503, title: "Service Unavailable", hint: "Set an ADMIN_TOKEN secret of at least 32 characters to enable the admin API." },
  admin_unavailable: { status: 503, title: "Service Unavailable", hint: "The admin store (D1) is unavailable and nothing was changed; retry after `Retry-After` seconds." },
  policy_unavailable: { status: 503, title: "Service Unavailable", hint: "The gateway could not load its caller policy (blocks and overrides) yet; retry after `Retry-After` seconds." },
  limits_unavailable: { status: 503, title: "Service Unavailable", hint: "A global rate limit could not be checked right now; retry after `Retry-After` seconds." },
  budget_exhausted: { status: 429, title: "Too Many Requests", hint: "The budget named in `budget` is spent for this period; it resets at `budget.resets_at` (see `Retry-After`), or ask the operator to raise it." },
  credits_exhausted: { status: 402, title: "Payment Required", hint: "The prepaid credits named in `budget` are spent; waiting does not help: ask the operator for a top-up." },
  budget_unavailable: { status: 503, title: "Service Unavailable", hint: "The budget could not be checked right now and nothing was spent; retry after `Retry-After` seconds." },
};

export const PROBLEM_TYPE_BASE = "https://tollgate.dev/problems/";
export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** Extension members a problem may carry besides the standard ones. */
export type ProblemExtras = Readonly<Record<string, string | number | boolean | null | undefined | readonly string[] | Readonly<Record<string, unknown>>>>;

export interface ProblemOptions {
  /** Human-readable, specific to this occurrence. Never internal detail. */
  detail: string;
  hint?: string;
  extras?: ProblemExtras;
  headers?: HeadersInit;
}

/** The body of a problem, for tests and for callers that need the object. */
export function problemBody(code: ProblemCode, options: ProblemOptions): Record<string, unknown> {
  const info = PROBLEMS[code];
  const body: Record<string, unknown> = {
    type: PROBLEM_TYPE_BASE + code,
    title: info.title,
    status: info.status,
    detail: options.detail,
    code,
    hint: options.hint ?? info.hint,
  };
  if (options.extras) {
    for (const [name, value] of Object.entries(options.extras)) {
      // The standard members are this writer's; extras never overwrite them.
      if (value !== undefined && !(name in body)) body[name] = value;
    }
  }
  return body;
}

/**
 * The one writer of problem+json responses. Its headers go to the Response
 * as one plain object: measured in workerd, that costs about a fifth less
 * than appending each to a Headers, and `new Headers(list of pairs)` several
 * times as much (each pair crosses into the runtime as an array of its own);
 * refusals are what a flood costs the gateway. A name given twice is joined
 * with ", ", which is what appending it twice would read as.
 */
export function problem(code: ProblemCode, options: ProblemOptions): Response {
  const headers: Record<string, string> = {};
  const extra = options.headers;
  if (extra !== undefined) {
    const add = (name: string, value: string): void => {
      const key = name.toLowerCase();
      const had = headers[key];
      headers[key] = had === undefined ? value : `${had}, ${value}`;
    };
    if (extra instanceof Headers) extra.forEach((value, name) => add(name, value));
    else if (Array.isArray(extra)) for (const [name, value] of extra) add(name, value);
    else for (const name in extra) add(name, (extra as Record<string, string>)[name]!);
  }
  headers["content-type"] = PROBLEM_CONTENT_TYPE;
  headers["cache-control"] = "no-store";
  return new Response(JSON.stringify(problemBody(code, options)), { status: PROBLEMS[code].status, headers });
}

/**
 * A writer of one code's problems whose detail and extra members change per
 * answer (a 429's `retry_after_ms`): the members that never change are
 * serialised once, when the writer is made; an answer joins them with its
 * detail and `extrasJson` (its extra members as JSON text, each `,"name":value`,
 * in the order problem() would write them) and gives the Response `headers`
 * (lower-case names; the problem's own are added) as they are. The text is
 * problem()'s, for a fraction of its cost: no object built and walked, one
 * string joined (a test compares the two). Refusals are what a flood costs.
 * @example const write = problemWriter("rate_limited"); return write(detail, `,"retry_after_ms":${ms}`, { "retry-after": "1" });
 */
export function problemWriter(code: ProblemCode): (detail: string, extrasJson: string, headers: Record<string, string>) => Response {
  const info = PROBLEMS[code];
  const status = info.status;
  const head = `{"type":${JSON.stringify(PROBLEM_TYPE_BASE + code)},"title":${JSON.stringify(info.title)},"status":${status},"detail":`;
  const middle = `,"code":${JSON.stringify(code)},"hint":${JSON.stringify(info.hint)}`;
  return function writeProblem(detail, extrasJson, headers) {
    headers["content-type"] = PROBLEM_CONTENT_TYPE;
    headers["cache-control"] = "no-store";
    return new Response(`${head}${JSON.stringify(detail)}${middle}${extrasJson}}`, { status, headers });
  };
}

/**
 * A problem whose body and headers never change (a refusal's fixed answer),
 * serialised once when it is compiled: each call answers a fresh Response
 * (a body is read once, and the gateway sets its own headers on the answer)
 * from the same text and the same plain object of headers, which the
 * Response copies natively; nothing is built per call in JavaScript.
 * Compile it where the step is built, not per request.
 * @example const blocked = fixedProblem("blocked", { detail: "Requests from this caller are blocked." }); return blocked();
 */
export function fixedProblem(code: ProblemCode, options: ProblemOptions & { headers?: Readonly<Record<string, string>> }): () => Response {
  const body = JSON.stringify(problemBody(code, options));
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.headers ?? {})) headers[name.toLowerCase()] = value;
  headers["content-type"] = PROBLEM_CONTENT_TYPE;
  headers["cache-control"] = "no-store";
  const init: ResponseInit = { status: PROBLEMS[code].status, headers: Object.freeze(headers) };
  return function fixedProblemResponse() {
    return new Response(body, init);
  };
}
