// The one parser of `Authorization: Bearer <token>` (STYLE 17), for the
// gateway's credentials and the admin API's tokens alike.

/**
 * The token of a Bearer Authorization value, trimmed; "" for `Bearer` with
 * nothing after it (present but malformed); null when the header is absent or
 * uses another scheme (Basic auth meant for the origin is not ours).
 */
export function bearerToken(authorization: string | null | undefined): string | null {
  if (authorization === null || authorization === undefined) return null;
  let i = 0;
  const n = authorization.length;
  while (i < n && isSpace(authorization.charCodeAt(i))) i++;
  if (n - i < 6 || authorization.slice(i, i + 6).toLowerCase() !== "bearer") return null;
  i += 6;
  if (i < n && !isSpace(authorization.charCodeAt(i))) return null;
  return authorization.slice(i).trim();
}

function isSpace(code: number): boolean {
  return code === 32 || code === 9;
}
