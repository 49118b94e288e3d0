// The Run card's Rename: the run's owner (or the operator) gives the run open a name of their
// own. A labelled field with Save and Cancel (Enter saves, Escape cancels, focus back on
// Rename); the server checks the name (its cap comes with the training options) and what it
// refuses is said in plain words beside the field. Once saved, the page names the run so
// everywhere: the card, the trained models, the runs list and, read again, sentence mode's
// model pickers. Whether Rename is offered at all is the card's (views/trainprogress.js).

import { renameRun } from "../../core/api.js";
import { byId } from "../../core/dom.js";
import { reduce } from "./reducer.js";
import { refreshRuns } from "./runs.js";

/** @typedef {import("./app.js").TrainContext} TrainContext */

/**
 * What a refused name reads as beside the field: the server's rule without the field's name,
 * or, for a run no longer there (or not the caller's), that plainly (its message names the id).
 * @param {Error & {status?: number}} err
 */
export function refusal(err) {
  if (err.status === 404) return "Not renamed: this run is no longer on this server, or not yours to rename.";
  const rule = err.message.replace(/^title: /, "");
  return `Not renamed: ${rule.charAt(0).toUpperCase()}${rule.slice(1)}${/[.!?]$/.test(rule) ? "" : "."}`;
}

/** Wire the Run card's Rename, once (the training options are in). @param {TrainContext} ctx */
export function wireRename(ctx) {
  const button = /** @type {HTMLButtonElement} */ (byId("t-rename"));
  const form = /** @type {HTMLFormElement} */ (byId("t-rename-form"));
  const input = /** @type {HTMLInputElement} */ (byId("t-rename-text"));
  const save = /** @type {HTMLButtonElement} */ (byId("t-rename-save"));
  const say = byId("t-rename-say");
  const cap = ctx.app.options?.limits.max_title_chars ?? 0;
  if (cap) input.maxLength = cap;
  byId("t-rename-rule").textContent =
    `Enter saves, Escape cancels. Up to ${cap} characters, on one line; ` + "shown wherever the run is listed.";

  /** @param {string | null} message */
  function tell(message) {
    say.hidden = !message;
    say.textContent = message ?? "";
    input.setAttribute("aria-invalid", String(Boolean(message)));
  }

  function open() {
    const r = ctx.app.t.run;
    if (!r) return;
    form.dataset.run = r.id;
    input.value = r.title ?? "";
    tell(null);
    form.hidden = false;
    button.setAttribute("aria-expanded", "true");
    input.focus();
    input.select();
  }

  function close() {
    form.hidden = true;
    tell(null);
    button.setAttribute("aria-expanded", "false");
    if (!button.hidden) button.focus();
  }

  async function submit() {
    const r = ctx.app.t.run;
    if (!r || r.id !== form.dataset.run) return close();
    if (input.value.trim() === r.title) return close(); // nothing changed: kept as it is named
    save.disabled = true;
    ctx.status.waiting("rename", true);
    try {
      const renamed = await renameRun(r.id, input.value);
      if (ctx.app.t.run?.id === renamed.id) {
        const { id, title, named } = renamed;
        ctx.app.t = reduce(ctx.app.t, { type: "renamed", data: { id, title, named } });
        ctx.changed(["title"]);
      }
      close();
      refreshRuns(ctx);
      ctx.hooks.renamed?.();
    } catch (err) {
      tell(refusal(/** @type {Error & {status?: number}} */ (err)));
      input.focus();
    } finally {
      save.disabled = false;
      ctx.status.waiting("rename", false);
    }
  }

  button.addEventListener("click", () => (form.hidden ? open() : close()));
  byId("t-rename-cancel").addEventListener("click", close);
  form.addEventListener("keydown", (e) => {
    if (e.key !== "Escape") return;
    e.preventDefault();
    close();
  });
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    submit();
  });
}
