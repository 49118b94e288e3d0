// What an encoder-decoder wrote when asked (the Train tab's "Ask the model" card): the answer,
// right or wrong, and the chosen head of the chosen attention on its last pass, exact.
// render(container, data, sel): the container is the card's [data-role=view].

import { ATTENTION, attentionAxes } from "../../../core/trainrun.js";
import { el } from "../../../core/dom.js";
import * as heatcanvas from "../../../views/heatcanvas.js";

/** @typedef {import("../../../core/types.js").AttentionKind} AttentionKind */

/**
 * What an encoder-decoder wrote when asked (decodeRun in core/api.js): the answer, right or
 * wrong, and the chosen head of the chosen attention on its last pass, exact (float32).
 * @param {HTMLElement} container
 * @param {{decoded: import("../../../core/types.js").TrainDecoded | null}} data
 * @param {{layer: number, head: number, attention: AttentionKind}} sel
 */
export function render(container, data, sel) {
  if (!container.querySelector(":scope > .t-try-out")) {
    container.replaceChildren(
      el("p", { className: "readout t-try-out", "aria-live": "polite" }),
      el("figure", { className: "figure" }, [
        el("div", { className: "heat-large t-try-heat" }),
        el("figcaption", {}, [
          el("span", {
            textContent:
              "The chosen head (pick it above, with the " +
              "attention) on the model's last pass over what it wrote: exact weights (float32).",
          }),
        ]),
      ]),
    );
  }
  const out = /** @type {HTMLElement} */ (container.querySelector(".t-try-out"));
  const figure = /** @type {HTMLElement} */ (container.querySelector("figure"));
  const d = data.decoded;
  figure.hidden = !d;
  if (!d) {
    out.replaceChildren();
    return;
  }
  const right = d.output === d.expected;
  out.replaceChildren(
    el("span", { className: "dim", textContent: `${d.source.slice(0, -1).join("")} → ` }),
    el("b", { textContent: d.output || "(nothing)" }),
    el("span", {
      className: right ? "holds" : "fails",
      textContent: right ? " ✓" : ` ✗ (the answer is ${d.expected})`,
    }),
  );
  const { layer, head, attention } = sel;
  const rows = attention === "encoder" ? d.encoder : attention === "cross" ? d.cross : d.self;
  const l = Math.min(layer, rows.length - 1);
  const m = rows[l][head];
  const matrix = {
    dtype: /** @type {"F32"} */ ("F32"),
    shape: [m.length, m[0].length],
    data: new Float32Array(m.flat()),
  };
  heatcanvas.render(/** @type {HTMLElement} */ (container.querySelector(".t-try-heat")), {
    ...attentionAxes({ source: d.source, tokens: d.tokens, writes: d.writes }, attention),
    matrix,
    title: `${ATTENTION[attention].name}, layer ${l + 1}, head ${head + 1}`,
  });
}
