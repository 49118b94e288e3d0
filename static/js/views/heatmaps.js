// Heatmaps of the scores and the attention weights of one layer and head (toy lab).
// render(card, data, sel, callbacks): the card holds [data-role=layer|head] pickers and the
// [data-role=scores|weights] plots. Each plot takes focus: the arrow keys move a cursor over
// its cells (Plotly's own hover label marks it) and a live region reads the cell as the hover
// writes it; under each, a summary line and, up to TABLE_MAX tokens, the numbers in a table.

import { fillIndexSelect } from "../core/dom.js";
import { exact, readable, readableCell, readableProse } from "../core/numbers.js";
import { nested } from "../core/compact.js";
import { plotlyOf } from "../core/plotly.js";
import {
  FONT,
  MASKED_GREY,
  SCORE_LUT,
  SCORE_SCALE,
  WEIGHT_LUT,
  WEIGHT_SCALE,
  baseLayout,
  draw,
  plotToken,
  tokenAxis,
} from "../core/theme.js";
import { shownToken, spokenToken } from "../core/tokens.js";
import { describe, keyCursor, matrixTable } from "./access.js";
import { inkOn, strongestText } from "./describe.js";

/** @typedef {import("../core/types.js").NDArray} NDArray */
/** @typedef {import("../core/types.js").TraceMeta} TraceMeta */

const ANNOTATE_MAX = 12; // write the values in the cells up to this many tokens
const SIDE_BY_SIDE_MAX = 7; // more tokens: scores above weights, each the full width
export const TABLE_MAX = 16; // tokens: more get the summary line only

/**
 * Decimals for a cell's text, about three significant digits: 2 up to 10, then fewer.
 * @param {(number | null)[][]} z
 */
function cellDigits(z) {
  let m = 0;
  for (const row of z) for (const v of row) if (v !== null) m = Math.max(m, Math.abs(v));
  return m >= 100 ? 0 : m >= 10 ? 1 : 2;
}

/**
 * The numbers written in the cells, each in the ink (black or white) that its cell's colour
 * needs for AA contrast: annotations, as a heatmap's own text has one colour for every cell.
 * @param {(number | null)[][]} z @param {(v: number) => number} lutIndex the colour table entry of v
 * @param {Uint8ClampedArray} lut @param {number} size
 */
function cellTexts(z, lutIndex, lut, size) {
  if (!size) return [];
  const digits = cellDigits(z);
  return z.flatMap((row, i) =>
    row.flatMap((v, j) => {
      if (v === null) return [];
      const c = Math.max(0, Math.min(255, lutIndex(v))) * 3;
      return [
        {
          x: j,
          y: i,
          text: readableCell(v, digits), // never "1.00" short of 1 nor "0.00" above 0
          showarrow: false,
          captureevents: false,
          font: { size, color: inkOn([lut[c], lut[c + 1], lut[c + 2]]) },
        },
      ];
    }),
  );
}

/** The widest cell text's length in characters. @param {(number | null)[][]} z */
function widestText(z) {
  const digits = cellDigits(z);
  let chars = 0;
  for (const row of z) for (const v of row) if (v !== null) chars = Math.max(chars, readableCell(v, digits).length);
  return chars;
}

/**
 * Draw a heatmap whose title fits the plot and whose cells are written only in a font whose
 * text fits the cell (the plot's size as drawn decides: drawn again when the guess before the
 * first draw was wrong).
 * @param {HTMLElement} el @param {object[]} traces @param {string[]} tokens @param {string} title
 * @param {{z: (number | null)[][], lutIndex: (v: number) => number, lut: Uint8ClampedArray,
 *   largest: number} | null} cells the values to write (null: none)
 * @param {string} filename
 */
async function drawFitted(el, traces, tokens, title, cells, filename) {
  const fitted = /** @type {HTMLElement & {__fit?: () => Promise<void>}} */ (el);
  // A plot resized (the window, the panels stacking) is fitted again, with its latest data.
  if (!fitted.__fit && typeof ResizeObserver === "function") {
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let timer;
    let width = el.clientWidth;
    new ResizeObserver(() => {
      if (Math.abs(el.clientWidth - width) < 1) return;
      width = el.clientWidth;
      clearTimeout(timer);
      timer = setTimeout(() => fitted.__fit?.(), 250);
    }).observe(el);
  }
  const fit = () => drawFitted(el, traces, tokens, title, cells, filename);
  fitted.__fit = fit; // also this draw's mark: a newer draw of el replaces it
  const n = tokens.length;
  const head = fitTitle(title, el.clientWidth);
  const chars = cells ? widestText(cells.z) : 0;
  const font = () => {
    if (!cells) return 0;
    const c = cellSize(el, n);
    return cellFont(c.w, c.h, chars, cells.largest);
  };
  const texts = (/** @type {number} */ size) => (cells ? cellTexts(cells.z, cells.lutIndex, cells.lut, size) : []);
  const guess = font();
  await draw(el, traces, layoutFor(tokens, head, texts(guess), cellSize(el, n).w), filename);
  // A newer draw of el started while this one was drawn (a newer trace, a resize): it owns the
  // plot, and this draw's second pass, with its older data, must not land over it.
  if (fitted.__fit !== fit) return;
  const size = font();
  const angle = keyTickAngle(tokens, cellSize(el, n).w);
  const relaid = size !== guess || angle !== /** @type {any} */ (el).layout?.xaxis?.tickangle;
  if (relaid) await draw(el, traces, layoutFor(tokens, head, texts(size), cellSize(el, n).w), filename);
  if (fitted.__fit !== fit) return;
  el.dataset.cellFont = String(size); // the size the cells are written in, 0: not written
}

/**
 * @param {string[]} tokens @param {(number | null)[][]} z @param {string} kind
 * @param {string} dtype @param {string} colorbar @param {object} extra
 */
function heatmap(tokens, z, kind, dtype, colorbar, extra) {
  const customdata = z.map((row, i) =>
    row.map((v, j) => [
      plotToken(tokens[i]),
      plotToken(tokens[j]),
      v === null ? "masked (−∞ before the softmax)" : `${kind} ${readable(v, dtype)}`,
    ]),
  );
  return {
    type: "heatmap",
    z,
    x: tokens.map((_, j) => j),
    y: tokens.map((_, i) => i),
    customdata,
    hovertemplate:
      "query <b>%{customdata[0]}</b><br>key <b>%{customdata[1]}</b><br>" + "%{customdata[2]}<extra></extra>",
    hoverongaps: true,
    colorbar: { thickness: 12, len: 1, title: { text: colorbar, side: "right", font: { size: 12 } } },
    ...extra,
  };
}

const TITLE_PX = 14;
const CELL_FONTS = [13, 11, 9]; // px: a cell's text is written at the largest that fits
const EM = 0.62; // a digit's width (and a point's, a sign's, at most), in em of the font

/**
 * A title that fits `width` pixels: on one line, or broken into two at its last " · ".
 * @param {string} title @param {number} width
 * @returns {{text: string, lines: number}}
 */
export function fitTitle(title, width) {
  const plain = title.replace(/<[^>]+>/g, "");
  const at = title.lastIndexOf(" · ");
  if (plain.length * TITLE_PX * 0.56 <= width - 16 || at < 0) return { text: title, lines: 1 };
  return { text: `${title.slice(0, at)}<br>${title.slice(at + 3)}`, lines: 2 };
}

/**
 * The font size at which the widest of a cell's texts fits inside its cell, from CELL_FONTS
 * (none larger than `largest`), or 0: none does, and the cells are left unwritten (each
 * value is still in the hover label, the keyboard cursor and the table).
 * @param {number} cellW @param {number} cellH px @param {number} chars the widest text's
 * @param {number} largest
 */
export function cellFont(cellW, cellH, chars, largest) {
  for (const size of CELL_FONTS) {
    if (size <= largest && chars * size * EM + 4 <= cellW && size * 1.3 <= cellH) return size;
  }
  return 0;
}

/**
 * One cell's size in pixels on `el` as drawn (Plotly's plot area), or as it will be drawn
 * (the element's size less the margins and the colour bar) before the first draw.
 * @param {HTMLElement} el @param {number} n tokens
 */
function cellSize(el, n) {
  const area = /** @type {any} */ (el)._fullLayout?._size;
  if (area && area.w > 0) return { w: area.w / n, h: area.h / n };
  return { w: Math.max(0, el.clientWidth - 190) / n, h: Math.max(0, el.clientHeight - 130) / n };
}

const TICK_EM = 0.62; // a tick label's character width, at most about, in em of its font
/** @type {CanvasRenderingContext2D | null | undefined} */
let measurer;

/**
 * A tick label's width in pixels: measured in the plot's font where there is a page, else
 * estimated (TICK_EM a character).
 * @param {string} text @param {number} size the font's size in pixels
 */
function labelWidth(text, size) {
  if (measurer === undefined) {
    const page = typeof document !== "undefined";
    measurer = page ? document.createElement("canvas").getContext("2d") : null;
  }
  if (!measurer) return text.length * TICK_EM * size;
  measurer.font = `${size}px ${FONT}`;
  return measurer.measureText(text).width;
}

/**
 * The key axis's label angle: level where every token's label fits its column, else slanted
 * (past 12 tokens always: their font is smaller, their columns narrow).
 * @param {string[]} tokens @param {number} columnWidth one column's width in pixels
 */
export function keyTickAngle(tokens, columnWidth) {
  if (tokens.length > 12) return -60;
  const size = tokenAxis(tokens).tickfont.size;
  const widest = Math.max(0, ...tokens.map((t) => labelWidth(plotToken(t), size)));
  return widest <= columnWidth - 4 ? 0 : -60;
}

/**
 * @param {string[]} tokens @param {{text: string, lines: number}} title @param {object[]} annotations
 * @param {number} columnWidth one column's width in pixels
 */
function layoutFor(tokens, title, annotations, columnWidth) {
  return baseLayout({
    annotations,
    title: { text: title.text, font: { size: TITLE_PX }, x: 0.02, xanchor: "left" },
    plot_bgcolor: MASKED_GREY, // masked cells are gaps: they show this grey
    margin: { l: 80, r: 10, t: title.lines > 1 ? 58 : 40, b: 70 },
    xaxis: tokenAxis(tokens, {
      title: { text: "key" },
      automargin: true,
      tickangle: keyTickAngle(tokens, columnWidth),
    }),
    yaxis: tokenAxis(tokens, { title: { text: "query" }, autorange: "reversed", automargin: true }),
  });
}

/**
 * Draw both heatmaps of sel.layer / sel.head and sync the pickers.
 * @param {HTMLElement} card
 * @param {{meta: TraceMeta, scores: NDArray, weights: NDArray, valueWeighted?: NDArray,
 *   scoreMax: number, entropy: number}} data one head's [n][n] scores (-Infinity masked) and
 *   weights; valueWeighted: its ||a_ij v_j W_O^h||, drawn in place of the weights when given
 * @param {{layer: number, head: number, measure?: import("../core/types.js").Measure}} sel
 * @param {{onSelect: (change: {layer?: number, head?: number,
 *   measure?: import("../core/types.js").Measure}) => void}} callbacks
 */
export function render(card, data, sel, callbacks) {
  const { meta } = data;
  const layerPicker = /** @type {HTMLSelectElement} */ (card.querySelector("[data-role=layer]"));
  const headPicker = /** @type {HTMLSelectElement} */ (card.querySelector("[data-role=head]"));
  fillIndexSelect(layerPicker, meta.layers, "layer", sel.layer);
  fillIndexSelect(headPicker, meta.heads, "head", sel.head);
  headPicker.disabled = meta.heads === 1;
  layerPicker.disabled = meta.layers === 1;
  layerPicker.onchange = () => callbacks.onSelect({ layer: Number(layerPicker.value) });
  headPicker.onchange = () => callbacks.onSelect({ head: Number(headPicker.value) });
  const vw = data.valueWeighted;
  for (const input of /** @type {NodeListOf<HTMLInputElement>} */ (
    card.querySelectorAll("[data-role=measure] input")
  )) {
    input.checked = input.value === (vw ? "value_weighted" : "weights");
    input.onchange = () => {
      if (input.checked)
        callbacks.onSelect({ measure: /** @type {import("../core/types.js").Measure} */ (input.value) });
    };
  }
  const caption = card.querySelector("[data-role=weights-caption]");
  if (caption) {
    caption.textContent = vw
      ? "Value-weighted: ||a_ij v_j W_O^h||, each weight times the norm of its key's " +
        "value through the head's slice of the output projection (Kobayashi et al., 2020)."
      : "Weights: softmax of each score row.";
  }

  const tokens = meta.tokens;
  const n = tokens.length;
  const height = `${Math.max(380, Math.min(760, 160 + n * 10))}px`;
  /** @type {HTMLElement} */ (card.querySelector("[data-role=grid]")).classList.toggle("stacked", n > SIDE_BY_SIDE_MAX);
  const where = `layer ${sel.layer + 1}, head ${sel.head + 1}`;
  const m = data.scoreMax > 0 ? data.scoreMax : 1;
  const scoreTitle =
    meta.config?.scale === false
      ? "score = q·k (unscaled)"
      : meta.attention && !meta.attention.divide_by
        ? `score = q·k ${meta.attention.scale_label}${meta.attention.softcap ? `, soft-capped at ${meta.attention.softcap} before the softmax` : ""}`
        : `score = q·k / √d<sub>h</sub> (d<sub>h</sub> = ${meta.head_dim})${meta.attention?.softcap ? `, soft-capped at ${meta.attention.softcap} before the softmax` : ""}`;
  const scoresEl = /** @type {HTMLElement} */ (card.querySelector("[data-role=scores]"));
  const weightsEl = /** @type {HTMLElement} */ (card.querySelector("[data-role=weights]"));
  scoresEl.style.height = height;
  weightsEl.style.height = height;
  const masked = meta.config?.mask === "causal" ? " · grey = masked" : "";
  const scores = nested(data.scores).map((row) => row.map((/** @type {number} */ v) => (v === -Infinity ? null : v)));
  const weights = nested(vw ?? data.weights);
  let top = 1; // the darkest colour: 1 for weights, the largest norm for value-weighted
  if (vw) {
    top = 0;
    for (const v of vw.data) top = Math.max(top, v);
    if (!(top > 0)) top = 1;
  }
  const kind = vw ? "value-weighted norm" : "weight";
  const name = vw ? "Value-weighted ‖a v W_O‖" : "Weights";
  const largest = n <= 6 ? 13 : 11;
  const written = n <= ANNOTATE_MAX;
  const drawn = Promise.all([
    drawFitted(
      scoresEl,
      [
        heatmap(tokens, scores, "score", data.scores.dtype, scoreTitle, {
          colorscale: SCORE_SCALE,
          zmin: -m,
          zmax: m,
          uid: "scores",
        }),
      ],
      tokens,
      `Scores · ${where}${masked}`,
      written ? { z: scores, lutIndex: (v) => Math.round((v / m + 1) * 127.5), lut: SCORE_LUT, largest } : null,
      "attnviz-scores",
    ),
    drawFitted(
      weightsEl,
      [
        heatmap(
          tokens,
          weights,
          kind,
          (vw ?? data.weights).dtype,
          vw ? "value-weighted norm ‖a v W_O‖" : "attention weight (softmax), rows sum to 1",
          { colorscale: WEIGHT_SCALE, zmin: 0, zmax: top, uid: "weights" },
        ),
      ],
      tokens,
      `${name} · ${where}${vw ? "" : ` · mean entropy ${readableProse(data.entropy)} nats`}`,
      written ? { z: weights, lutIndex: (v) => Math.round((v / top) * 255), lut: WEIGHT_LUT, largest } : null,
      "attnviz-weights",
    ),
  ]);
  const labels = tokens.map(shownToken); // the summary's and the table's; read aloud, named
  // Under a causal mask the first query sees only itself: the summaries leave it out.
  const causal = meta.config?.mask === "causal";
  accessible(
    scoresEl,
    tokens,
    scores,
    "score",
    data.scores.dtype,
    `Scores, ${where}`,
    strongestText(labels, labels, { shape: [n, n], data: scores.flat() }, { word: "largest", causal }),
  );
  accessible(
    weightsEl,
    tokens,
    weights,
    kind,
    (vw ?? data.weights).dtype,
    `${name}, ${where}`,
    vw
      ? strongestText(labels, labels, vw, { causal })
      : `mean entropy ${readableProse(data.entropy)} nats, ` + strongestText(labels, labels, data.weights, { causal }),
  );
  return drawn;
}

/**
 * A heatmap's text alternative (a summary, the table up to TABLE_MAX tokens) and its keyboard
 * cursor, which reads a cell as the hover writes it and shows the hover label there.
 * @param {HTMLElement} plot @param {string[]} tokens @param {(number | null)[][]} z
 * @param {string} kind @param {string} dtype @param {string} what @param {string} summary
 */
function accessible(plot, tokens, z, kind, dtype, what, summary) {
  const n = tokens.length;
  const shown = tokens.map(shownToken);
  const spoken = tokens.map(spokenToken);
  const text = describe(plot, {
    summary: `${what}: ${summary}`,
    table:
      n <= TABLE_MAX
        ? matrixTable(`${what}: query rows by key columns`, "query", shown, shown, (i, j) => exact(z[i][j], dtype))
        : null,
  });
  keyCursor(plot, text.live, {
    rows: n,
    cols: n,
    describedBy: text.summary.id,
    label: `${what}: heatmap of ${n} × ${n} ${kind}s, query rows by key columns. Arrow keys move between cells.`,
    text: (i, j) =>
      `${spoken[i]} → ${spoken[j]}: ` +
      (z[i][j] === null ? "masked (−∞ before the softmax)" : `${kind} ${readable(z[i][j], dtype)}`),
    show: (i, j) => plotlyOf(plot).Fx.hover(plot, { xval: j, yval: i }),
    hide: () => plotlyOf(plot).Fx.unhover(plot),
  });
}
