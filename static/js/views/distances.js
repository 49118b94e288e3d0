// The distance between two chosen tokens at every layer: a readout (the plot's text
// alternative) and a line plot, which takes focus: the arrow keys step through the layers and a
// live region reads each distance as the hover writes it (toy lab).

import { fillOptions, el } from "../core/dom.js";
import { exact, readableProse } from "../core/numbers.js";
import { plotlyOf } from "../core/plotly.js";
import { SELECTED, baseLayout, draw, plotToken } from "../core/theme.js";
import { spokenToken } from "../core/tokens.js";
import { describe, keyCursor } from "./access.js";

/** @typedef {import("../core/types.js").NDArray} NDArray */

/**
 * Readout "apple ↔ banana: 0.700 → 0.059" and the plot of distances[l][a][b] over l.
 * @param {HTMLElement} card holds [data-role=a|b] pickers, [data-role=readout], [data-role=plot]
 * @param {{tokens: string[], distances: NDArray}} data [L+1][n][n]
 * @param {{a: number, b: number, vlayer: number}} sel
 * @param {{onSelect: (change: {a?: number, b?: number}) => void}} callbacks
 */
export function render(card, data, sel, callbacks) {
  const { tokens, distances } = data;
  const [L1, n] = distances.shape;
  const a = Math.min(sel.a, n - 1);
  const b = Math.min(sel.b, n - 1);
  const items = /** @type {[number, string][]} */ (tokens.map((t, i) => [i, `${i + 1}. ${t}`]));
  for (const [role, value] of /** @type {const} */ ([
    ["a", a],
    ["b", b],
  ])) {
    const select = /** @type {HTMLSelectElement} */ (card.querySelector(`[data-role=${role}]`));
    fillOptions(select, items, value);
    select.onchange = () => callbacks.onSelect({ [role]: Number(select.value) });
  }
  const series = Array.from({ length: L1 }, (_, l) => distances.data[(l * n + a) * n + b]);
  const current = Math.min(sel.vlayer, L1 - 1);
  const dtype = distances.dtype;
  // Each distance as the JSON spells it, to 3 significant digits; one that would round under
  // 0.000001 "practically zero", never an exponent (the line, its tooltips, the cursor, the hover).
  /** @param {number} v */
  const say = (v) => readableProse(dtype === "F32" ? Number(exact(v, "F32")) : v);

  const parts = [
    el("span", { className: "pair", textContent: `${tokens[a]} ↔ ${tokens[b]}` }),
    el("span", { textContent: ": " }),
  ];
  series.forEach((v, l) => {
    if (l > 0) parts.push(el("span", { textContent: " → " }));
    parts.push(
      el("span", {
        className: l === current ? "value current" : "value",
        textContent: say(v), // as the hover and the cursor say it
        title: `layer ${l}: ${say(v)}`,
      }),
    );
  });
  const readout = /** @type {HTMLElement} */ (card.querySelector("[data-role=readout]"));
  readout.replaceChildren(...parts);

  const layers = series.map((_, l) => l);
  const pair = `${plotToken(tokens[a])} ↔ ${plotToken(tokens[b])}`;
  const plot = /** @type {HTMLElement} */ (card.querySelector("[data-role=plot]"));
  const { live } = describe(plot, { summary: "" }); // the readout above says it all
  keyCursor(plot, live, {
    rows: 1,
    cols: L1,
    describedBy: readout.id || undefined,
    label: `Distance between ${spokenToken(tokens[a])} and ${spokenToken(tokens[b])} at each layer: line plot. Arrow keys step through the layers.`,
    text: (_, l) => `${spokenToken(tokens[a])} ↔ ${spokenToken(tokens[b])}, layer ${l}: ${say(series[l])}`,
    show: (_, l) => plotlyOf(plot).Fx.hover(plot, [{ curveNumber: 0, pointNumber: l }]),
    hide: () => plotlyOf(plot).Fx.unhover(plot),
  });
  return draw(
    plot,
    [
      {
        type: "scatter",
        mode: "lines+markers",
        uid: "distance",
        name: pair,
        x: layers,
        y: series,
        // User text goes through customdata: a template would read "%{...}" in a token label.
        customdata: series.map((v) => [pair, say(v)]),
        hovertemplate: "%{customdata[0]}<br>layer %{x}: %{customdata[1]}<extra></extra>",
        line: { color: SELECTED, width: 2.5 },
        marker: { size: 7 },
      },
    ],
    baseLayout({
      margin: { l: 60, r: 20, t: 16, b: 46 },
      showlegend: false,
      xaxis: {
        title: { text: "layer (0 = input)" },
        tickmode: "array",
        tickvals: layers,
        range: [-0.3, L1 - 1 + 0.3],
        zeroline: false,
      },
      yaxis: { title: { text: "distance" }, rangemode: "tozero" },
      shapes: [
        {
          type: "line",
          xref: "x",
          yref: "paper",
          x0: current,
          x1: current,
          y0: 0,
          y1: 1,
          line: { color: "#9aa3b2", width: 1, dash: "dot" },
        },
      ],
    }),
    "attnviz-distance",
  );
}
