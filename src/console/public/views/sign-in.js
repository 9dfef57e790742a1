// @ts-check
// Signing in: the admin or auditor token, exchanged for the session cookie
// (POST /session answers the role). A refused token is told so, and nothing
// more: the message never says whether a token of that shape exists, nor
// echoes it. The token is dropped from the field once sent.
import { ApiError, startSession } from "../api.js";
import { el, notice } from "../dom.js";
import { field, onSubmit } from "../forms.js";

/**
 * @param {unknown} error
 * @returns {Error}
 */
function signInError(error) {
  if (error instanceof ApiError && error.status === 401) return new Error("That token was not accepted. Check it and try again.");
  if (error instanceof Error) return error;
  return new Error("Signing in failed.");
}

/**
 * @param {{ main: HTMLElement, message: string | null, onSignedIn: (role: "admin" | "auditor") => void }} options
 */
export function showSignIn(options) {
  document.title = "Sign in · Tollgate console";
  const token = el("input", { type: "password", name: "token", autocomplete: "off", spellcheck: "false", required: true });
  const form = el(
    "form",
    { class: "card sign-in", novalidate: true },
    field("Admin or auditor token", token, { hint: "The ADMIN_TOKEN or AUDITOR_TOKEN secret (for npm start: ADMIN_TOKEN or AUDITOR_TOKEN in .tollgate.env). Exchanged for a session cookie that lasts 12 hours; the token itself is not kept." }),
    el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, "Sign in")),
    el("div", { class: "form-alert", role: "alert" }),
  );
  onSubmit(form, async () => {
    const value = token.value.trim();
    if (value === "") throw new Error("Enter a token.");
    let state;
    try {
      state = await startSession(value);
    } catch (error) {
      token.focus();
      throw signInError(error);
    } finally {
      token.value = "";
    }
    if (state.role === undefined) throw new Error("Signing in failed.");
    options.onSignedIn(state.role);
  });
  options.main.replaceChildren(
    el(
      "div",
      { class: "page narrow" },
      el("h1", { tabindex: -1 }, "Sign in"),
      options.message === null ? null : notice("status", options.message),
      el("p", {}, "The console uses the gateway's admin API with the token you give. The auditor token can see everything and change nothing."),
      form,
    ),
  );
  token.focus();
}
