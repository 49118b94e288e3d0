// Model view: every layer x head as a small heatmap on a <canvas> (one per cell, in a grid of
// buttons), and the chosen one drawn large as a Plotly heatmap with exact values on hover.

import { WEIGHT_SCALE, baseLayout, draw, exact, plotText, tokenAxis } from "./theme.js";

const hex = (s) => [1, 3, 5].map((k) => parseInt(s.slice(k, k + 2), 16));

/** 256 RGB colours along WEIGHT_SCALE (weight 0 -> white-blue, 1 -> dark blue). */
const LUT = (() => {
  const out = new Uint8ClampedArray(256 * 3);
  for (let i = 0; i < 256; i++) {
    const t = i / 255;
    let k = 1;
    while (k < WEIGHT_SCALE.length - 1 && WEIGHT_SCALE[k][0] < t) k++;
    const [t0, c0] = WEIGHT_SCALE[k - 1];
    const [t1, c1] = WEIGHT_SCALE[k];
    const f = t1 > t0 ? (t - t0) / (t1 - t0) : 0;
    const a = hex(c0);
    const b = hex(c1);
    for (let c = 0; c < 3; c++) out[i * 3 + c] = Math.round(a[c] + (b[c] - a[c]) * f);
  }
  return out;
})();

/** The CSS gradient of the weight colour scale, for the legend. */
export const WEIGHT_GRADIENT = `linear-gradient(to right, ${WEIGHT_SCALE.map(([t, c]) => `${c} ${t * 100}%`).join(", ")})`;

/** An n x n image of matrix m (weights 0..1), one pixel per cell. */
function matrixImage(m) {
  const n = m.length;
  const img = new ImageData(Math.max(n, 1), Math.max(n, 1));
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      const v = Math.min(1, Math.max(0, m[i][j] ?? 0));
      const c = Math.round(v * 255) * 3;
      const p = (i * n + j) * 4;
      img.data[p] = LUT[c];
      img.data[p + 1] = LUT[c + 1];
      img.data[p + 2] = LUT[c + 2];
      img.data[p + 3] = 255;
    }
  }
  return img;
}

/** Paint matrix m over the whole of `canvas`, `size` pixels square (default: its CSS box at
 * the device's pixel ratio). */
function paint(canvas, m, size = Math.max(8, Math.round(canvas.clientWidth * (window.devicePixelRatio || 1)))) {
  if (canvas.width !== size) {
    canvas.width = size;
    canvas.height = size;
  }
  const src = document.createElement("canvas");
  src.width = Math.max(m.length, 1);
  src.height = src.width;
  src.getContext("2d").putImageData(matrixImage(m), 0, 0);
  const ctx = canvas.getContext("2d");
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(src, 0, 0, size, size);
}

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** Build (once per layers x heads shape) the grid of labelled cell buttons. */
function buildGrid(grid, layers, heads, onSelect) {
  if (grid.dataset.shape === `${layers}x${heads}`) return;
  grid.dataset.shape = `${layers}x${heads}`;
  grid.style.setProperty("--heads", heads);
  const cells = [el("span", "mv-corner", "")];
  for (let h = 0; h < heads; h++) cells.push(el("span", "mv-col", `H${h + 1}`));
  for (let l = 0; l < layers; l++) {
    cells.push(el("span", "mv-row", `L${l + 1}`));
    for (let h = 0; h < heads; h++) {
      const b = el("button", "mv-cell");
      b.type = "button";
      b.dataset.layer = String(l);
      b.dataset.head = String(h);
      b.setAttribute("aria-label", `layer ${l + 1}, head ${h + 1}`);
      b.append(el("canvas"));
      cells.push(b);
    }
  }
  grid.replaceChildren(...cells);
  grid.onclick = (e) => {
    const b = e.target.closest("button.mv-cell");
    if (b) onSelect(Number(b.dataset.layer), Number(b.dataset.head));
  };
  // Arrow keys move between cells; Enter or Space (a button's own keys) opens one.
  grid.onkeydown = (e) => {
    const b = e.target.closest("button.mv-cell");
    const step = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] }[e.key];
    if (!b || !step) return;
    const l = Math.min(layers - 1, Math.max(0, Number(b.dataset.layer) + step[0]));
    const h = Math.min(heads - 1, Math.max(0, Number(b.dataset.head) + step[1]));
    grid.querySelector(`button.mv-cell[data-layer="${l}"][data-head="${h}"]`)?.focus();
    e.preventDefault();
  };
}

/** Draw every cell of the grid from the token view `tv`, marking the selected layer/head. */
export function renderGrid(grid, trace, tv, sel, onSelect) {
  buildGrid(grid, trace.layers, trace.heads, onSelect);
  for (const b of grid.querySelectorAll("button.mv-cell")) {
    const l = Number(b.dataset.layer);
    const h = Number(b.dataset.head);
    paint(b.firstChild, tv.attention(l, h));
    const on = l === sel.layer && h === sel.head;
    b.classList.toggle("selected", on);
    b.setAttribute("aria-pressed", on ? "true" : "false");
    b.title = `layer ${l + 1}, head ${h + 1}: mean entropy ${trace.entropy_mean[l][h].toFixed(2)} nats`;
  }
}

/** Upright key labels only when the longest fits in its column (about 7 px a character). */
function angle(labels, width) {
  const column = Math.max(1, width - 170) / Math.max(1, labels.length); // minus margins, colour bar
  const longest = Math.max(...labels.map((t) => [...t].length));
  return longest * 7 + 6 > column ? -50 : 0;
}

/** The chosen head, large: weights after the token options, exact values on hover. */
export function renderLarge(plotEl, trace, tv, sel) {
  const { layer, head } = sel;
  const z = tv.attention(layer, head);
  const labels = tv.labels;
  const n = labels.length;
  const customdata = z.map((row, i) => row.map((v, j) => [plotText(labels[i]), plotText(labels[j]), exact(v)]));
  const data = [{
    type: "heatmap", uid: "large", z, x: labels.map((_, j) => j), y: labels.map((_, i) => i),
    zmin: 0, zmax: 1, colorscale: WEIGHT_SCALE, customdata,
    hovertemplate: "query <b>%{customdata[0]}</b><br>key <b>%{customdata[1]}</b><br>" +
      "weight %{customdata[2]}<extra></extra>",
    texttemplate: n <= 12 ? "%{z:.2f}" : "", textfont: { size: n <= 8 ? 12 : 10 },
    colorbar: { thickness: 12, title: { text: "attention weight", side: "right", font: { size: 12 } } },
  }];
  const layout = baseLayout({
    title: { text: `Layer ${layer + 1}, head ${head + 1}`, font: { size: 14 }, x: 0.02, xanchor: "left" },
    margin: { l: 80, r: 10, t: 40, b: 70 },
    xaxis: tokenAxis(labels, { title: { text: "key" }, automargin: true, tickangle: angle(labels, plotEl.clientWidth || 500) }),
    yaxis: tokenAxis(labels, { title: { text: "query" }, autorange: "reversed", automargin: true }),
  });
  plotEl.style.height = `${Math.max(380, Math.min(760, 170 + n * 16))}px`;
  return draw(plotEl, data, layout, "attnviz-model-view-head");
}

/** The whole grid as one PNG (labels included), for download. */
export function gridPng(grid, trace, tv) {
  const cell = 64;
  const gap = 4;
  const pad = 28;
  const { layers, heads } = trace;
  const canvas = document.createElement("canvas");
  canvas.width = pad + heads * (cell + gap);
  canvas.height = pad + layers * (cell + gap);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = "#5b6475";
  ctx.font = "12px system-ui, sans-serif";
  ctx.textAlign = "center";
  for (let h = 0; h < heads; h++) ctx.fillText(`H${h + 1}`, pad + h * (cell + gap) + cell / 2, 18);
  ctx.textAlign = "left";
  for (let l = 0; l < layers; l++) {
    ctx.fillText(`L${l + 1}`, 2, pad + l * (cell + gap) + cell / 2 + 4);
    for (let h = 0; h < heads; h++) {
      const c = document.createElement("canvas");
      paint(c, tv.attention(l, h), cell);
      ctx.drawImage(c, pad + h * (cell + gap), pad + l * (cell + gap), cell, cell);
    }
  }
  return canvas.toDataURL("image/png");
}
