// The table of each token's vector before (layer 0) and after the chosen layer (toy lab).

import { sub } from "../core/compact.js";
import { el } from "../core/dom.js";
import { fmt, readable } from "../core/numbers.js";
import { shownToken } from "../core/tokens.js";

/** @typedef {import("../core/types.js").NDArray} NDArray */

const SHOWN = 3; // values written out per vector; the cell's title has all of them (3 significant digits)

/** @param {NDArray} vector */
function vectorCell(vector) {
  const values = Array.from(vector.data);
  const shown = values.slice(0, SHOWN).map((v) => fmt(v, 2));
  if (values.length > SHOWN) shown.push("…");
  return el("td", {
    textContent: `[${shown.join(", ")}]`,
    title: `[${values.map((v) => readable(v, vector.dtype)).join(", ")}]`,
  });
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
