// The browser console: static files in ./public, uploaded with
// the Worker as Workers Static Assets (wrangler.toml [assets]) and reachable
// only through the ASSETS binding: `run_worker_first = true` sends every
// request to the Worker, so only the paths below ever serve a file, and the
// data plane is never bypassed. `npm start`, `wrangler deploy` and the
// workerd test pool all read the same [assets] section: no build step.
//
// Every answer carries a strict Content-Security-Policy. Trusted Types are
// required with no policy allowed, so the browser itself refuses any string
// assigned to innerHTML and the like: the console builds its DOM with
// textContent only, and a mistake would fail loudly instead of injecting.
import { Hono } from "hono";
import { problem } from "../errors";

export const CONSOLE_BASE = "/_tollgate/console";

/** The index document, and the asset path every other console path maps onto. */
const INDEX_ASSET = "/index.html";
/** Asset paths the console serves: lower-case kebab names under public/, nothing hidden. */
const ASSET_PATH = /^\/(?:[a-z0-9-]+\/)*[a-z0-9-]+\.(?:html|js|css|svg)$/;

export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  // Forms are handled by script; were one ever submitted, nothing (a token least of all) may end up in a URL.
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join("; ");

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONSOLE_CSP,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
  // Revalidated on every load (the ETag makes that a 304), so a deploy shows at once.
  "cache-control": "no-cache",
};

/** The ASSETS binding's answer with the console's headers; anything but a file is a 404 problem. */
async function serveAsset(assets: Fetcher, request: Request, assetPath: string): Promise<Response> {
  if (!ASSET_PATH.test(assetPath)) return notFound();
  const headers = new Headers();
  const etag = request.headers.get("if-none-match");
  if (etag !== null) headers.set("if-none-match", etag);
  const answer = await assets.fetch(new Request(new URL(assetPath, request.url), { method: request.method, headers }));
  if (answer.status !== 200 && answer.status !== 304) return notFound();
  const response = new Response(answer.body, answer);
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.headers.set(name, value);
  return response;
}

function notFound(): Response {
  const response = problem("not_found", { detail: "No such console file." });
  response.headers.set("content-security-policy", CONSOLE_CSP);
  return response;
}

/**
 * The console's routes, mounted at CONSOLE_BASE by src/app.ts: the page at
 * `/_tollgate/console` (and `/_tollgate/console/`), its files below it. GET
 * and HEAD only.
 * @example control.route(CONSOLE_BASE, createConsoleApp())
 */
export function createConsoleApp(): Hono<{ Bindings: { ASSETS: Fetcher } }> {
  const app = new Hono<{ Bindings: { ASSETS: Fetcher } }>();
  app.get("*", (c) => {
    const rest = c.req.path.slice(CONSOLE_BASE.length);
    return serveAsset(c.env.ASSETS, c.req.raw, rest === "" || rest === "/" ? INDEX_ASSET : rest);
  });
  app.all("*", () => notFound());
  return app;
}
