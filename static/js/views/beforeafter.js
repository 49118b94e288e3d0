// The table of each token's vector before (layer 0) and after the chosen layer (toy lab), read as
// the article's tables are read: each value to 3 significant digits (readable()), the vector's
// first SHOWN values in the cell and all of them in its tooltip. The exact values are the API's
// (hidden_states) and the export's.

import { sub } from "../core/compact.js";
import { el } from "../core/dom.js";
import { readable } from "../core/numbers.js";
import { shownToken } from "../core/tokens.js";

/** @typedef {import("../core/types.js").NDArray} NDArray */

const SHOWN = 3; // values written out per vector; the cell's title has all of them

/**
 * What a vector's cell says: its first SHOWN values ("…" after them when there are more), and
 * its tooltip, every value; each to 3 significant digits (readable()).
 * @param {NDArray} vector
 * @returns {{text: string, title: string}}
 */
export function vectorText(vector) {
  const values = Array.from(vector.data);
  const shown = values.slice(0, SHOWN).map((v) => readable(v, vector.dtype));
  if (values.length > SHOWN) shown.push("…");
  return {
    text: `[${shown.join(", ")}]`,
    title: `[${values.map((v) => readable(v, vector.dtype)).join(", ")}]`,
  };
}

/** @param {NDArray} vector */
function vectorCell(vector) {
  const { text, title } = vectorText(vector);
  return el("td", { textContent: text, title });
}

/**
 * Rows: token | hidden_states[0][i] | hidden_states[vlayer][i].
 * @param {HTMLElement} card holds the [data-role=table] <table>
 * @param {{tokens: string[], hidden: NDArray}} data hidden states [L+1][n][d]
 * @param {{vlayer: number}} sel
 */
export function render(card, data, sel) {
  const table = /** @type {HTMLTableElement} */ (card.querySelector("[data-role=table]"));
  const l = Math.min(sel.vlayer, data.hidden.shape[0] - 1);
  const head = el("thead", {}, [
    el("tr", {}, [
      el("th", { textContent: "token" }),
      el("th", { textContent: "before (layer 0)" }),
      el("th", { textContent: `after layer ${l}` }),
    ]),
  ]);
  const body = el(
    "tbody",
    {},
    data.tokens.map((token, i) =>
      el("tr", { dataset: { token: String(i) } }, [
        el("td", { className: "token", textContent: shownToken(token) }),
        vectorCell(sub(data.hidden, 0, i)),
        vectorCell(sub(data.hidden, l, i)),
      ]),
    ),
  );
  table.replaceChildren(head, body);
}
