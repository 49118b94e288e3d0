// The Train tab's run card: the progress bar over every variant's steps, the line under it
// (a waiting run's place in line and estimate; the running variant's step, speed and losses;
// once ended, each variant's figures), the
// run's name, whether Cancel applies (and is offered at all: only to whoever may cancel the run,
// its owner), and whether Rename is offered (the same people; rename.js does the renaming). A run that has ended is saved as one offline file by the header's Export HTML,
// as every mode's views are. render(card, data): parts marked by data-role.

import { runName } from "../../../core/runname.js";
import { readable } from "../../../core/numbers.js";
import { inLine, variantFigures } from "../../../core/trainrun.js";

/** @typedef {import("../../../core/types.js").TrainRun} TrainRun */

/**
 * @param {HTMLElement} card
 * @param {{run: TrainRun, live?: boolean}} data live: on the live page (a saved file offers no
 *   Cancel)
 */
export function render(card, data) {
  const r = data.run;
  const part = (/** @type {string} */ role) => /** @type {HTMLElement} */ (card.querySelector(`[data-role=${role}]`));
  const total = r.steps * r.variants.length;
  const done = r.variants.reduce((n, v) => n + v.history.step.length, 0);
  /** @type {HTMLProgressElement} */ (part("progress")).value = total ? done / total : 0;
  const v = r.variants.find((x) => x.state === "running") || r.variants[r.variants.length - 1];
  const h = v.history;
  const n = h.step.length;
  const rate = n > 1 ? (n - 1) / Math.max(1e-6, h.seconds[n - 1] - h.seconds[0]) : 0;
  const last = v.checkpoints[v.checkpoints.length - 1];
  const who = r.variants.length > 1 ? `${v.label}: ` : "";
  // Once ended: each variant's own steps and held-out loss (an ablation's side by side).
  const each =
    r.variants.length > 1
      ? r.variants.map((x) => `${x.label}: ${variantFigures(x)}`).join(" · ")
      : variantFigures(r.variants[0]);
  // The line is the card's live region: a screen reader says the place as it changes.
  part("rate").textContent =
    r.state === "queued"
      ? `Waiting for a training slot: ${inLine(r.place, r.wait_s)}. It starts by itself when the runs ahead end.`
      : r.state === "running"
        ? `${who}step ${n} / ${r.steps} · ${readable(rate)} steps/s · batch loss ${readable(h.loss[n - 1])}` +
          (last ? ` · held-out ${readable(last.heldout)}` : "")
        : `${ended(r.state, r.reason)} · ${each}`;
  // Named by what it is and when it started; its id, never shown, is the card's data.
  part("id").textContent = runName(r.title, r.created, r.named);
  card.dataset.run = r.id;
  const cancel = /** @type {HTMLButtonElement} */ (part("cancel"));
  cancel.disabled = r.state !== "running" && r.state !== "queued";
  // Rename: on the live page, to whoever may (its owner, the operator); the field, open for
  // another run or for one no longer the caller's to rename, closes.
  const rename = /** @type {HTMLButtonElement | null} */ (card.querySelector("[data-role=rename]"));
  const form = /** @type {HTMLFormElement | null} */ (card.querySelector("[data-role=rename-form]"));
  if (rename && form) {
    const may = Boolean(data.live && r.can_rename);
    rename.hidden = !may;
    if (!form.hidden && (!may || form.dataset.run !== r.id)) {
      form.hidden = true;
      rename.setAttribute("aria-expanded", "false");
    }
  }
  const owner = /** @type {HTMLElement | null} */ (card.querySelector("[data-role=owner]"));
  if (data.live) {
    // The live page: Cancel only where the caller may (a saved file hides it for good). A run
    // opened by its link, or shared, is another visitor's: read, scrubbed, downloaded, not
    // cancelled.
    cancel.hidden = !r.can_cancel;
    if (owner) {
      owner.hidden = !!r.can_cancel;
      owner.textContent = r.can_cancel
        ? ""
        : r.shared
          ? "Shared by the operator: you can read it, not cancel or rename it"
          : "Opened by its link: you can read it, not cancel or rename it";
    }
  }
}

/**
 * How an ended run's state reads: "done", "cancelled: why", or a reason that says it already
 * ("interrupted at step 120: the server stopped while it trained...": an interrupted run).
 * @param {string} state @param {string | null} reason
 */
function ended(state, reason) {
  if (!reason || reason === state) return state;
  return reason.startsWith(state) ? reason : `${state}: ${reason}`;
}
