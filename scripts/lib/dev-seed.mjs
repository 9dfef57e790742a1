// Tenant `dev` and its key, for `npm start`: made once, then left alone.
// The tenant is created only when the gateway has none (an operator's later
// edits to it stand, and no `tenant_replaced` is audited on every start);
// the key kept in .tollgate.env is used again while the gateway still holds
// it unrevoked and unexpired, and a new one is minted only when it does not
// (a fresh local database, a revoked key).

export const DEV_TENANT = "dev";
/** What a new `dev` tenant gets: room to try things, limits low enough to see them. */
export const DEV_TENANT_BODY = {
  limits: { request: { key: [{ count: 100, window_s: 1, burst: 200 }] } },
  quota: { bytes: { soft: 800_000, hard: 1_000_000 }, objects: { hard: 1000 } },
};

/**
 * Calls the admin API; answers `{status, body}` (body parsed when JSON).
 * @typedef {(method: string, path: string, body?: unknown) => Promise<{ status: number, body: any }>} AdminCall
 */

/**
 * @param {string} gatewayUrl
 * @param {string} token
 * @returns {AdminCall}
 */
export function adminCaller(gatewayUrl, token) {
  return async (method, path, body) => {
    const res = await fetch(`${gatewayUrl}/_tollgate/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: kept as text for the error message
    }
    return { status: res.status, body: parsed };
  };
}

/** `tg_<id>_<secret>` → `<id>`, or null for anything else. */
export function keyIdOf(key) {
  return /^tg_([a-z0-9]+)_[a-z0-9]+$/.exec(key ?? "")?.[1] ?? null;
}

function refused(what, answer) {
  const detail = typeof answer.body === "object" && answer.body !== null ? (answer.body.detail ?? answer.body.code) : String(answer.body).slice(0, 200);
  return new Error(`${what} answered ${answer.status}: ${detail}`);
}

/**
 * Makes sure tenant `dev` exists and `savedKey` (from .tollgate.env) still
 * works, minting a key only when it does not.
 * @param {AdminCall} admin
 * @param {string | undefined} savedKey
 * @param {() => number} nowMs
 * @returns {Promise<{ key: string, tenantCreated: boolean, keyMinted: boolean }>}
 */
export async function ensureDevTenantAndKey(admin, savedKey, nowMs = Date.now) {
  const tenant = await admin("GET", `/tenants/${DEV_TENANT}`);
  let tenantCreated = false;
  if (tenant.status === 404) {
    const put = await admin("PUT", `/tenants/${DEV_TENANT}`, DEV_TENANT_BODY);
    if (put.status !== 201 && put.status !== 200) throw refused(`PUT /tenants/${DEV_TENANT}`, put);
    tenantCreated = true;
  } else if (tenant.status !== 200) {
    throw refused(`GET /tenants/${DEV_TENANT}`, tenant);
  }

  const savedId = keyIdOf(savedKey);
  if (savedId !== null && !tenantCreated) {
    const keys = await admin("GET", `/tenants/${DEV_TENANT}/keys`);
    if (keys.status !== 200) throw refused(`GET /tenants/${DEV_TENANT}/keys`, keys);
    const live = keys.body.keys.some((k) => k.id === savedId && k.revoked_at === null && (k.expires_at === null || Date.parse(k.expires_at) > nowMs()));
    if (live) return { key: /** @type {string} */ (savedKey), tenantCreated, keyMinted: false };
  }
  const minted = await admin("POST", `/tenants/${DEV_TENANT}/keys`, { name: "npm start" });
  if (minted.status !== 201) throw refused(`POST /tenants/${DEV_TENANT}/keys`, minted);
  return { key: minted.body.key, tenantCreated, keyMinted: true };
}
