// The Train tab's "attention as it trains": every variant's heads at the checkpoint the slider
// picks (a grid per variant, from the run's 8-bit snapshots, drawn as the model view draws a
// trace's thumbnails), the chosen head large, the checkpoint's sample, and the card's chrome
// (the slider, the attention picker of an encoder-decoder, the probe's description). A cell of
// the large heatmap opens Why this score (modes/train/why.js) where the variant's trained model
// can be asked.
// render(card, data, sel, callbacks): the card's parts are marked by data-role.

import { el, fillOptions } from "../../../core/dom.js";
import { readable } from "../../../core/numbers.js";
import { ATTENTION, attentionAxes, headMatrix, shownSteps, thumbsOf } from "../../../core/trainrun.js";
import * as heatcanvas from "../../../views/heatcanvas.js";
import * as modelview from "../../../views/modelview.js";

/** @typedef {import("../../../core/types.js").TrainRun} TrainRun */
/** @typedef {import("../../../core/types.js").TrainView} TrainView */
/** @typedef {import("../../../core/types.js").AttentionKind} AttentionKind */

/** @param {HTMLElement} card @param {string} role */
const part = (card, role) => /** @type {HTMLElement} */ (card.querySelector(`[data-role=${role}]`));

/**
 * The card: the slider over the checkpoint steps (sel.checkpoint indexes them), the chosen
 * attention, every variant's grid at that step, the chosen head large and the step's sample.
 * @param {HTMLElement} card
 * @param {{run: TrainRun, live?: boolean, why?: boolean, target?: number[] | null}} data live:
 *   false in a saved file (no model to ask); why: a cell of the large heatmap opens Why this
 *   score (a trained model); target: a cell a Learn task points at, marked on the large heatmap
 * @param {TrainView} sel
 * @param {{onSelect: (change: Partial<TrainView>) => void, onCheckpoint: (index: number) => void,
 *   onPickCell?: (query: number, key: number) => void}} callbacks onCheckpoint: the reader moved
 *   the slider; onPickCell: a cell of the large heatmap clicked (or Enter on it)
 */
export function render(card, data, sel, callbacks) {
  const r = data.run;
  const steps = shownSteps(r);
  const slider = /** @type {HTMLInputElement} */ (part(card, "checkpoint"));
  slider.max = String(Math.max(0, steps.length - 1));
  slider.value = String(sel.checkpoint);
  slider.disabled = steps.length < 2;
  slider.oninput = () => callbacks.onCheckpoint(Number(slider.value));
  /** @type {HTMLButtonElement} */ (part(card, "play")).disabled = steps.length < 2;
  part(card, "look").textContent = r.probe.look;
  const kinds = /** @type {(keyof ATTENTION)[]} */ (r.probe.source ? ["cross", "self", "encoder"] : []);
  part(card, "attention-box").hidden = !kinds.length;
  const picker = /** @type {HTMLSelectElement} */ (part(card, "attention"));
  fillOptions(
    picker,
    kinds.map((k) => [k, ATTENTION[k].name]),
    sel.attention,
  );
  picker.onchange = () => callbacks.onSelect({ attention: /** @type {AttentionKind} */ (picker.value) });
  part(card, "exact-where").textContent =
    data.live === false
      ? "This file holds the run's rounded snapshots; the live page's model gives exact numbers."
      : r.probe.source
        ? "Ask the model below for exact numbers on any string."
        : "Open the model in sentence mode for exact numbers.";
  const step = steps[sel.checkpoint];
  grids(part(card, "grids"), { run: r, step }, sel, {
    onSelect: (variant, layer, head) => callbacks.onSelect({ variant, layer, head }),
  });
  const v = r.variants[sel.variant];
  const cp = v.checkpoints.find((c) => c.step === step);
  const out = part(card, "checkpoint-out");
  out.textContent =
    step === undefined ? "no checkpoints" : `step ${step}` + (cp ? ` · held-out ${readable(cp.heldout)}` : "");
  slider.setAttribute("aria-valuetext", out.textContent || "");
  const sample = part(card, "sample");
  sample.hidden = !cp?.sample;
  const verb = r.probe.verb || "continues";
  sample.replaceChildren(
    ...(cp?.sample !== null && cp?.sample !== undefined
      ? [
          el("span", { className: "dim", textContent: `At step ${step} the model ${verb} ` }),
          el("b", { textContent: r.probe.prompt || "" }),
          ...(r.probe.source
            ? [
                el("span", { className: "dim", textContent: " as " }),
                el("b", { textContent: cp.sample || "(nothing)" }),
              ]
            : [el("span", { textContent: cp.sample })]),
        ]
      : []),
  );
  const large = part(card, "large");
  if (!cp) {
    large.replaceChildren(
      el("p", {
        className: "hint",
        textContent:
          r.state === "queued"
            ? "Waiting for a training slot: the heads are shown from the run's first checkpoint, once it starts."
            : step === undefined
              ? "No checkpoint was taken: the run ended before its first."
              : `${v.label || "The model"} has no checkpoint at step ${step}: choose another step, or a head of another model.`,
      }),
    );
    return;
  }
  const { layer, head, attention } = sel;
  const what = r.probe.source ? `${ATTENTION[attention].name}, ` : "";
  const pick = data.why && callbacks.onPickCell;
  heatcanvas.render(
    large,
    {
      ...attentionAxes(r.probe, attention),
      matrix: headMatrix(cp, layer, head, attention),
      approx: true,
      title: `${v.label ? `${v.label}, ` : ""}${what}layer ${layer + 1}, head ${head + 1} at step ${step}`,
    },
    { query: sel.query ?? -1, target: data.target ?? null },
    pick ? { onPickCell: pick, pickCell: "opens Why this score for that cell, below" } : {},
  );
}

/**
 * Why a variant has no checkpoint at a step: it has not got there yet, or it stopped before.
 * @param {TrainRun["variants"][number]} v @param {TrainRun} run
 */
function missing(v, run) {
  if ((run.state === "running" || run.state === "queued") && (v.state === "running" || v.state === "waiting"))
    return "not there yet";
  const last = v.checkpoints[v.checkpoints.length - 1];
  return last ? `stopped at step ${last.step}` : "not trained: the run ended before it";
}

/**
 * Every variant's heads at one checkpoint, a grid (layers x heads) per variant, labelled, side
 * by side where the width allows.
 * @param {HTMLElement} container
 * @param {{run: TrainRun, step: number | undefined}} data step: the checkpoint's
 * @param {{variant: number, layer: number, head: number, attention: AttentionKind}} sel
 * @param {{onSelect: (variant: number, layer: number, head: number) => void}} callbacks
 */
function grids(container, data, sel, callbacks) {
  const { run, step } = data;
  // The narrowest a variant's grid goes before the next one wraps below it (views.css).
  container.style.setProperty("--t-heads", String(Math.max(...run.variants.map((v) => v.arch.heads))));
  if (container.childElementCount !== run.variants.length) {
    container.replaceChildren(
      ...run.variants.map((v, i) =>
        el("div", { className: "t-variant", dataset: { variant: String(i) } }, [
          el("p", { className: "t-variant-label" }),
          el("div", { className: "mv-grid", role: "group", "aria-label": `Heads of ${v.label || "the model"}` }),
        ]),
      ),
    );
  }
  run.variants.forEach((v, i) => {
    const box = /** @type {HTMLElement} */ (container.children[i]);
    const grid = /** @type {HTMLElement} */ (box.querySelector(".mv-grid"));
    const cp = v.checkpoints.find((c) => c.step === step);
    const label = /** @type {HTMLElement} */ (box.querySelector(".t-variant-label"));
    label.textContent = `${v.label || "model"} · ${cp ? `step ${step} · held-out ${readable(cp.heldout)}` : missing(v, run)}`;
    box.classList.toggle("chosen", i === sel.variant);
    grid.hidden = !cp;
    if (!cp) return;
    const on = i === sel.variant;
    modelview.render(
      grid,
      { layers: v.arch.layers, heads: v.arch.heads, thumbs: thumbsOf(cp, sel.attention), entropy: null },
      { layer: on ? sel.layer : -1, head: on ? sel.head : -1 },
      { onSelect: (layer, head) => callbacks.onSelect(i, layer, head) },
    );
  });
}
