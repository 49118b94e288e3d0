// The Train tab's gradient norms: one variant's norm per layer and step (log scale), with the
// card's variant picker (shown when the run has more than one).
// render(card, data, sel, callbacks): the card holds [data-role=variant] and [data-role=plot].
// The plot takes focus: the arrow keys move along a layer's curve (left, right) and between the
// layers (up, down), a live region reading each point as the hover writes it; under it a
// summary of each layer's norm at the first and the last step.

import { fillOptions } from "../../../core/dom.js";
import { baseLayout, draw, headColor } from "../../../core/theme.js";
import { EVERY } from "../../../core/trainrun.js";
import { readableProse } from "../../../core/numbers.js";
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
    customdata: h.grad_norms.filter((_, j) => keep(j)).map((g) => readableProse(g[l])),
    line: { color: headColor(l), width: 1.4, dash: split && l < split ? "dot" : "solid" },
    hovertemplate: `${name(l)}<br>step %{x}: %{customdata}<extra></extra>`,
  }));
  const plot = /** @type {HTMLElement} */ (card.querySelector("[data-role=plot]"));
  const ys = traces.flatMap((t) => t.y).filter((y) => y > 0);
  const ticks = logTicks(Math.min(...ys), Math.max(...ys));
  const text = describe(plot, { summary: gradsSummary(data.run, sel.variant, name) });
  keyCursor(plot, text.live, {
    rows: layers,
    cols: x.length,
    describedBy: text.summary.id,
    label:
      "Gradient norm per layer and step, line plot (log scale). Left and right arrows move " +
      "along the steps, up and down between the layers.",
    text: (l, j) => `${traces[l].name}, step ${x[j]}: ${readableProse(traces[l].y[j])}`,
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
      yaxis: { title: { text: "gradient norm" }, type: "log", automargin: true, ...ticks },
    }),
    "attnviz-gradients",
  );
}

/**
 * The plot's summary: each layer's norm at the first and the last step, as a sentence says a
 * number (readableProse: 3 significant digits, "about 0.00008" under 0.001, "practically zero"
 * under 0.000001, never an exponent such as "3.2e-9").
 * @param {TrainRun} run @param {number} variant @param {(layer: number) => string} name
 */
export function gradsSummary(run, variant, name) {
  const v = run.variants[variant];
  const h = v.history;
  const first = h.grad_norms[0];
  const last = h.grad_norms[h.grad_norms.length - 1];
  if (!last) return "Gradient norms: no steps yet.";
  return (
    `Gradient norm${run.variants.length > 1 ? ` of ${v.label || "model"}` : ""}, step ` +
    `${h.step[0]} → ${h.step[h.step.length - 1].toLocaleString("en-US")}: ` +
    last.map((_, l) => `${name(l)} ${readableProse(first[l])} → ${readableProse(last[l])}`).join(", ") +
    "."
  );
}

const SUPERSCRIPT = "⁰¹²³⁴⁵⁶⁷⁸⁹";

/**
 * A power of ten as a tick reads it: in full from 0.0001 to 10000 ("0.001", "100"), past that
 * as a power ("10⁻⁵", "10⁶"; short enough for the axis's margin), never Plotly's "1μ" or "1e-7".
 * @param {number} e the exponent
 */
export function decade(e) {
  if (Math.abs(e) <= 4) return e < 0 ? `0.${"0".repeat(-e - 1)}1` : `1${"0".repeat(e)}`;
  return `10${e < 0 ? "⁻" : ""}${[...String(Math.abs(e))].map((d) => SUPERSCRIPT[Number(d)]).join("")}`;
}

/**
 * A log axis's ticks over [lo, hi], written out as a person reads them: when the values span two
 * decades or more, the decades (every second or third past eight of them) as decade() writes
 * them; else 1, 2 and 5 of each decade (1 to 9 when that gives fewer than three), in full
 * ("0.3", not Plotly's bare digit "3" between decades). No values: Plotly's own decades.
 * @param {number} lo @param {number} hi
 * @returns {{dtick?: number, tickvals?: number[], ticktext?: string[]}}
 */
export function logTicks(lo, hi) {
  if (!(lo > 0) || !(hi >= lo) || !Number.isFinite(hi)) return { dtick: 1 };
  if (Math.log10(hi / lo) >= 2) {
    const [e0, e1] = [Math.floor(Math.log10(lo)), Math.ceil(Math.log10(hi))];
    const every = Math.ceil((e1 - e0 + 1) / 8);
    const es = [];
    for (let e = e0; e <= e1; e += every) es.push(e);
    return { tickvals: es.map((e) => Number(`1e${e}`)), ticktext: es.map(decade) };
  }
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
