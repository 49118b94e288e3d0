// The head atlas card of sentence mode: nothing is asked of the server until the reader presses
// "Score every head" (asked.js); then the model's atlas (core/api.js fetchAtlas) is drawn by views/atlas.js,
// one score at a time, and a head picked there opens in the model and head views on the probe's
// text. A new model puts the button back.

import { fetchAtlas } from "../../../core/api.js";
import { byId, fillOptions } from "../../../core/dom.js";
import { readableProse } from "../../../core/numbers.js";
import * as atlasview from "../../../views/atlas.js";
import { askedOnce } from "./asked.js";

/** @typedef {import("../../../core/types.js").Atlas} Atlas */

/**
 * Wire the card (once).
 * @param {{model: () => string | null, openHead: (text: string, layer: number, head: number) => void,
 *   setError: (message: string | null) => void, onShown?: () => void}} ctx model: the model chosen
 *   now; openHead: put the text into the input card and open that head in the views; onShown: a
 *   model's atlas came (the composition card labels its heads' roles with it)
 * @returns {{sync: () => void, current: () => Atlas | null}} sync: after the model may have
 *   changed; current: the atlas shown, if any
 */
export function createAtlasCard(ctx) {
  const go = /** @type {HTMLButtonElement} */ (byId("atlas-go"));
  const pick = /** @type {HTMLSelectElement} */ (byId("atlas-score"));
  const status = byId("atlas-status");
  const definition = byId("atlas-definition");
  const view = byId("atlas-view");
  const probe = byId("atlas-probe");
  /** @type {{layer: number, head: number} | null} */
  let opened = null;

  function draw() {
    const atlas = asked.shown()?.answer;
    if (!atlas) return;
    const score = atlas.scores.find((s) => s.name === pick.value) ?? atlas.scores[0];
    definition.textContent = score.definition;
    atlasview.render(view, { layers: atlas.layers, heads: atlas.heads, score }, opened, {
      onPick(layer, head) {
        opened = { layer, head };
        draw();
        ctx.openHead(atlas.probe.text, layer, head);
      },
    });
  }

  const asked = askedOnce({
    go,
    status,
    what: "atlas",
    model: ctx.model,
    setError: ctx.setError,
    asking: (model) => `Scoring every head of ${model} on the probe…`,
    fetch: fetchAtlas,
    show(_model, atlas) {
      pick.disabled = false;
      // Opened on the score that varies most over this model's heads (a score nearly the same
      // on every head, induction on an encoder, is a blank grid).
      fillOptions(
        pick,
        atlas.scores.map((s) => [s.name, s.title]),
        atlasview.mostVaried(atlas.scores).name,
      );
      const p = atlas.probe;
      status.textContent =
        `${atlas.layers} layers × ${atlas.heads} heads, scored in ${readableProse(atlas.seconds)} s ` +
        `(kept for this model). Pick a head to open it on the probe.`;
      probe.hidden = false;
      probe.textContent =
        `The probe: ${p.strings} strings of ${p.half} random tokens, each repeated ` +
        `(seed ${p.seed}); the first is “${p.text.trim()}”.`;
      draw();
      ctx.onShown?.();
    },
    clear() {
      opened = null;
      pick.disabled = true;
      definition.textContent = "";
      probe.textContent = "";
      probe.hidden = true;
      view.replaceChildren();
    },
  });
  pick.addEventListener("change", draw);

  return { sync: asked.sync, current: () => asked.shown()?.answer ?? null };
}
