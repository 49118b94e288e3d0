// Head view, after BertViz: the tokens twice, queries on the left and keys on the right, and a
// line from each query to each key per chosen head, as thick and opaque as its weight. Hovering
// a token keeps only its lines (left: what it attends to; right: what attends to it). Past
// FULL_MAX tokens only the lines of one token are drawn: the chosen query's, or the hovered
// token's. Weights come from the trace's 8-bit values (within half a step of 1/255 of the
// head's peak). Each query token is a keyboard stop whose name says its strongest key, and a
// summary line under the view says each chosen head's strongest line. render(container, data,
// sel, callbacks).

import { el } from "../core/dom.js";
import { headColor } from "../core/theme.js";
import { shownToken, spokenToken } from "../core/tokens.js";
import { describe, rovingRow } from "./access.js";
import { cellValue } from "./describe.js";

/** @typedef {import("../core/types.js").NDArray} NDArray */

const SVG = "http://www.w3.org/2000/svg";
export const MIN_WEIGHT = 0.01; // lighter lines are not drawn
export const FULL_MAX = 64; // more tokens: one token's lines at a time

/** @param {string} tag @param {Record<string, string | number>} [attrs] */
function svg(tag, attrs = {}) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

/**
 * Check boxes for the heads, one colour chip each; onChange(list of chosen heads).
 * @param {HTMLElement} box @param {number} heads @param {number[]} chosen
 * @param {(heads: number[]) => void} onChange
 */
export function renderHeadChips(box, heads, chosen, onChange) {
  if (box.childElementCount !== heads) {
    box.replaceChildren(
      ...Array.from({ length: heads }, (_, h) => {
        const label = el("label", { className: "chip" }, [
          el("input", { type: "checkbox", value: String(h), "aria-label": `head ${h + 1}` }),
          el("span", { textContent: String(h + 1) }),
        ]);
        label.style.setProperty("--chip", headColor(h));
        return label;
      }),
    );
  }
  rovingRow(box, "input"); // one Tab stop, the arrows along the heads
  box.onchange = () =>
    onChange([...box.querySelectorAll("input:checked")].map((i) => Number(/** @type {HTMLInputElement} */ (i).value)));
  for (const input of /** @type {NodeListOf<HTMLInputElement>} */ (box.querySelectorAll("input"))) {
    input.checked = chosen.includes(Number(input.value));
  }
}

/** Rough width of a label in px at the given font size (no layout needed). @param {string} s @param {number} size */
const textWidth = (s, size) => [...s].length * size * 0.6;

/**
 * The weights a head view draws: one layer's 8-bit values [heads][m][m] with a scale per head
 * (weight = value * scale / 255), or, while those are on their way, only the chosen query's
 * exact rows [heads][1][m] (long texts, where only that query's lines are drawn first).
 * @typedef {{labels: string[], values?: NDArray, scale?: NDArray,
 *   rows?: {query: number, weights: NDArray}}} HeadViewData
 */

/**
 * @param {HTMLElement} container the box the view fills
 * @param {HeadViewData} data
 * @param {{layer: number, heads: number[], query: number, unit?: string}} sel query: the chosen
 *   row, or -1; unit: what the lines are when not attention weights ("value-weighted norm":
 *   ||a v W_O||, unbounded, so every line is as strong as it is over the strongest drawn, and
 *   lines under MIN_WEIGHT of the strongest are left out)
 * @param {{onPick?: (row: number) => void, onNeedAll?: () => void}} callbacks onPick: a click on
 *   a query token; onNeedAll: the pointer came to a view that has only the query's rows (fetch
 *   the layer and draw again)
 */
export function render(container, data, sel, callbacks) {
  const { values, scale, rows } = data;
  const labels = data.labels.map(shownToken); // as drawn: spaces, newlines and bytes visible
  const spoken = data.labels.map(spokenToken); // as read: named
  const n = labels.length;
  /** @type {(h: number, i: number, j: number) => number} the weight of head h, query i, key j */
  let weightOf;
  if (values && scale) weightOf = (h, i, j) => (values.data[(h * n + i) * n + j] * scale.data[h]) / 255;
  else if (rows) weightOf = (h, i, j) => (i === rows.query ? rows.weights.data[h * n + j] : 0);
  else throw new Error("the head view has no weights to draw");
  const full = n <= FULL_MAX;
  const row = n <= 30 ? 22 : n <= 60 ? 16 : 12;
  const font = n <= 30 ? 13 : n <= 60 ? 11 : 9;
  const labelW = Math.min(170, Math.max(50, ...labels.map((s) => textWidth(s, font) + 14)));
  const width = Math.max(Math.min(container.clientWidth || 560, 2 * labelW + 480), 2 * labelW + 120);
  const top = 8;
  const height = top * 2 + n * row;
  const x1 = labelW;
  const x2 = width - labelW;
  const y = (/** @type {number} */ i) => top + i * row + row / 2;

  // The frame (the svg and both columns of tokens) is kept while the tokens and the width stay:
  // a new layer, head or query only redraws the lines (a thousand labels on a long text).
  const key = `${width}\u0000${labels.join("\u0000")}`;
  const box = /** @type {HTMLElement & {__hv?: {key: string, root: SVGSVGElement, lines: SVGGElement}}} */ (container);
  const reuse = box.__hv && box.__hv.key === key && box.__hv.root.isConnected;
  const root = reuse
    ? /** @type {NonNullable<typeof box.__hv>} */ (box.__hv).root
    : /** @type {SVGSVGElement} */ (
        /** @type {unknown} */ (svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "group" }))
      );
  root.setAttribute("class", full ? "hv" : "hv hv-one");
  root.setAttribute(
    "aria-label",
    `Head view${sel.unit ? ` of ${sel.unit}s` : ""}, layer ${sel.layer + 1}, heads ${sel.heads.map((h) => h + 1).join(", ") || "none"}`,
  );
  root.dataset.layer = String(sel.layer);
  root.dataset.heads = sel.heads.join(",");
  root.dataset.complete = data.values ? "1" : "0"; // "0": only the chosen query's lines yet
  const lines = reuse ? /** @type {NonNullable<typeof box.__hv>} */ (box.__hv).lines : svg("g", { class: "hv-lines" });

  const all = Array.from({ length: n }, (_, i) => i);
  /**
   * The lines from the query rows `qs` to the key columns `ks`, chosen heads, weights >=
   * MIN_WEIGHT.
   * @param {number[]} qs @param {number[]} ks
   */
  function drawLines(qs, ks) {
    const groups = Array.from({ length: n }, (_, i) => svg("g", { class: "hv-q", "data-query": i }));
    // One token's lines: their strength is relative to the strongest of them (long texts spread
    // attention thin), else to 1.
    let top = 1;
    if (!full || sel.unit) {
      top = sel.unit ? 0 : MIN_WEIGHT;
      for (const h of sel.heads) for (const i of qs) for (const j of ks) top = Math.max(top, weightOf(h, i, j));
    }
    const least = sel.unit ? MIN_WEIGHT * top : MIN_WEIGHT;
    for (const h of sel.heads) {
      const color = headColor(h);
      for (const i of qs) {
        for (const j of ks) {
          const w = weightOf(h, i, j);
          if (w < least || !(w > 0)) continue;
          const v = w / top;
          groups[i].append(
            svg("line", {
              x1: x1 + 6,
              y1: y(i),
              x2: x2 - 6,
              y2: y(j),
              stroke: color,
              "stroke-width": (0.6 + 4 * v).toFixed(2),
              "stroke-opacity": (0.12 + 0.88 * v).toFixed(3),
              "data-head": h,
              "data-query": i,
              "data-key": j,
              "data-weight": String(w),
            }),
          );
        }
      }
    }
    lines.replaceChildren(...groups);
    return groups;
  }
  /** One token's lines: a query's (left) or a key's (right). @param {number} t @param {boolean} left */
  const linesOf = (t, left) => (t < 0 || t >= n ? drawLines([], []) : left ? drawLines([t], all) : drawLines(all, [t]));
  let shownFor = full ? "" : `L${sel.query}`;
  let groups = full ? drawLines(all, all) : linesOf(sel.query, true);

  /** @param {"left" | "right"} name @param {number} x @param {string} anchor */
  const side = (name, x, anchor) => {
    const g = svg("g", { class: `hv-tokens hv-${name}` });
    // One element a token (a long text has a thousand): the highlight is one moving rect.
    g.append(
      svg("rect", {
        class: "hv-hl",
        x: name === "left" ? 2 : x2 + 2,
        y: 0,
        width: labelW - 4,
        height: row - 2,
        rx: 3,
        visibility: "hidden",
      }),
    );
    labels.forEach((label, i) => {
      const t = svg("text", {
        class: "hv-token",
        "data-side": name,
        "data-index": i,
        x,
        y: y(i),
        "text-anchor": anchor,
        "dominant-baseline": "central",
        "font-size": font,
      });
      t.textContent = label;
      if (name === "left") {
        t.setAttribute("tabindex", "0");
        t.setAttribute("role", "button");
        t.setAttribute("aria-label", `query ${spoken[i]}`);
      }
      g.append(t);
    });
    return g;
  };
  if (!reuse) {
    root.append(lines, side("left", x1 - 8, "end"), side("right", x2 + 8, "start"));
    box.__hv = { key, root, lines: /** @type {SVGGElement} */ (/** @type {unknown} */ (lines)) };
  }
  for (const e of root.querySelectorAll(".chosen, .on")) e.classList.remove("chosen", "on");
  root.classList.remove("focus-q", "focus-k");
  root.querySelector(".hv-chosen")?.remove();
  const chosen = root.querySelector(`.hv-left .hv-token[data-index="${sel.query}"]`);
  if (chosen) {
    // the chosen query, and its background
    chosen.classList.add("chosen");
    const mark = svg("rect", {
      class: "hv-chosen",
      x: 2,
      y: y(sel.query) - row / 2 + 1,
      width: labelW - 4,
      height: row - 2,
      rx: 3,
    });
    root.querySelector(".hv-left")?.prepend(mark);
  }
  // The query tokens are one Tab stop (the chosen query's); the arrow keys move between them.
  const stop = chosen ?? root.querySelector(".hv-left .hv-token");
  for (const t of root.querySelectorAll(".hv-left .hv-token")) t.setAttribute("tabindex", t === stop ? "0" : "-1");

  /** @param {Element | null} t the token to highlight, or none */
  const highlight = (t) => {
    for (const hl of root.querySelectorAll(".hv-hl")) hl.setAttribute("visibility", "hidden");
    if (!t) return;
    const hl = /** @type {Element} */ (t.parentElement?.querySelector(".hv-hl"));
    hl.setAttribute("y", String(y(Number(/** @type {HTMLElement} */ (t).dataset.index)) - row / 2 + 1));
    hl.setAttribute("visibility", "visible");
  };
  const clear = () => {
    root.classList.remove("focus-q", "focus-k");
    for (const e of root.querySelectorAll(".on")) e.classList.remove("on");
    highlight(null);
    if (!full && shownFor !== `L${sel.query}`) {
      groups = linesOf(sel.query, true);
      shownFor = `L${sel.query}`;
    }
  };
  /** @param {Element} t */
  const focus = (t) => {
    for (const e of root.querySelectorAll(".on")) e.classList.remove("on");
    const i = Number(/** @type {HTMLElement} */ (t).dataset.index);
    const left = /** @type {HTMLElement} */ (t).dataset.side === "left";
    t.classList.add("on");
    highlight(t);
    const key = `${left ? "L" : "R"}${i}`;
    if (!full && shownFor !== key) {
      groups = linesOf(i, left);
      shownFor = key;
    }
    root.classList.toggle("focus-q", left);
    root.classList.toggle("focus-k", !left);
    if (left) groups[i].classList.add("on");
    else for (const line of lines.querySelectorAll(`line[data-key="${i}"]`)) line.classList.add("on");
  };
  let asked = false;
  /** @param {Event} e */
  const enter = (e) => {
    if (!values && !asked && callbacks.onNeedAll) {
      // every token's weights, for the pointer
      asked = true;
      callbacks.onNeedAll();
    }
    const t = /** @type {Element} */ (e.target).closest(".hv-token");
    if (t) focus(t);
  };
  /** @param {Event} e */
  const pick = (e) => {
    const t = /** @type {HTMLElement | null} */ (/** @type {Element} */ (e.target).closest(".hv-left .hv-token"));
    if (t && callbacks.onPick) callbacks.onPick(Number(t.dataset.index));
  };
  /** @param {KeyboardEvent} e */
  const key_ = (e) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      pick(e);
    }
    const t = /** @type {Element} */ (e.target).closest(".hv-left .hv-token");
    const step = { ArrowUp: -1, ArrowDown: 1 }[e.key];
    if (!t || !step) return;
    const next = root.querySelector(
      `.hv-left .hv-token[data-index="${Number(/** @type {HTMLElement} */ (t).dataset.index) + step}"]`,
    );
    if (!next) return;
    e.preventDefault();
    t.setAttribute("tabindex", "-1");
    next.setAttribute("tabindex", "0");
    /** @type {HTMLElement} */ (next).focus();
  };
  listen(root, {
    mouseover: enter,
    mouseleave: clear,
    focusin: enter,
    focusout: clear,
    click: pick,
    keydown: /** @type {(e: Event) => void} */ (key_),
  });
  const note = full
    ? []
    : [
        el("p", {
          className: "hv-note",
          textContent:
            `${n} tokens: only one token's lines are drawn, the chosen query's (click a token ` +
            "on the left to choose it) or the token under the pointer's, each as strong as its weight " +
            "over the strongest line's.",
        }),
      ];
  if (!reuse) container.replaceChildren(...note, root); // (the same tokens: the same note)

  // In words: each query token's strongest key over the chosen heads (its name), and each
  // chosen head's strongest line (the summary).
  /** @param {number} i @returns {[number, number, number]} [head, key, weight] */
  const best = (i) => {
    let top = /** @type {[number, number, number]} */ ([-1, -1, -1]);
    for (const h of sel.heads)
      for (let j = 0; j < n; j++) if (weightOf(h, i, j) > top[2]) top = [h, j, weightOf(h, i, j)];
    return top;
  };
  for (const t of /** @type {NodeListOf<SVGTextElement>} */ (root.querySelectorAll(".hv-left .hv-token"))) {
    const i = Number(t.dataset.index);
    const [h, j, w] = values || i === rows?.query ? best(i) : [-1, -1, -1];
    t.setAttribute(
      "aria-label",
      h < 0 ? `query ${spoken[i]}` : `query ${spoken[i]}: strongest key ${spoken[j]}, ${cellValue(w)} (head ${h + 1})`,
    );
  }
  const heads = sel.heads.map((h) => {
    let top = [-1, -1, -1];
    const qs = values ? all : rows ? [rows.query] : [];
    for (const i of qs) for (let j = 0; j < n; j++) if (weightOf(h, i, j) > top[2]) top = [i, j, weightOf(h, i, j)];
    return top[0] < 0
      ? `head ${h + 1}: no line`
      : `head ${h + 1} ${labels[top[0]]} → ${labels[top[1]]} ${cellValue(top[2])}`;
  });
  describe(/** @type {HTMLElement} */ (/** @type {unknown} */ (root)), {
    summary: sel.heads.length
      ? `Layer ${sel.layer + 1}${sel.unit ? ` (${sel.unit}s)` : ""}, the strongest line of each head shown${values ? "" : " (the chosen query's)"}: ` +
        `${heads.join("; ")}.`
      : "No head chosen: pick heads above.",
  });
}

/**
 * Listen on `node` with these handlers, in place of the ones a previous render set.
 * @param {Element & {__listeners?: Record<string, (e: Event) => void>}} node
 * @param {Record<string, (e: Event) => void>} handlers
 */
function listen(node, handlers) {
  for (const [type, fn] of Object.entries(node.__listeners || {})) node.removeEventListener(type, fn);
  for (const [type, fn] of Object.entries(handlers)) node.addEventListener(type, fn);
  node.__listeners = handlers;
}

/**
 * The drawn head view as an SVG file's text.
 * @param {HTMLElement} container
 */
export function headViewSvg(container) {
  const node = container.querySelector("svg.hv");
  if (!node) return null;
  const copy = /** @type {Element} */ (node.cloneNode(true));
  copy.setAttribute("xmlns", SVG);
  const style = svg("style");
  style.textContent = "text{font-family:system-ui,sans-serif;fill:#1d2330} rect{fill:none}";
  copy.prepend(style);
  return new XMLSerializer().serializeToString(copy);
}
