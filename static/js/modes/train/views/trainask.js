// The Train tab's "Ask the model" card around what the model wrote (traindecoded.js): shown for
// an encoder-decoder once a variant has finished, with the letters it reads, the variant to ask,
// and why it was not asked (the server's words, which name the field and the rule).
// render(card, data, sel): parts marked by data-role; `asked` redraws the rule and refusal alone.

import { fillOptions } from "../../../core/dom.js";

/** @typedef {import("../../../core/types.js").TrainRun} TrainRun */

/** @param {HTMLElement} card @param {string} role */
const part = (card, role) => /** @type {HTMLElement} */ (card.querySelector(`[data-role=${role}]`));

/**
 * @param {HTMLElement} card
 * @param {{run: TrainRun, refused: string | null}} data refused: why the model was not asked
 * @param {{variant: number}} sel the variant chosen in the views (the one asked, at first)
 */
export function render(card, data, sel) {
  const r = data.run;
  const seq2seq = Boolean(r.probe.source);
  const done = r.variants
    .map((v, i) => /** @type {[number, string]} */ ([i, v.label || "model"]))
    .filter(([i]) => r.variants[i].state === "done" || r.variants[i].state === "cancelled");
  card.hidden = !seq2seq || !done.length;
  if (seq2seq && done.length) {
    const input = /** @type {HTMLInputElement} */ (part(card, "text"));
    if (!input.value) input.value = r.probe.prompt || "";
    fillOptions(/** @type {HTMLSelectElement} */ (part(card, "variant")), done, Math.min(sel.variant, done.length - 1));
    part(card, "variant-box").hidden = r.variants.length < 2;
  }
  asked(card, data);
}

/**
 * What the model can be asked (the run's, from the server), and why it was not, if so.
 * @param {HTMLElement} card
 * @param {{run: TrainRun | null, refused: string | null}} data
 */
export function asked(card, data) {
  const ask = data.run?.ask;
  const a = ask?.alphabet ?? "";
  const range = [...a].every((c, i) => c.charCodeAt(0) === a.charCodeAt(0) + i);
  part(card, "rule").textContent = ask
    ? `${range ? `${a[0]} to ${a[a.length - 1]}` : a}, 1 to ${ask.max_len} of them ` +
      `(it trained on ${ask.min_len} to ${ask.max_len})`
    : "";
  const say = part(card, "say");
  say.hidden = !data.refused;
  say.textContent = data.refused ? `The model was not asked: ${data.refused}` : "";
  part(card, "text").setAttribute("aria-invalid", String(Boolean(data.refused)));
}
