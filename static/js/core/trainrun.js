// What a training run's state means, shared by the Train tab's controller, its event reducer
// and its views: the checkpoint steps the slider runs over, a variant's figures, and the 8-bit
// snapshots of a checkpoint decoded into the model view's thumbnails (an encoder-decoder's hold
// three attentions, AttentionKind). Pure (no DOM): the Node tests use it.

import { readable } from "./numbers.js";

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
 * causal: the attention is a causal self-attention (a trained model's, a decoder's own), whose
 * first query sees only itself.
 * @returns {{labels: string[], rowLabels: string[], axes: [string, string], causal: boolean}}
 */
export function attentionAxes(on, kind) {
  if (!on.source || kind === "self") {
    return { labels: on.tokens, rowLabels: on.tokens, axes: ["query", "key"], causal: true };
  }
  const axes = /** @type {[string, string]} */ ([...ATTENTION[kind].axes]);
  if (kind === "encoder") return { labels: on.source, rowLabels: on.source, axes, causal: false };
  return { labels: on.source, rowLabels: on.writes ?? on.tokens, axes, causal: false };
}

/**
 * The checkpoint steps the slider runs over: while the run trains (or waits), its schedule (and any
 * checkpoint off it, taken where it was stopped); once it has ended, the steps its variants
 * have checkpoints at, and those alone (a cancelled run has fewer than its schedule).
 * @param {TrainRun} run
 * @returns {number[]}
 */
export function shownSteps(run) {
  const have = run.variants.flatMap((v) => v.checkpoints.map((c) => c.step));
  const going = run.state === "running" || run.state === "queued";
  const steps = new Set(going ? [...run.checkpoint_steps, ...have] : have);
  return [...steps].sort((a, b) => a - b);
}

/**
 * A variant's steps and its held-out loss at its last checkpoint: "300 steps, held-out 2.71" (readable()).
 * @param {TrainRun["variants"][number]} v
 */
export function variantFigures(v) {
  const last = v.checkpoints[v.checkpoints.length - 1];
  const n = v.history.step.length;
  return `${n.toLocaleString("en")} step${n === 1 ? "" : "s"}${last ? `, held-out ${readable(last.heldout)}` : ""}`;
}

/**
 * A waiting run's place in line and the estimate of its wait, in words: "next in line, about
 * 12 s", "3rd in line, about 40 s", "about 2 min" past 90 s.
 * @param {number | null | undefined} place 1-based
 * @param {number | null | undefined} wait seconds
 */
export function inLine(place, wait) {
  const n = place ?? 1;
  const tail = n % 100 >= 11 && n % 100 <= 13 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" }[n % 10] ?? "th");
  const where = n === 1 ? "next in line" : `${n}${tail} in line`;
  if (wait == null) return where;
  const s = Math.max(0, Math.round(wait));
  const about = s < 1 ? "starting any moment" : s < 90 ? `about ${s} s` : `about ${Math.round(s / 60)} min`;
  return `${where}, ${about}`;
}

/** Every n-th point of a long curve (and the last): a plot of 5,000 steps needs no more. */
export const EVERY = (/** @type {number} */ n) => Math.max(1, Math.ceil(n / 1500));
