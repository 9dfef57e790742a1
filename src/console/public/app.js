// @ts-check
// The console's entry: signs in (or resumes this tab's session), then routes
// `#/<view>/<param>?<query>` to one view module. Every navigation renders the
// view afresh from the API; a view that finishes after the operator has moved
// on is dropped. The token is never kept: signing in exchanges it for an
// HttpOnly session cookie (api.js), and nothing goes to web storage.
import { ApiError, createApi, endSession, sessionState } from "./api.js";
import { el, notice } from "./dom.js";
import { accuracyView } from "./views/accuracy.js";
import { auditView } from "./views/audit.js";
import { blocksView } from "./views/blocks.js";
import { explainView } from "./views/explain.js";
import { keysView } from "./views/keys.js";
import { orgsView, orgView } from "./views/orgs.js";
import { overridesView } from "./views/overrides.js";
import { showSignIn } from "./views/sign-in.js";
import { tenantView } from "./views/tenant.js";
import { tenantsView } from "./views/tenants.js";
import { trafficView } from "./views/traffic.js";
import { usageView } from "./views/usage.js";

/** @typedef {import("./view.js").View} View */

/** Route name → [view for the list, view for one item (`#/tenants/acme`)]. */
const ROUTES = /** @type {Record<string, [View, View | null]>} */ ({
  tenants: [tenantsView, tenantView],
  keys: [keysView, null],
  overrides: [overridesView, null],
  blocks: [blocksView, null],
  explain: [explainView, null],
  usage: [usageView, null],
  orgs: [orgsView, orgView],
  audit: [auditView, null],
  traffic: [trafficView, null],
  accuracy: [accuracyView, null],
});
const DEFAULT_ROUTE = "tenants";

const main = /** @type {HTMLElement} */ (document.getElementById("main"));
const nav = /** @type {HTMLElement} */ (document.getElementById("nav"));
const who = /** @type {HTMLElement} */ (document.getElementById("who"));

/**
 * A hash segment decoded, or as typed when it is not valid percent-encoding
 * (`#/tenants/%`): decodeURIComponent would throw before the router could
 * show anything, leaving the last page up with no word of why.
 * @param {string} part
 */
function decodeSegment(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/** `#/tenants/acme?cursor=x` → { name: "tenants", params: ["acme"], query } */
function parseHash() {
  const hash = location.hash.startsWith("#/") ? location.hash.slice(2) : "";
  const [path = "", queryText = ""] = hash.split("?", 2);
  const [name = "", ...params] = path.split("/").map(decodeSegment);
  return { name: name === "" ? DEFAULT_ROUTE : name, params, query: new URLSearchParams(queryText) };
}

/** @param {string} name */
function markNav(name) {
  for (const a of nav.querySelectorAll("a")) {
    if (a.getAttribute("href") === `#/${name}`) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

/**
 * @param {unknown} error
 */
function failurePage(error) {
  const message = error instanceof ApiError || error instanceof Error ? error.message : "Something went wrong.";
  return el("div", { class: "page" }, el("h1", { tabindex: -1 }, error instanceof ApiError && error.status === 404 ? "Not found" : "Could not load this page"), notice("alert", message));
}

/**
 * @param {"admin" | "auditor"} role
 * @param {boolean} focusFirstPage after signing in, the first page's heading takes the focus
 */
function startConsole(role, focusFirstPage) {
  // A session the API stops accepting (12 hours, or a rotated token): reload, and boot() tells the operator why.
  const api = createApi({ onUnauthorized: () => location.reload() });
  const canWrite = role === "admin";
  nav.hidden = false;
  who.replaceChildren(
    el("span", { class: canWrite ? "badge role" : "badge role read-only" }, canWrite ? "Admin" : "Auditor · read-only"),
    el("button", { type: "button", class: "link", onclick: () => void signOut() }, "Sign out"),
  );
  document.body.classList.toggle("read-only", !canWrite);

  /** @type {AbortController | null} */
  let current = null;
  /**
   * @param {boolean} moveFocus after a navigation, focus goes to the new page's heading
   * @param {string | null} flash
   */
  const render = async (moveFocus, flash) => {
    current?.abort();
    const controller = new AbortController();
    current = controller;
    const route = parseHash();
    const pair = Object.hasOwn(ROUTES, route.name) ? ROUTES[route.name] : undefined;
    markNav(route.name);
    /** @param {Node} node */
    const show = (node) => {
      if (controller.signal.aborted) return;
      main.replaceChildren(node);
      main.setAttribute("aria-busy", "false");
      if (moveFocus) /** @type {HTMLElement | null} */ (main.querySelector("h1"))?.focus();
    };
    const view = pair === undefined ? undefined : route.params.length > 0 ? pair[1] : pair[0];
    if (view === undefined || view === null) {
      show(failurePage(new Error(`There is no page #/${route.name}. Use the menu.`)));
      return;
    }
    main.setAttribute("aria-busy", "true");
    try {
      await view({ api, canWrite, params: route.params, query: route.query, show, go: (hash) => location.assign(hash), reload: (message) => void render(false, message ?? null), flash });
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 401)) show(failurePage(error));
    }
  };
  window.addEventListener("hashchange", () => void render(true, null));
  void render(focusFirstPage, null);
}

/**
 * Ends the session: the cookie is cleared and the page reloaded, so nothing
 * it showed (a minted secret, say) survives in memory.
 */
async function signOut() {
  try {
    await endSession();
  } finally {
    location.replace(location.pathname);
  }
}

/** @param {"admin" | "auditor"} role */
function signedIn(role) {
  startConsole(role, true);
}

async function boot() {
  document.getElementById("skip")?.addEventListener("click", (event) => {
    event.preventDefault();
    /** @type {HTMLElement | null} */ (main.querySelector("h1"))?.focus();
  });
  try {
    const state = await sessionState();
    if (state.signed_in && state.role !== undefined) {
      startConsole(state.role, false);
      return;
    }
    const message = state.ended ? "Your session has ended (a session lasts 12 hours, and a changed token ends it). Sign in again." : null;
    showSignIn({ main, message, onSignedIn: signedIn });
  } catch (error) {
    showSignIn({ main, message: error instanceof Error ? error.message : null, onSignedIn: signedIn });
  }
}

void boot();
