// @ts-check
// Forms: labelled fields, the API's validation message shown next to the
// field it names (`field` of a 400 problem, a dotted path matched against
// each control's `data-field`), a form-level alert for everything else, and
// the write controls an auditor sees disabled.
import { ApiError } from "./api.js";
import { confirmAction } from "./confirm.js";
import { el, notice, uid } from "./dom.js";

/** @typedef {HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement} Control */

const READ_ONLY_TITLE = "Read-only: signed in with the auditor token";

/**
 * A labelled control in a `.field` box; `field` is the API's name for it.
 * @param {string} label
 * @param {Control} control
 * @param {{ field?: string, hint?: string }} [options]
 */
export function field(label, control, options = {}) {
  control.id = control.id || uid();
  if (options.field !== undefined) control.dataset.field = options.field;
  let hint = null;
  if (options.hint !== undefined) {
    hint = el("p", { class: "hint", id: uid() }, options.hint);
    control.setAttribute("aria-describedby", hint.id);
  }
  return el("div", { class: "field" }, el("label", { for: control.id }, label), control, hint);
}

/**
 * A form whose controls sit in one fieldset, disabled for the auditor.
 * @param {{ legend: string, canWrite: boolean, submit: string, className?: string }} options
 * @param {...(Node | null)} children
 */
export function writeForm(options, ...children) {
  const fieldset = el(
    "fieldset",
    { "data-write": true, disabled: !options.canWrite, title: options.canWrite ? undefined : READ_ONLY_TITLE },
    el("legend", {}, options.legend),
    ...children,
    el("div", { class: "actions" }, el("button", { type: "submit", class: "primary" }, options.submit)),
  );
  return el("form", { class: options.className ?? "card", novalidate: true }, fieldset, el("div", { class: "form-alert", role: "alert" }), el("p", { class: "form-status", role: "status" }));
}

/**
 * A button that changes something: disabled, and saying why, for the auditor.
 * @param {{ label: string, canWrite: boolean, onClick: () => Promise<void>, danger?: boolean, name?: string }} options
 */
function writeButton(options) {
  return el(
    "button",
    {
      type: "button",
      class: options.danger ? "danger" : "",
      "data-write": true,
      disabled: !options.canWrite,
      title: options.canWrite ? undefined : READ_ONLY_TITLE,
      "aria-label": options.name,
      onclick: () => void options.onClick(),
    },
    options.label,
  );
}

/**
 * A write button that asks first (confirm.js), then runs `action`. A failure
 * shows as an alert right after the button, replacing the one before it, so
 * clicking again never stacks copies of the same message.
 * @param {{ label: string, canWrite: boolean, confirm: { title: string, message: string | ReadonlyArray<string>, confirm: string }, action: () => Promise<void>, failure: string, danger?: boolean, name?: string }} options
 */
export function confirmedButton(options) {
  /** @type {HTMLElement | null} */
  let alert = null;
  const button = writeButton({
    label: options.label,
    canWrite: options.canWrite,
    danger: options.danger,
    name: options.name,
    onClick: async () => {
      if (!(await confirmAction(options.confirm))) return;
      alert?.remove();
      alert = null;
      try {
        await options.action();
      } catch (error) {
        alert = notice("alert", error instanceof Error ? error.message : options.failure);
        button.after(alert);
      }
    },
  });
  return button;
}

/** @param {HTMLFormElement} form */
function clearErrors(form) {
  for (const node of form.querySelectorAll(".field-error")) node.remove();
  for (const control of form.querySelectorAll("[aria-invalid]")) {
    control.removeAttribute("aria-invalid");
    const kept = (control.getAttribute("aria-describedby") ?? "").split(" ").filter((id) => id !== "" && !id.startsWith("err-"));
    if (kept.length === 0) control.removeAttribute("aria-describedby");
    else control.setAttribute("aria-describedby", kept.join(" "));
  }
  const alert = form.querySelector(".form-alert");
  if (alert !== null) alert.replaceChildren();
  const status = form.querySelector(".form-status");
  if (status !== null) status.replaceChildren();
}

/**
 * The control an API `field` is about: the exact one, else the nearest
 * enclosing one (`limits.request.key.0` for `limits.request.key.0.count`),
 * else the first inside it (`limits.Bad` names a whole category).
 * @param {HTMLFormElement} form
 * @param {string} name
 * @returns {HTMLElement | null}
 */
function controlFor(form, name) {
  /** @type {HTMLElement[]} */
  const controls = [...form.querySelectorAll("[data-field]")].filter((c) => c instanceof HTMLElement);
  const exact = controls.find((c) => c.dataset.field === name);
  if (exact !== undefined) return exact;
  let best = null;
  for (const c of controls) {
    const f = c.dataset.field ?? "";
    if (name.startsWith(`${f}.`) && (best === null || f.length > (best.dataset.field ?? "").length)) best = c;
  }
  return best ?? controls.find((c) => (c.dataset.field ?? "").startsWith(`${name}.`)) ?? null;
}

/**
 * @param {HTMLElement} control
 * @param {string} message
 */
function showFieldError(control, message) {
  const error = el("p", { class: "field-error", id: `err-${uid()}` }, message);
  const box = control.closest(".field") ?? control.parentElement;
  box?.appendChild(error);
  control.setAttribute("aria-invalid", "true");
  const described = control.getAttribute("aria-describedby");
  control.setAttribute("aria-describedby", described ? `${described} ${error.id}` : error.id);
}

/**
 * Shows a failed call on the form: next to its field when the API names one
 * this form has, else in the form's alert.
 * @param {HTMLFormElement} form
 * @param {unknown} error
 */
export function reportError(form, error) {
  clearErrors(form);
  if (error instanceof ApiError && error.field !== null) {
    const control = controlFor(form, error.field);
    if (control !== null) {
      showFieldError(control, error.fieldMessage);
      control.focus();
      return;
    }
  }
  const alert = form.querySelector(".form-alert");
  const message = error instanceof Error ? error.message : "Something went wrong.";
  alert?.replaceChildren(el("p", { class: "notice error" }, message));
}

/**
 * Runs `action` on submit; its answer (a sentence) goes to the form's status
 * line, a failure next to the field it names.
 * @param {HTMLFormElement} form
 * @param {() => Promise<string | void>} action
 */
export function onSubmit(form, action) {
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    clearErrors(form);
    const button = form.querySelector("button[type=submit]");
    if (button instanceof HTMLButtonElement) button.disabled = true;
    form.setAttribute("aria-busy", "true");
    action()
      .then((message) => {
        if (typeof message === "string") form.querySelector(".form-status")?.replaceChildren(message);
      })
      .catch((error) => reportError(form, error))
      .finally(() => {
        if (button instanceof HTMLButtonElement) button.disabled = false;
        form.removeAttribute("aria-busy");
      });
  });
}

/**
 * @param {string} name
 * @param {Attrs} [attrs]
 * @typedef {import("./dom.js").Attrs} Attrs
 */
export function input(name, attrs = {}) {
  return el("input", { name, autocomplete: "off", spellcheck: "false", ...attrs });
}

/**
 * A number input; read with `numberOf`.
 * @param {string} name
 * @param {Attrs} [attrs]
 */
export function numberInput(name, attrs = {}) {
  return input(name, { type: "number", step: "any", inputmode: "decimal", ...attrs });
}

/**
 * The number typed, undefined when empty. Left to the API to judge (0, a
 * negative, a fraction where a whole number is due), so its message shows.
 * @param {HTMLInputElement} control
 */
export function numberOf(control) {
  const text = control.value.trim();
  return text === "" ? undefined : Number(text);
}

const EXPIRY_PRESETS = /** @type {const} */ ([
  ["never", "Never", 0],
  ["15m", "In 15 minutes", 15 * 60_000],
  ["1h", "In 1 hour", 60 * 60_000],
  ["1d", "In 1 day", 24 * 60 * 60_000],
  ["7d", "In 7 days", 7 * 24 * 60 * 60_000],
  ["at", "At a date and time…", 0],
]);

/**
 * `expires_at` as a preset or a local date and time, sent as ISO 8601 UTC.
 * @param {string} [initial] a preset name
 */
export function expiryField(initial = "never") {
  const choice = el("select", { name: "expiry" }, EXPIRY_PRESETS.map(([value, label]) => el("option", { value, selected: value === initial }, label)));
  choice.dataset.field = "expires_at";
  const at = input("expires_at", { type: "datetime-local", "aria-label": "Expiry date and time (your local time)", hidden: initial !== "at" });
  choice.addEventListener("change", () => {
    at.hidden = choice.value !== "at";
    if (!at.hidden) at.focus();
  });
  choice.id = uid();
  const element = el("div", { class: "field" }, el("label", { for: choice.id }, "Expires"), el("div", { class: "inline" }, choice, at));
  return {
    element,
    /** ISO 8601 (UTC), null for never; a bad date goes to the API as typed so its message shows. */
    read() {
      if (choice.value === "never") return null;
      if (choice.value === "at") {
        const ms = Date.parse(at.value);
        return Number.isNaN(ms) ? at.value : new Date(ms).toISOString();
      }
      const preset = EXPIRY_PRESETS.find(([value]) => value === choice.value);
      return new Date(Date.now() + (preset?.[2] ?? 0)).toISOString();
    },
  };
}
