// Every head of a model clustered by the similarity of its attention patterns on a set of texts
// (the corpus response's `clusters`): the heads' similarity matrix in the dendrogram's leaf
// order, on one <canvas>, with each cluster outlined along the diagonal and the head shown in
// the map marked; a list of the clusters under it. A click on a cell, or Enter on the keyboard's
// cursor (the canvas takes focus; the arrow keys move it and a polite live region reads the
// cell), picks the row's head. render(container, data, selection, callbacks).

import { el, sizeCanvas } from "../core/dom.js";
import { FONT, GRID, SCORE_LUT, SELECTED, TEXT, TEXT_DIM, WEIGHT_LUT } from "../core/theme.js";
import { describe, keyCursor } from "./access.js";
import { cellValue } from "./describe.js";

/** @typedef {import("../core/types.js").HeadClusters} HeadClusters */

const LABEL_PX = 11; // the least room a head's label gets; closer rows label every k-th head
const BAR = 58; // the colour bar and its ticks, right of the matrix
const MAX_SIDE = 620;
export const LISTED = 12; // heads named in a cluster of the summary

/** "L2 H5" (1-based) of head `index` = layer * heads + head. @param {number} index @param {number} heads */
export function headName(index, heads) {
  return `L${Math.floor(index / heads) + 1} H${(index % heads) + 1}`;
}

/**
 * The clusters as runs along the leaf order: each {label, start, end} (end exclusive) of
 * consecutive leaves in one cluster, in order.
 * @param {HeadClusters} c @returns {{label: number, start: number, end: number}[]}
 */
export function runs(c) {
  /** @type {{label: number, start: number, end: number}[]} */
  const out = [];
  c.order.forEach((h, k) => {
    const label = c.labels[h];
    const last = out[out.length - 1];
    if (last && last.label === label) last.end = k + 1;
    else out.push({ label, start: k, end: k + 1 });
  });
  return out;
}

/**
 * Each cluster's heads, in the leaf order: entry c is cluster c's heads (as layer * heads + head).
 * @param {HeadClusters} c @returns {number[][]}
 */
export function members(c) {
  const count = Math.max(0, ...c.labels) + 1;
  /** @type {number[][]} */
  const out = Array.from({ length: count }, () => []);
  for (const h of c.order) out[c.labels[h]].push(h);
  return out;
}

/**
 * The most similar pair of different heads: their positions i < j in the order and the value;
 * null for a single head.
 * @param {HeadClusters} c @returns {{i: number, j: number, v: number} | null}
 */
export function closestPair(c) {
  let best = null;
  for (let i = 0; i < c.order.length; i++) {
    for (let j = i + 1; j < c.order.length; j++) {
      const v = c.similarity[i][j];
      if (best === null || v > best.v) best = { i, j, v };
    }
  }
  return best;
}

/**
 * The matrix in one line: how many heads and clusters, by what; the shown head's cluster and
 * its company; the most similar pair.
 * @param {HeadClusters} c @param {{layer: number, head: number} | null} shown
 */
export function clustersSummary(c, shown) {
  const n = c.order.length;
  const groups = members(c);
  let line = `${n} heads in ${groups.length} cluster${groups.length === 1 ? "" : "s"} by ${c.measure}`;
  if (shown) {
    const me = shown.layer * c.heads + shown.head;
    const g = c.labels[me];
    const others = groups[g].filter((h) => h !== me);
    const named = others
      .slice(0, LISTED)
      .map((h) => headName(h, c.heads))
      .join(", ");
    line +=
      `; ${headName(me, c.heads)}, shown in the map, is in cluster ${g + 1}` +
      (others.length
        ? ` with ${named}${others.length > LISTED ? ` and ${others.length - LISTED} more` : ""}`
        : ", alone");
  }
  const pair = closestPair(c);
  if (pair) {
    line += `; the most similar pair: ${headName(c.order[pair.i], c.heads)} and ${headName(c.order[pair.j], c.heads)} (${cellValue(pair.v)})`;
  }
  return `${line}.`;
}

/**
 * The colour of similarity v: the weight scale from 0 to 1, or the diverging scale from -1 to 1
 * when any similarity is negative.
 * @param {number} v @param {boolean} signed @returns {[number, number, number]}
 */
export function similarityColour(v, signed) {
  const lut = signed ? SCORE_LUT : WEIGHT_LUT;
  const t = signed ? (Math.max(-1, Math.min(1, v)) + 1) / 2 : Math.max(0, Math.min(1, v));
  const c = Math.round(t * 255) * 3;
  return [lut[c], lut[c + 1], lut[c + 2]];
}

/**
 * Draw the heads' similarity matrix and their clusters.
 * @param {HTMLElement} container
 * @param {HeadClusters} data
 * @param {{layer: number, head: number} | null} selection the head the map shows, marked
 * @param {{onPick?: (layer: number, head: number) => void}} [callbacks] a head is picked
 */
export function render(container, data, selection, callbacks = {}) {
  let root = /** @type {HTMLElement & {__clusters?: any}} */ (container.querySelector(":scope > .hcl"));
  if (!root) {
    root = el("div", { className: "hcl" }, [
      el("p", { className: "hcl-title" }),
      el("p", { className: "hcl-measure hint" }),
      el("div", { className: "hcl-body" }, [
        el("canvas", { className: "hcl-canvas" }),
        el("div", { className: "hcl-cursor", hidden: true }),
        el("div", { className: "hcl-tip", hidden: true, role: "tooltip" }),
      ]),
      el("ol", { className: "hcl-list", "aria-label": "The clusters" }),
    ]);
    container.replaceChildren(root);
  }
  const c = data;
  const n = c.order.length;
  const signed = c.similarity.some((row) => row.some((v) => v < 0));
  const groups = members(c);
  /** @type {HTMLElement} */ (root.querySelector(".hcl-title")).textContent =
    `${n} heads' similarity in the dendrogram's order, ${groups.length} cluster${groups.length === 1 ? "" : "s"} outlined`;
  /** @type {HTMLElement} */ (root.querySelector(".hcl-measure")).textContent = `Similarity: ${c.measure}.`;
  const body = /** @type {HTMLElement} */ (root.querySelector(".hcl-body"));
  const canvas = /** @type {HTMLCanvasElement} */ (root.querySelector("canvas"));
  const tip = /** @type {HTMLElement} */ (root.querySelector(".hcl-tip"));
  const cursor = /** @type {HTMLElement} */ (root.querySelector(".hcl-cursor"));
  const ctx = /** @type {CanvasRenderingContext2D} */ (canvas.getContext("2d"));
  const names = c.order.map((h) => headName(h, c.heads));
  const me = selection ? selection.layer * c.heads + selection.head : -1;
  const mine = c.order.indexOf(me);

  // Geometry: labels left and below (tilted), the colour bar right.
  const width = Math.max(260, Math.floor(root.clientWidth || container.clientWidth || 600));
  const font = n <= 40 ? 11 : 10;
  ctx.font = `${font}px ${FONT}`;
  const labelW = Math.ceil(Math.max(...names.map((s) => ctx.measureText(s).width), 10)) + 8;
  const left = labelW + 4;
  const side = Math.max(120, Math.min(MAX_SIDE, width - left - BAR - 8));
  const cell = side / n;
  const every = Math.max(1, Math.ceil(LABEL_PX / cell));
  const top = 4;
  const bottom = Math.ceil(labelW * 0.77) + 10;
  const height = top + side + bottom;
  const wide = left + side + BAR;
  sizeCanvas(canvas, ctx, wide, height);

  const img = new ImageData(n, n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      const [r, g, b] = similarityColour(c.similarity[i][j], signed);
      const o = (i * n + j) * 4;
      img.data[o] = r;
      img.data[o + 1] = g;
      img.data[o + 2] = b;
      img.data[o + 3] = 255;
    }
  }
  const src = document.createElement("canvas");
  src.width = src.height = n;
  /** @type {CanvasRenderingContext2D} */ (src.getContext("2d")).putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(src, left, top, side, side);
  ctx.strokeStyle = GRID;
  ctx.lineWidth = 1;
  ctx.strokeRect(left - 0.5, top - 0.5, side + 1, side + 1);

  // The clusters along the diagonal: a dark frame inside a white one, seen on any colour.
  for (const run of runs(c)) {
    const x = left + run.start * cell;
    const w = (run.end - run.start) * cell;
    ctx.strokeStyle = "#ffffff";
    ctx.lineWidth = 3.5;
    ctx.strokeRect(x, top + run.start * cell, w, w);
    ctx.strokeStyle = TEXT;
    ctx.lineWidth = 1.5;
    ctx.strokeRect(x, top + run.start * cell, w, w);
  }
  // The head shown in the map: its row and column framed.
  if (mine >= 0) {
    ctx.strokeStyle = SELECTED;
    ctx.lineWidth = 2;
    ctx.strokeRect(left + 1, top + mine * cell, side - 2, Math.max(2, cell));
    ctx.strokeRect(left + mine * cell, top + 1, Math.max(2, cell), side - 2);
  }

  // Labels: every k-th head, and always the shown one (bold, in the accent colour).
  ctx.textBaseline = "middle";
  names.forEach((s, k) => {
    const on = k === mine;
    if (!on && (k % every !== 0 || (mine >= 0 && Math.abs(k - mine) < every))) return;
    ctx.font = `${on ? "bold " : ""}${font}px ${FONT}`;
    ctx.fillStyle = on ? SELECTED : TEXT;
    ctx.textAlign = "right";
    ctx.fillText(s, left - 4, top + (k + 0.5) * cell);
    ctx.save();
    ctx.translate(left + (k + 0.5) * cell, top + side + 5);
    ctx.rotate((-50 * Math.PI) / 180);
    ctx.fillText(s, 0, 0);
    ctx.restore();
  });

  // Colour bar.
  const bx = left + side + 10;
  for (let y = 0; y < side; y++) {
    const t = 1 - y / Math.max(1, side - 1);
    const [r, g, b] = similarityColour(signed ? 2 * t - 1 : t, signed);
    ctx.fillStyle = `rgb(${r},${g},${b})`;
    ctx.fillRect(bx, top + y, 12, 1);
  }
  ctx.fillStyle = TEXT_DIM;
  ctx.font = `11px ${FONT}`;
  ctx.textAlign = "left";
  for (const t of [0, 0.5, 1]) ctx.fillText(String(signed ? 2 * t - 1 : t), bx + 16, top + (1 - t) * side);

  // The clusters in words.
  /** @type {HTMLElement} */ (root.querySelector(".hcl-list")).replaceChildren(
    ...groups.map((g, k) =>
      el("li", { className: g.includes(me) ? "hcl-mine" : "" }, [
        el("b", { textContent: `cluster ${k + 1}` }),
        ` (${g.length} head${g.length === 1 ? "" : "s"}): `,
        g.map((h) => headName(h, c.heads)).join(", "),
      ]),
    ),
  );

  // Hover, click and the keyboard's cursor.
  /** @param {MouseEvent} e @returns {[number, number] | null} */
  const at = (e) => {
    const r = canvas.getBoundingClientRect();
    const x = e.clientX - r.left - left;
    const y = e.clientY - r.top - top;
    if (x < 0 || y < 0 || x >= side || y >= side) return null;
    return [Math.min(n - 1, Math.floor(y / cell)), Math.min(n - 1, Math.floor(x / cell))];
  };
  /** @param {number} i @param {number} j */
  const words = (i, j) =>
    `${names[i]} and ${names[j]}: similarity ${cellValue(c.similarity[i][j])} ` +
    `(cluster ${c.labels[c.order[i]] + 1}, cluster ${c.labels[c.order[j]] + 1})`;
  /** @param {number} i @param {number} j */
  const show = (i, j) => {
    tip.hidden = cursor.hidden = false;
    tip.replaceChildren(
      el("span", { textContent: `${names[i]} · ${names[j]}` }),
      el("br"),
      el("span", { textContent: `similarity ${cellValue(c.similarity[i][j])}` }),
      el("br"),
      el("span", { textContent: `clusters ${c.labels[c.order[i]] + 1} and ${c.labels[c.order[j]] + 1}` }),
      ...(callbacks.onPick
        ? [el("br"), el("span", { className: "hcl-do", textContent: `click: ${names[i]} in the map` })]
        : []),
    );
    tip.style.left = `${Math.min(left + (j + 1) * cell + 10, Math.max(0, wide - 180))}px`;
    tip.style.top = `${top + (i + 1) * cell + 8}px`;
    Object.assign(cursor.style, {
      left: `${left + j * cell}px`,
      top: `${top + i * cell}px`,
      width: `${Math.max(3, cell)}px`,
      height: `${Math.max(3, cell)}px`,
    });
  };
  const hide = () => {
    tip.hidden = cursor.hidden = true;
  };
  hide();
  /** @param {number} i */
  const pick = (i) => {
    const h = c.order[i];
    callbacks.onPick?.(Math.floor(h / c.heads), h % c.heads);
  };
  canvas.onmousemove = (e) => {
    const ij = at(e);
    canvas.style.cursor = ij && callbacks.onPick ? "pointer" : "";
    if (ij) show(ij[0], ij[1]);
    else hide();
  };
  canvas.onmouseleave = () => {
    if (document.activeElement !== canvas) hide();
  };
  canvas.onclick = (e) => {
    const ij = at(e);
    if (ij) pick(ij[0]);
  };
  const pair = closestPair(c);
  const text = describe(body, {
    summary: clustersSummary(c, selection),
    table: {
      caption: "Each head's cluster and the head most similar to it",
      head: ["head", "cluster", "most similar head", "similarity"],
      rows: c.order.map((h, i) => {
        let best = -1;
        for (let j = 0; j < n; j++) if (j !== i && (best < 0 || c.similarity[i][j] > c.similarity[i][best])) best = j;
        return [
          names[i],
          String(c.labels[h] + 1),
          best >= 0 ? names[best] : "–",
          best >= 0 ? String(c.similarity[i][best]) : "–",
        ];
      }),
    },
  });
  keyCursor(canvas, text.live, {
    rows: n,
    cols: n,
    describedBy: text.summary.id,
    label:
      `Heads' similarity matrix, ${n} × ${n} in the dendrogram's order. Arrow keys move between cells; ` +
      "Enter shows the row's head in the map.",
    text: words,
    show,
    hide,
    pick: callbacks.onPick ? (i) => pick(i) : undefined,
  });
  // What is drawn, for tests: the geometry and the order.
  root.__clusters = { geometry: { left, top, side, cell }, order: c.order, pair };
}
