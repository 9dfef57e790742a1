// The environment a local wrangler (npm start, npm run dev) runs in.
//
// Unless told otherwise, wrangler dev fetches https://workers.cloudflare.com/cf.json
// at start to fill in `request.cf`; offline (or behind a firewall) that fails
// with a stack trace, printed twice, that says nothing about the gateway.
// Locally the real object adds nothing Tollgate needs (blocked_countries reads
// `request.cf.country`, which the stand-in gives as "US" every time, so a
// local run behaves the same everywhere): the fetch is turned off, and the
// start says so in one line. CLOUDFLARE_CF_FETCH_ENABLED (miniflare's own
// switch) set by the developer wins.

export const CF_FETCH_VAR = "CLOUDFLARE_CF_FETCH_ENABLED";

/**
 * @param {NodeJS.ProcessEnv} env the environment to start from
 * @returns {{ env: NodeJS.ProcessEnv, note: string | null }} the environment for wrangler, and a line to print
 */
export function localWranglerEnv(env) {
  if (env[CF_FETCH_VAR] !== undefined) return { env: { ...env }, note: null };
  return {
    env: { ...env, [CF_FETCH_VAR]: "false" },
    note: `request.cf is wrangler's stand-in (country "US"), not fetched from workers.cloudflare.com (${CF_FETCH_VAR}=true fetches it)`,
  };
}
