// Generation: the text and what a causal model wrote after it, with one step's token read last
// and token written marked, and the chosen head's attention from the token read last (the row
// whose output chose the new token), exact. render(container, data, sel).

import { el } from "../core/dom.js";
import { quotedToken } from "../core/tokens.js";
import * as heatcanvas from "./heatcanvas.js";

/** @typedef {import("../core/types.js").NDArray} NDArray */

/**
 * @param {HTMLElement} container
 * @param {{tokens: string[], start: number, row: NDArray}} data start: the first written token;
 *   row: the attention row [n] of the token read last (keys after it masked, 0)
 * @param {{layer: number, head: number, step: number}} sel step: 1-based
 */
export function render(container, data, sel) {
  if (!container.querySelector(":scope > .gen-text")) {
    container.replaceChildren(el("p", { className: "gen-text" }), el("div", { className: "gen-heat heat-large" }));
  }
  const { tokens, start } = data;
  const read = start + sel.step - 2; // the last token read
  const written = start + sel.step - 1; // the token this step wrote
  /** @type {HTMLElement} */ (container.querySelector(".gen-text")).replaceChildren(
    ...tokens.map((tok, i) =>
      el("span", {
        textContent: tok, // the text itself, as written (pre-wrap: its spaces and line breaks)
        className: [
          i >= start ? "written" : "",
          i === read ? "read" : "",
          i === written ? "new" : "",
          i > written ? "later" : "",
        ]
          .filter(Boolean)
          .join(" "),
      }),
    ),
  );
  const matrix = { dtype: data.row.dtype, shape: [1, read + 1], data: data.row.data.slice(0, read + 1) };
  heatcanvas.render(
    /** @type {HTMLElement} */ (container.querySelector(".gen-heat")),
    {
      labels: tokens.slice(0, read + 1),
      rowLabels: [tokens[read]],
      matrix,
      axes: ["read", "key"],
      title:
        `Step ${sel.step}: reading up to ${quotedToken(tokens[read])}, the model wrote ${quotedToken(tokens[written])} · ` +
        `layer ${sel.layer + 1}, head ${sel.head + 1}`,
    },
    { peak: true },
  );
}
