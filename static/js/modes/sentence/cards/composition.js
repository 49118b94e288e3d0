// The "How heads compose" card of sentence mode, beside the head atlas: nothing is asked of the
// server until the reader presses "Compose every head" (asked.js; once per model, from its
// weights: a second or so for GPT-2's 144 heads); then the model's composition scores (core/api.js
// fetchComposition) are drawn by views/composition.js, one kind and the strongest few at a
// time, the heads labelled with the atlas's roles once the atlas is scored. An edge picked
// there opens its later head in the views, on the text. A new model puts the button back.

import { fetchComposition } from "../../../core/api.js";
import { byId, fillOptions } from "../../../core/dom.js";
import { readableProse } from "../../../core/numbers.js";
import * as view from "../../../views/composition.js";
import { askedOnce } from "./asked.js";

/** @typedef {import("../../../core/types.js").Composition} Composition */
/** @typedef {import("../../../core/types.js").CompositionKind} CompositionKind */
/** @typedef {import("../../../core/types.js").Atlas} Atlas */

/**
 * Wire the card (once).
 * @param {{model: () => string | null, atlas: () => Atlas | null,
 *   openHead: (layer: number, head: number) => void, setError: (message: string | null) => void}} ctx
 *   model: the model chosen now; atlas: its atlas when the atlas card has scored it; openHead:
 *   open that head in the views, on the text
 * @returns {{sync: () => void, redraw: () => void}} sync: after the model may have changed;
 *   redraw: the atlas came (the heads' roles)
 */
export function createCompositionCard(ctx) {
  const go = /** @type {HTMLButtonElement} */ (byId("comp-go"));
  const kind = /** @type {HTMLSelectElement} */ (byId("comp-kind"));
  const count = /** @type {HTMLSelectElement} */ (byId("comp-count"));
  const status = byId("comp-status");
  const processing = byId("comp-processing");
  const box = byId("comp-view");
  fillOptions(
    kind,
    Object.entries(view.KIND_WORDS).map(([k, words]) => [k, words]),
    "k",
  );
  fillOptions(
    count,
    view.EDGE_COUNTS.map((n) => [n, `${n} strongest`]),
    view.EDGE_COUNTS[1],
  );
  /** @type {{layer: number, head: number} | null} */
  let opened = null;

  function draw() {
    const now = asked.shown();
    if (!now) return;
    const atlas = ctx.atlas();
    const data = {
      comp: now.answer,
      kind: /** @type {CompositionKind} */ (kind.value),
      count: Number(count.value),
      atlas: atlas && atlas.model === now.model ? atlas : null,
    };
    view.render(box, data, opened, {
      onPick(layer, head) {
        opened = { layer, head };
        draw();
        ctx.openHead(layer, head);
      },
    });
  }

  const asked = askedOnce({
    go,
    status,
    what: "composition",
    model: ctx.model,
    setError: ctx.setError,
    asking: (model) => `Composing every pair of ${model}'s heads from its weights…`,
    fetch: fetchComposition,
    show(_model, comp) {
      kind.disabled = false;
      count.disabled = false;
      status.textContent =
        `${comp.layers} layers × ${comp.heads} heads, composed in ${readableProse(comp.seconds)} s ` +
        "(kept for this model).";
      processing.textContent = `Weights as TransformerLens processes them: ${comp.processing}`;
      draw();
    },
    clear() {
      opened = null;
      kind.disabled = true;
      count.disabled = true;
      processing.textContent = "";
      box.replaceChildren();
    },
  });
  kind.addEventListener("change", draw);
  count.addEventListener("change", draw);

  return { sync: asked.sync, redraw: draw };
}
