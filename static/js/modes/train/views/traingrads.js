// The Train tab's gradient norms: one variant's norm per layer and step (log scale), with the
// card's variant picker (shown when the run has more than one).
// render(card, data, sel, callbacks): the card holds [data-role=variant] and [data-role=plot].
// The plot takes focus: the arrow keys move along a layer's curve (left, right) and between the
// layers (up, down), a live region reading each point as the hover writes it; under it a
// summary of each layer's norm at the first and the last step.

import { fillOptions } from "../../../core/dom.js";
import { baseLayout, draw, headColor } from "../../../core/theme.js";
import { EVERY } from "../../../core/trainrun.js";
import { readable } from "../../../core/numbers.js";
import { plotlyOf } from "../../../core/plotly.js";
import { describe, keyCursor } from "../../../views/access.js";

/** @typedef {import("../../../core/types.js").TrainRun} TrainRun */

/**
 * One variant's gradient norm per layer and step (log scale).
 * @param {HTMLElement} card
 * @param {{run: TrainRun}} data
 * @param {{variant: number}} sel
 * @param {{onSelect: (change: {variant: number}) => void}} callbacks
 */
export function render(card, data, sel, callbacks) {
  const picker = /** @type {HTMLSelectElement} */ (card.querySelector("[data-role=variant]"));
  fillOptions(
    picker,
    data.run.variants.map((v, i) => [i, v.label || "model"]),
    sel.variant,
  );
  /** @type {HTMLElement} */ (picker.parentElement).hidden = data.run.variants.length < 2;
  picker.onchange = () => callbacks.onSelect({ variant: Number(picker.value) });
  const v = data.run.variants[sel.variant];
  const h = v.history;
  const layers = h.grad_norms[0]?.length ?? v.arch.layers;
  const k = EVERY(h.step.length);
  const keep = (/** @type {number} */ j) => j % k === 0 || j === h.step.length - 1;
  const x = h.step.filter((_, j) => keep(j));
  // An encoder-decoder's norms are the encoder's blocks, then the decoder's.
  const split = data.run.probe.source ? v.arch.layers : 0;
  const name = (/** @type {number} */ l) =>
    !split ? `layer ${l + 1}` : l < split ? `encoder ${l + 1}` : `decoder ${l - split + 1}`;
  const traces = Array.from({ length: layers }, (_, l) => ({
    type: "scatter",
    mode: "lines",
    uid: `grad-${l}`,
    name: name(l),
    x,
    y: h.grad_norms.filter((_, j) => keep(j)).map((g) => g[l]),
    customdata: h.grad_norms.filter((_, j) => keep(j)).map((g) => readable(g[l])),
    line: { color: headColor(l), width: 1.4, dash: split && l < split ? "dot" : "solid" },
    hovertemplate: `${name(l)}<br>step %{x}: %{customdata}<extra></extra>`,
  }));
  const plot = /** @type {HTMLElement} */ (card.querySelector("[data-role=plot]"));
  const ys = traces.flatMap((t) => t.y).filter((y) => y > 0);
  const ticks = logTicks(Math.min(...ys), Math.max(...ys));
  const first = h.grad_norms[0];
  const last = h.grad_norms[h.grad_norms.length - 1];
  const text = describe(plot, {
    summary: !last
      ? "Gradient norms: no steps yet."
      : `Gradient norm${data.run.variants.length > 1 ? ` of ${v.label || "model"}` : ""}, step ` +
        `${h.step[0]} → ${h.step[h.step.length - 1].toLocaleString("en-US")}: ` +
        traces.map((t, l) => `${t.name} ${readable(first[l])} → ${readable(last[l])}`).join(", ") +
        ".",
  });
  keyCursor(plot, text.live, {
    rows: layers,
    cols: x.length,
    describedBy: text.summary.id,
    label:
      "Gradient norm per layer and step, line plot (log scale). Left and right arrows move " +
      "along the steps, up and down between the layers.",
    text: (l, j) => `${traces[l].name}, step ${x[j]}: ${readable(traces[l].y[j])}`,
    show: (l, j) => plotlyOf(plot).Fx.hover(plot, [{ curveNumber: l, pointNumber: j }]),
    hide: () => plotlyOf(plot).Fx.unhover(plot),
  });
  return draw(
    plot,
    traces,
    baseLayout({
      margin: { l: 56, r: 12, t: 30, b: 44 },
      legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
      xaxis: { title: { text: "step" }, range: [0, data.run.steps], zeroline: false },
      yaxis: { title: { text: "gradient norm" }, type: "log", ...ticks },
    }),
    "attnviz-gradients",
  );
}

/**
 * A log axis's ticks over [lo, hi]: Plotly's decades when the values span two or more, else
 * 1, 2 and 5 of each decade (1 to 9 when that gives fewer than three), written out in full
 * ("0.3", not Plotly's bare digit "3" between decades).
 * @param {number} lo @param {number} hi
 * @returns {{dtick?: number, tickvals?: number[], ticktext?: string[]}}
 */
export function logTicks(lo, hi) {
  if (!(lo > 0) || !(hi >= lo)) return { dtick: 1 };
  if (Math.log10(hi / lo) >= 2) return { dtick: 1 };
  const pick = (/** @type {number[]} */ digits) => {
    const out = [];
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
      for (const d of digits) {
        const v = Number((d * 10 ** e).toPrecision(1));
        if (v >= lo / 1.05 && v <= hi * 1.05) out.push(v);
      }
    }
    return out;
  };
  let vals = pick([1, 2, 5]);
  if (vals.length < 3) vals = pick([1, 2, 3, 4, 5, 6, 7, 8, 9]);
  return { tickvals: vals, ticktext: vals.map((v) => String(v)) };
}
