// The Train tab's loss: each variant's batch loss per step and its held-out loss at the
// checkpoints, the task's bigram baseline dashed when it has one.
// render(container, data, sel): the container is the plot.

import { fmt } from "../core/numbers.js";
import { EVERY } from "../core/trainrun.js";
import { baseLayout, draw, headColor, plotText } from "../core/theme.js";

/** @typedef {import("../core/types.js").TrainRun} TrainRun */

/**
 * Loss: each variant's batch loss per step (a line) and held-out loss at its checkpoints (dots);
 * the bigram baseline dashed, when the task has one.
 * @param {HTMLElement} container
 * @param {{run: TrainRun}} data
 * @param {{variant: number}} sel the variant drawn thicker
 */
export function render(container, data, sel) {
  const { run } = data;
  /** @type {object[]} */
  const traces = [];
  run.variants.forEach((v, i) => {
    const name = plotText(v.label || "model");
    const color = headColor(i);
    const k = EVERY(v.history.step.length);
    const x = v.history.step.filter((_, j) => j % k === 0 || j === v.history.step.length - 1);
    const y = v.history.loss.filter((_, j) => j % k === 0 || j === v.history.loss.length - 1);
    traces.push({ type: "scatter", mode: "lines", uid: `train-${i}`, name, x, y, legendgroup: name,
      line: { color, width: i === sel.variant ? 2.2 : 1.2 }, opacity: 0.85,
      hovertemplate: `${name}<br>step %{x}: batch loss %{y:.4f}<extra></extra>` });
    traces.push({ type: "scatter", mode: "markers", uid: `heldout-${i}`, name: `${name} (held-out)`,
      legendgroup: name, showlegend: false,
      x: v.checkpoints.map((c) => c.step), y: v.checkpoints.map((c) => c.heldout),
      marker: { color, size: 7, line: { color: "#fff", width: 1 } },
      hovertemplate: `${name}<br>step %{x}: held-out loss %{y:.4f}<extra></extra>` });
  });
  /** @type {object[]} */
  const shapes = [];
  if (run.baseline !== null && run.baseline !== undefined) {
    shapes.push({ type: "line", xref: "paper", x0: 0, x1: 1, y0: run.baseline, y1: run.baseline,
      line: { color: "#8a93a3", width: 1.5, dash: "dash" } });
  }
  return draw(container, traces, baseLayout({
    margin: { l: 56, r: 12, t: run.variants.length > 1 ? 30 : 12, b: 44 },
    showlegend: run.variants.length > 1,
    legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
    xaxis: { title: { text: "step" }, range: [0, run.steps], zeroline: false },
    yaxis: { title: { text: "loss (nats)" }, rangemode: "tozero" },
    shapes,
    annotations: shapes.length ? [{ xref: "paper", x: 1, y: run.baseline, xanchor: "right", yanchor: "bottom",
      text: `bigram ${fmt(run.baseline, 3)}`, showarrow: false, font: { size: 11, color: "#5b6475" } }] : [],
  }), "attnviz-loss");
}
