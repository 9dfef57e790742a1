// @ts-check
// "Are you sure?" as a modal <dialog>: the browser traps focus in it, Escape
// cancels, and focus returns to the button that opened it. Cancel has the
// focus first, so Enter never destroys anything by accident. The message
// says what the action will do: a sentence, or a few (the effect of a budget
// change, line by line).
import { el } from "./dom.js";

/**
 * @param {{ title: string, message: string | ReadonlyArray<string>, confirm: string, tone?: "danger" | "primary" }} options
 *   `tone`: the confirm button's look; "danger" (the default) for what cannot be undone
 * @returns {Promise<boolean>} true when the operator confirmed
 */
export function confirmAction(options) {
  const opener = document.activeElement;
  return new Promise((resolve) => {
    const cancel = el("button", { type: "button", autofocus: true }, "Cancel");
    const ok = el("button", { type: "button", class: options.tone ?? "danger" }, options.confirm);
    const lines = typeof options.message === "string" ? [options.message] : options.message;
    const title = el("h2", { id: "confirm-title" }, options.title);
    const dialog = el(
      "dialog",
      { class: "confirm", "aria-labelledby": "confirm-title", "aria-describedby": "confirm-message" },
      title,
      el("div", { id: "confirm-message" }, lines.map((line) => el("p", {}, line))),
      el("div", { class: "actions" }, cancel, ok),
    );
    /** @param {boolean} answer */
    const finish = (answer) => {
      dialog.close();
      dialog.remove();
      if (opener instanceof HTMLElement && opener.isConnected) opener.focus();
      resolve(answer);
    };
    cancel.addEventListener("click", () => finish(false));
    ok.addEventListener("click", () => finish(true));
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      finish(false);
    });
    document.body.appendChild(dialog);
    dialog.showModal();
    cancel.focus();
  });
}
