// The weights | value-weighted switches of the model and head cards, and the notes that say
// which is shown: shared by cards/model.js and cards/head.js.

import { byId } from "../../../core/dom.js";

/** The switches' radio groups, one per card. */
export const MEASURE_SWITCHES = ["mv-measure", "hv-measure"];

/**
 * Both cards' weights | value-weighted switches as the state says (off, with the reason, for
 * a trace without value-weighted attention), and the notes that say what is shown.
 * @param {import("../parts.js").SentenceApp} app
 * @param {import("../../../core/types.js").TraceMeta} meta @param {boolean} value shown now
 */
export function showMeasure(app, meta, value) {
  const lacking = meta.unavailable?.value_weighted ?? "";
  for (const name of MEASURE_SWITCHES) {
    for (const input of /** @type {NodeListOf<HTMLInputElement>} */ (
      document.querySelectorAll(`input[name="${name}"]`)
    )) {
      input.checked = input.value === (value ? "value_weighted" : "weights");
      input.disabled = Boolean(lacking) && input.value === "value_weighted";
      /** @type {HTMLElement} */ (input.parentElement).title = input.disabled
        ? lacking.replace(/^value_weighted: /, "")
        : "";
    }
  }
  const said =
    lacking && app.s.measure === "value_weighted"
      ? `Value-weighted attention is not available: ${lacking.replace(/^value_weighted: /, "")}. The weights are shown.`
      : value
        ? "Value-weighted: each cell is ||a_ij v_j W_O^h||, the norm of what key j adds to query i's " +
          "output through the head (its weight times its value through the head's slice of the output " +
          "projection; Kobayashi et al., 2020). A key with much weight but a small value moves little."
        : "";
  for (const id of ["mv-measure-note", "hv-measure-note"]) {
    byId(id).hidden = !said;
    byId(id).textContent =
      id === "hv-measure-note" && value
        ? "Value-weighted: a line's thickness and opacity is ||a_ij v_j W_O^h|| over the strongest line drawn " +
          "(lines under 1% of it are left out)."
        : said;
  }
}

/**
 * A card's switch (the radio group `name`) writes the state's measure when picked.
 * @param {import("../cards.js").CardContext} ctx @param {string} name
 */
export function wireMeasure({ change }, name) {
  for (const input of /** @type {NodeListOf<HTMLInputElement>} */ (
    document.querySelectorAll(`input[name="${name}"]`)
  )) {
    input.addEventListener("change", () => {
      if (!input.checked) return;
      change({ measure: /** @type {import("../../../core/types.js").Measure} */ (input.value) });
    });
  }
}
