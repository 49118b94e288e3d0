// The Train tab's loss: each variant's batch loss per step and its held-out loss at the
// checkpoints, the task's bigram baseline dashed when it has one.
// render(container, data, sel): the container is the plot. It takes focus: the arrow keys move
// along a curve (left, right) and between the models (up, down), a live region reading each
// point as the hover writes it; under it a summary ("loss 3.26 → 0.41 over 300 steps") and the
// held-out losses at the checkpoints in a table.

import { exact, readable as readableNumber } from "../../../core/numbers.js";
import { plotlyOf } from "../../../core/plotly.js";
import { EVERY } from "../../../core/trainrun.js";
import { baseLayout, draw, headColor, plotText } from "../../../core/theme.js";
import { describe, keyCursor } from "../../../views/access.js";
import { curveText } from "../../../views/describe.js";

/** @typedef {import("../../../core/types.js").TrainRun} TrainRun */

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
    traces.push({
      type: "scatter",
      mode: "lines",
      uid: `train-${i}`,
      name,
      x,
      y,
      legendgroup: name,
      line: { color, width: i === sel.variant ? 2.2 : 1.2 },
      opacity: 0.85,
      // the hover's number as the cursor reads it: 3 significant digits (numbers.js readable)
      customdata: y.map((l) => readableNumber(l)),
      hovertemplate: `${name}<br>step %{x}: batch loss %{customdata}<extra></extra>`,
    });
    traces.push({
      type: "scatter",
      mode: "markers",
      uid: `heldout-${i}`,
      name: `${name} (held-out)`,
      legendgroup: name,
      showlegend: false,
      x: v.checkpoints.map((c) => c.step),
      y: v.checkpoints.map((c) => c.heldout),
      marker: { color, size: 7, line: { color: "#fff", width: 1 } },
      customdata: v.checkpoints.map((c) => readableNumber(c.heldout)),
      hovertemplate: `${name}<br>step %{x}: held-out loss %{customdata}<extra></extra>`,
    });
  });
  readable(container, run);
  /** @type {object[]} */
  const shapes = [];
  if (run.baseline !== null && run.baseline !== undefined) {
    shapes.push({
      type: "line",
      xref: "paper",
      x0: 0,
      x1: 1,
      y0: run.baseline,
      y1: run.baseline,
      line: { color: "#8a93a3", width: 1.5, dash: "dash" },
    });
  }
  return draw(
    container,
    traces,
    baseLayout({
      margin: { l: 56, r: 12, t: run.variants.length > 1 ? 30 : 12, b: 44 },
      showlegend: run.variants.length > 1,
      legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
      xaxis: { title: { text: "step" }, range: [0, run.steps], zeroline: false },
      yaxis: { title: { text: "loss (nats)" }, rangemode: "tozero" },
      shapes,
      annotations: shapes.length
        ? [
            {
              xref: "paper",
              x: 1,
              y: run.baseline,
              xanchor: "right",
              yanchor: "bottom",
              text: `bigram ${readableNumber(run.baseline)}`,
              showarrow: false,
              font: { size: 11, color: "#5b6475" },
            },
          ]
        : [],
    }),
    "attnviz-loss",
  );
}

/**
 * The loss plot's text alternative and keyboard cursor (a row per model, a column per drawn
 * step of its batch loss).
 * @param {HTMLElement} plot @param {TrainRun} run
 */
function readable(plot, run) {
  const many = run.variants.length > 1;
  const name = (/** @type {TrainRun["variants"][number]} */ v) => v.label || "model";
  const summary =
    run.variants
      .map((v) => {
        const last = v.checkpoints[v.checkpoints.length - 1];
        return (
          `${many ? `${name(v)}: ` : ""}${curveText("loss", v.history.step, v.history.loss)}` +
          (last ? `, held-out ${readableNumber(last.heldout)} at step ${last.step.toLocaleString("en-US")}` : "")
        );
      })
      .join("; ") +
    (run.baseline !== null && run.baseline !== undefined
      ? `; the bigram baseline ${readableNumber(run.baseline)}`
      : "");
  const steps = [...new Set(run.variants.flatMap((v) => v.checkpoints.map((c) => c.step)))].sort((a, b) => a - b);
  const text = describe(plot, {
    summary: `${summary}.`,
    table: steps.length
      ? {
          caption: "Held-out loss at each checkpoint (nats)",
          head: ["step", ...run.variants.map(name)],
          rows: steps.map((s) => [
            s.toLocaleString("en-US"),
            ...run.variants.map((v) => {
              const c = v.checkpoints.find((cp) => cp.step === s);
              return c ? exact(c.heldout) : "–";
            }),
          ]),
        }
      : null,
  });
  // The drawn points: every k-th step and the last, as render draws them.
  const drawn = run.variants.map((v) => {
    const k = EVERY(v.history.step.length);
    const keep = (/** @type {number} */ j) => j % k === 0 || j === v.history.step.length - 1;
    return { x: v.history.step.filter((_, j) => keep(j)), y: v.history.loss.filter((_, j) => keep(j)) };
  });
  const cols = Math.max(0, ...drawn.map((d) => d.x.length));
  keyCursor(plot, text.live, {
    rows: run.variants.length,
    cols,
    describedBy: text.summary.id,
    label:
      `Loss per step, line plot${many ? ` of ${run.variants.length} models` : ""}. ` +
      `Left and right arrows move along the steps${many ? ", up and down between the models" : ""}.`,
    text: (i, j) => {
      const d = drawn[i];
      if (!d.x.length) return `${name(run.variants[i])}: no steps yet`;
      const p = Math.min(j, d.x.length - 1);
      return `${name(run.variants[i])}, step ${d.x[p]}: batch loss ${readableNumber(d.y[p])}`;
    },
    show: (i, j) => {
      const n = drawn[i].x.length;
      if (n) plotlyOf(plot).Fx.hover(plot, [{ curveNumber: 2 * i, pointNumber: Math.min(j, n - 1) }]);
    },
    hide: () => plotlyOf(plot).Fx.unhover(plot),
  });
}
