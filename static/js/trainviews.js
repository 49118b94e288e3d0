// The Train mode's views, each render(container, data, sel, callbacks): the loss curves of every
// variant, one variant's gradient norm per layer, and every variant's heads at a checkpoint
// (from the run's 8-bit snapshots, drawn as the model view draws a trace's thumbnails). An
// encoder-decoder's snapshots hold three attentions (AttentionKind): the view shows the chosen.

import { el } from "./dom.js";
import * as heatcanvas from "./heatcanvas.js";
import * as modelview from "./modelview.js";
import { fmt } from "./numbers.js";
import { baseLayout, draw, headColor, plotText } from "./theme.js";

/** @typedef {import("./types.js").NDArray} NDArray */
/** @typedef {import("./types.js").TrainRun} TrainRun */
/** @typedef {import("./types.js").TrainCheckpoint} TrainCheckpoint */
/** @typedef {import("./types.js").AttentionKind} AttentionKind */
/** @typedef {import("./types.js").Snapshot} Snapshot */

/** @type {WeakMap<object, {values: NDArray, scale: NDArray, pool: number, size: number}>} */
const decoded = new WeakMap();

/**
 * The snapshot of one kind of attention at a checkpoint: the self-attention when the run has
 * no other (a decoder-only model).
 * @param {TrainCheckpoint} cp @param {AttentionKind} kind
 * @returns {Snapshot}
 */
export function snapshotOf(cp, kind) {
  return (kind === "cross" ? cp.cross : kind === "encoder" ? cp.encoder : null) ?? cp.thumbs;
}

/**
 * A checkpoint's snapshot as the model view's thumbnails: values [L][H][T][S] uint8 and scale
 * [L][H] (weight ~ value * scale / 255). Decoded once per snapshot.
 * @param {TrainCheckpoint} cp @param {AttentionKind} [kind]
 */
export function thumbsOf(cp, kind = "self") {
  const snap = snapshotOf(cp, kind);
  let t = decoded.get(snap);
  if (!t) {
    const raw = atob(snap.values);
    const data = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) data[i] = raw.charCodeAt(i);
    const shape = snap.shape;
    t = {
      values: { dtype: "U8", shape, data },
      scale: { dtype: "F32", shape: shape.slice(0, 2), data: new Float32Array(snap.scale.flat()) },
      pool: 1,
      size: shape[3],
    };
    decoded.set(snap, t);
  }
  return t;
}

/**
 * One head of a checkpoint as a T x S matrix of weights (value * scale / 255: within half a
 * step of 8 bits of the true weight).
 * @param {TrainCheckpoint} cp @param {number} layer @param {number} head
 * @param {AttentionKind} [kind]
 * @returns {NDArray}
 */
export function headMatrix(cp, layer, head, kind = "self") {
  const t = thumbsOf(cp, kind);
  const [, H, T, S] = t.values.shape;
  const k = layer * H + head;
  const scale = t.scale.data[k] / 255;
  const data = new Float32Array(T * S);
  const src = t.values.data;
  for (let i = 0; i < T * S; i++) data[i] = src[k * T * S + i] * scale;
  return { dtype: "F32", shape: [T, S], data };
}

/** What each attention is called, and what its rows and columns are. */
export const ATTENTION = /** @type {const} */ ({
  cross: { name: "cross-attention", axes: ["decoder, writing", "source"] },
  self: { name: "decoder self-attention", axes: ["query", "key"] },
  encoder: { name: "encoder self-attention", axes: ["source query", "source key"] },
});

/**
 * The labels of one kind of attention's columns and rows, and its axes, on tokens: the source's
 * and the decoder's for an encoder-decoder (whose cross-attention rows are labelled by the
 * letter each writes), else the probe's.
 * @param {{source?: string[] | null, tokens: string[], writes?: string[] | null}} on
 * @param {AttentionKind} kind
 * @returns {{labels: string[], rowLabels: string[], axes: [string, string]}}
 */
export function attentionAxes(on, kind) {
  if (!on.source || kind === "self") {
    return { labels: on.tokens, rowLabels: on.tokens, axes: ["query", "key"] };
  }
  const axes = /** @type {[string, string]} */ ([...ATTENTION[kind].axes]);
  if (kind === "encoder") return { labels: on.source, rowLabels: on.source, axes };
  return { labels: on.source, rowLabels: on.writes ?? on.tokens, axes };
}

/**
 * The checkpoint steps the slider runs over: while the run trains, its schedule (and any
 * checkpoint off it, taken where it was stopped); once it has ended, the steps its variants
 * have checkpoints at, and those alone (a cancelled run has fewer than its schedule).
 * @param {TrainRun} run
 * @returns {number[]}
 */
export function shownSteps(run) {
  const have = run.variants.flatMap((v) => v.checkpoints.map((c) => c.step));
  const steps = new Set(run.state === "running" ? [...run.checkpoint_steps, ...have] : have);
  return [...steps].sort((a, b) => a - b);
}

/**
 * Why a variant has no checkpoint at a step: it has not got there yet, or it stopped before.
 * @param {TrainRun["variants"][number]} v @param {TrainRun} run
 */
function missing(v, run) {
  if (run.state === "running" && (v.state === "running" || v.state === "waiting")) return "not there yet";
  const last = v.checkpoints[v.checkpoints.length - 1];
  return last ? `stopped at step ${last.step}` : "not trained: the run ended before it";
}

/**
 * A variant's steps and its held-out loss at its last checkpoint: "300 steps, held-out 2.712".
 * @param {TrainRun["variants"][number]} v
 */
export function variantFigures(v) {
  const last = v.checkpoints[v.checkpoints.length - 1];
  const n = v.history.step.length;
  return `${n.toLocaleString("en")} step${n === 1 ? "" : "s"}${last ? `, held-out ${fmt(last.heldout, 3)}` : ""}`;
}

/** Every n-th point of a long curve (and the last): a plot of 5,000 steps needs no more. */
const EVERY = (/** @type {number} */ n) => Math.max(1, Math.ceil(n / 1500));

/**
 * Loss: each variant's batch loss per step (a line) and held-out loss at its checkpoints (dots);
 * the bigram baseline dashed, when the task has one.
 * @param {HTMLElement} container
 * @param {{run: TrainRun}} data
 * @param {{variant: number}} sel the variant drawn thicker
 */
export function renderLoss(container, data, sel) {
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

/**
 * One variant's gradient norm per layer and step (log scale).
 * @param {HTMLElement} container
 * @param {{run: TrainRun}} data
 * @param {{variant: number}} sel
 */
export function renderGrads(container, data, sel) {
  const v = data.run.variants[sel.variant];
  const h = v.history;
  const layers = h.grad_norms[0]?.length ?? v.arch.layers;
  const k = EVERY(h.step.length);
  const keep = (/** @type {number} */ j) => j % k === 0 || j === h.step.length - 1;
  const x = h.step.filter((_, j) => keep(j));
  // An encoder-decoder's norms are the encoder's blocks, then the decoder's.
  const split = data.run.probe.source ? v.arch.layers : 0;
  const name = (/** @type {number} */ l) => !split ? `layer ${l + 1}`
    : l < split ? `encoder ${l + 1}` : `decoder ${l - split + 1}`;
  const traces = Array.from({ length: layers }, (_, l) => ({
    type: "scatter", mode: "lines", uid: `grad-${l}`, name: name(l), x,
    y: h.grad_norms.filter((_, j) => keep(j)).map((g) => g[l]),
    line: { color: headColor(l), width: 1.4, dash: split && l < split ? "dot" : "solid" },
    hovertemplate: `${name(l)}<br>step %{x}: %{y:.4g}<extra></extra>`,
  }));
  return draw(container, traces, baseLayout({
    margin: { l: 56, r: 12, t: 30, b: 44 },
    legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" },
    xaxis: { title: { text: "step" }, range: [0, data.run.steps], zeroline: false },
    yaxis: { title: { text: "gradient norm" }, type: "log", dtick: 1 },
  }), "attnviz-gradients");
}

/**
 * Every variant's heads at one checkpoint, a grid (layers x heads) per variant, labelled, side
 * by side where the width allows.
 * @param {HTMLElement} container
 * @param {{run: TrainRun, step: number | undefined}} data step: the checkpoint's
 * @param {{variant: number, layer: number, head: number, attention: AttentionKind}} sel
 * @param {{onSelect: (variant: number, layer: number, head: number) => void}} callbacks
 */
export function renderHeads(container, data, sel, callbacks) {
  const { run, step } = data;
  // The narrowest a variant's grid goes before the next one wraps below it (views.css).
  container.style.setProperty("--t-heads", String(Math.max(...run.variants.map((v) => v.arch.heads))));
  if (container.childElementCount !== run.variants.length) {
    container.replaceChildren(...run.variants.map((v, i) => el("div", { className: "t-variant",
      dataset: { variant: String(i) } }, [
      el("p", { className: "t-variant-label" }),
      el("div", { className: "mv-grid", role: "group", "aria-label": `Heads of ${v.label || "the model"}` }),
    ])));
  }
  run.variants.forEach((v, i) => {
    const box = /** @type {HTMLElement} */ (container.children[i]);
    const grid = /** @type {HTMLElement} */ (box.querySelector(".mv-grid"));
    const cp = v.checkpoints.find((c) => c.step === step);
    const label = /** @type {HTMLElement} */ (box.querySelector(".t-variant-label"));
    label.textContent = `${v.label || "model"} · ${cp ? `step ${step} · held-out ${fmt(cp.heldout, 3)}` : missing(v, run)}`;
    box.classList.toggle("chosen", i === sel.variant);
    grid.hidden = !cp;
    if (!cp) return;
    const on = i === sel.variant;
    modelview.render(grid, { layers: v.arch.layers, heads: v.arch.heads, thumbs: thumbsOf(cp, sel.attention), entropy: null },
      { layer: on ? sel.layer : -1, head: on ? sel.head : -1 },
      { onSelect: (layer, head) => callbacks.onSelect(i, layer, head) });
  });
}

/**
 * What an encoder-decoder wrote when asked (POST /api/train/{id}/decode): the answer, right or
 * wrong, and the chosen head of the chosen attention on its last pass, exact (float32).
 * @param {HTMLElement} container
 * @param {{decoded: import("./types.js").TrainDecoded | null}} data
 * @param {{layer: number, head: number, attention: AttentionKind}} sel
 */
export function renderDecoded(container, data, sel) {
  if (!container.querySelector(":scope > .t-try-out")) {
    container.replaceChildren(el("p", { className: "readout t-try-out", "aria-live": "polite" }),
      el("figure", { className: "figure" }, [el("div", { className: "heat-large t-try-heat" }),
        el("figcaption", {}, [el("span", { textContent: "The chosen head (pick it above, with the " +
          "attention) on the model's last pass over what it wrote: exact weights (float32)." })])]));
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
  out.replaceChildren(el("span", { className: "dim", textContent: `${d.source.slice(0, -1).join("")} → ` }),
    el("b", { textContent: d.output || "(nothing)" }),
    el("span", { className: right ? "holds" : "fails", textContent: right ? " ✓" : ` ✗ (the answer is ${d.expected})` }));
  const { layer, head, attention } = sel;
  const rows = attention === "encoder" ? d.encoder : attention === "cross" ? d.cross : d.self;
  const l = Math.min(layer, rows.length - 1);
  const m = rows[l][head];
  const matrix = { dtype: /** @type {"F32"} */ ("F32"), shape: [m.length, m[0].length], data: new Float32Array(m.flat()) };
  heatcanvas.render(/** @type {HTMLElement} */ (container.querySelector(".t-try-heat")), {
    ...attentionAxes({ source: d.source, tokens: d.tokens, writes: d.writes }, attention),
    matrix, title: `${ATTENTION[attention].name}, layer ${l + 1}, head ${head + 1}` });
}

/**
 * The runs this server keeps (GET /api/train), newest first: each one's task, state, and its
 * variants' steps and held-out loss, with a button to open it; the run open is marked.
 * @param {HTMLElement} container
 * @param {{runs: import("./types.js").TrainRunSummary[] | null}} data null: not read (yet)
 * @param {{open: string | null}} sel the id of the run open
 * @param {{onOpen: (id: string) => void}} callbacks
 */
export function renderRuns(container, data, sel, callbacks) {
  const runs = data.runs;
  if (!runs) {
    container.replaceChildren();
    return;
  }
  const item = (/** @type {import("./types.js").TrainRunSummary} */ r) => {
    const what = r.preset ? `preset ${r.preset}` : r.compare ? `${r.task}, compare ${r.compare}` : r.task;
    const figures = r.variants.map((v) => `${v.label ? `${v.label}: ` : ""}${v.steps.toLocaleString("en")} / ` +
      `${r.steps.toLocaleString("en")} steps${v.heldout === null ? "" : `, held-out ${fmt(v.heldout, 3)}`}`);
    const open = r.id === sel.open;
    const button = open ? el("span", { className: "dim", textContent: "shown above" })
      : el("button", { type: "button", textContent: "Open", "aria-label": `Open: run ${r.id}` });
    if (!open) button.addEventListener("click", () => callbacks.onOpen(r.id));
    return el("li", { className: `t-run-item${open ? " open" : ""}`, dataset: { run: r.id, state: r.state } }, [
      el("span", { className: "t-model-name", textContent: r.id }),
      el("span", { className: "dim", textContent: `${what} · ${r.state} · ${figures.join(" · ")}` }),
      button,
    ]);
  };
  container.replaceChildren(
    el("h3", { textContent: "Runs on this server" }),
    runs.length ? el("ul", {}, runs.map(item))
      : el("p", { className: "hint", textContent: "None yet. A run you train is listed here while the server keeps it." }),
  );
}
