// Weights over a picture: the picture itself (an <img>), and over it one semi-transparent cell
// per token (or patch) of a grid, each cell the rectangle of the picture it stands for, its
// opacity its weight over the largest one shown. The part of the picture the grid does not
// cover (a processor's centre crop) is greyed. Hover, or the keyboard's cursor, shows a cell's
// weight to 3 significant digits (its numbers table: exactly as the server sent it); a click or
// Enter picks the cell. No text is drawn on the picture (the legend and the hover label sit on
// plain backgrounds), and every outline is doubled, white over black, to be seen on any
// picture. The cell values are given, never made here (patches.js cuts them from the server's
// rows).

import { el } from "../core/dom.js";
import { exact, readable } from "../core/numbers.js";
import { quotedToken } from "../core/tokens.js";
import { describe, keyCursor, matrixTable } from "./access.js";
import { cellAt, cellRect, patchText, shortWeight, strongestCell, strongestText } from "./patches.js";

const SVG = "http://www.w3.org/2000/svg";
export const HEAT = "#ff3d00"; // the cells' colour, more opaque the more weight
const MOST = 0.75; // the opacity of the largest weight shown

/**
 * @typedef {object} PictureData
 * @property {string} src the picture (a data URL, as the trace request carried it)
 * @property {string} alt the picture in words
 * @property {number} width the picture's pixels, as decoded (meta.images[i].width)
 * @property {number} height
 * @property {number[]} box the grid's rectangle of the picture: [top, left, bottom, right]
 * @property {number} rows
 * @property {number} cols
 * @property {number[]} values rows x cols, row-major: each cell's weight, as sent
 * @property {string} dtype the values' dtype as sent ("F32": read back as float32)
 * @property {string} what whose weights, in words: "“dog”'s attention (layer 1, head 2)"
 * @property {string} unit what a cell is: "patch" or "token"
 * @property {{i: number, j: number} | null} [marked] a cell outlined as the query
 * @property {{label: string, v: number}[]} [others] weights beside the picture's (the text's
 *   tokens, for a patch as the query), drawn as bars under it
 * @property {string} [pickHow] what a click or Enter on a cell does, in words
 */

/**
 * @typedef {{onPick?: (i: number, j: number) => void}} PictureCallbacks
 */

/** @param {string} unit */
const plural = (unit) => (unit.endsWith("ch") ? `${unit}es` : `${unit}s`);

/** @param {string} tag @param {Record<string, string | number>} attrs */
function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

/** A doubled outline (white over black) of a rectangle; the query's dashed. @param {string} role @param {{x: number, y: number, w: number, h: number}} r */
function outline(role, r) {
  const g = svg("g", { "data-role": role, "pointer-events": "none" });
  for (const [stroke, width] of [
    ["#000000", 4],
    ["#ffffff", 2],
  ]) {
    g.append(
      svg("rect", {
        x: r.x,
        y: r.y,
        width: r.w,
        height: r.h,
        fill: "none",
        stroke,
        "stroke-width": width,
        "vector-effect": "non-scaling-stroke",
        ...(role === "marked" && stroke === "#ffffff" ? { "stroke-dasharray": "4 3" } : {}),
      }),
    );
  }
  return g;
}

/** The frame, made once in `container` (kept across draws: the keyboard cursor stays). @param {HTMLElement} container */
function frameOf(container) {
  let frame = /** @type {HTMLElement | null} */ (container.querySelector(":scope > .pic-frame"));
  if (frame) return frame;
  frame = el("div", { className: "pic-frame" }, [
    el("img", { className: "pic-img", draggable: false }),
    svg("svg", { class: "pic-cells", "aria-hidden": "true", preserveAspectRatio: "none" }),
    el("div", { className: "pic-tip", hidden: true, "aria-hidden": "true" }),
  ]);
  container.replaceChildren(frame, el("div", { className: "pic-legend" }), el("ul", { className: "pic-others" }));
  return frame;
}

/**
 * Draw `data` into `container`.
 * @param {HTMLElement} container @param {PictureData} data
 * @param {{focus?: boolean}} [selection] focus: move the focus to the picture (a cell picked by keyboard)
 * @param {PictureCallbacks} [callbacks]
 */
export function render(container, data, selection = {}, callbacks = {}) {
  const { rows, cols, values, box, width: W, height: H } = data;
  const frame = frameOf(container);
  frame.style.setProperty("--pic-ratio", `${W} / ${H}`);
  frame.style.width = `min(100%, 32rem, ${((32 * W) / H).toFixed(3)}rem)`;
  const img = /** @type {HTMLImageElement} */ (frame.querySelector(".pic-img"));
  if (img.getAttribute("src") !== data.src) img.src = data.src;
  img.alt = data.alt;
  const layer = /** @type {SVGSVGElement} */ (frame.querySelector(".pic-cells"));
  layer.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const top = Math.max(0, ...values.filter((v) => Number.isFinite(v)));
  const value = (/** @type {number} */ v) => exact(v, data.dtype); // the table's and data-value's
  const said = (/** @type {number} */ v) => readable(v, data.dtype); // the hover's and the live region's
  const cells = svg("g", { "data-role": "cells" });
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < cols; j++) {
      const v = values[i * cols + j];
      const r = cellRect(box, rows, cols, i, j);
      const alpha = top > 0 && Number.isFinite(v) ? (MOST * Math.max(0, v)) / top : 0;
      cells.append(
        svg("rect", {
          x: r.x,
          y: r.y,
          width: r.w,
          height: r.h,
          fill: HEAT,
          "fill-opacity": alpha.toFixed(4),
          "data-row": i,
          "data-col": j,
          "data-value": value(v),
        }),
      );
    }
  }
  const parts = [outsideBox(W, H, box), cells];
  const best = strongestCell(values, rows, cols);
  if (best) parts.push(outline("peak", cellRect(box, rows, cols, best.i, best.j)));
  if (data.marked) parts.push(outline("marked", cellRect(box, rows, cols, data.marked.i, data.marked.j)));
  const cursor = outline("cursor", cellRect(box, rows, cols, 0, 0));
  cursor.setAttribute("visibility", "hidden");
  parts.push(cursor);
  layer.replaceChildren(...parts.filter((x) => x !== null));

  const tip = /** @type {HTMLElement} */ (frame.querySelector(".pic-tip"));
  /** Show cell (i, j): the cursor's outline and the hover label with its weight. @param {number} i @param {number} j */
  const show = (i, j) => {
    const r = cellRect(box, rows, cols, i, j);
    for (const rect of cursor.children) {
      rect.setAttribute("x", String(r.x));
      rect.setAttribute("y", String(r.y));
      rect.setAttribute("width", String(r.w));
      rect.setAttribute("height", String(r.h));
    }
    cursor.setAttribute("visibility", "visible");
    tip.textContent = `row ${i + 1}, column ${j + 1}: ${said(values[i * cols + j])}`;
    tip.hidden = false;
    const below = (r.y + r.h) / H < 0.8;
    tip.style.left = `${Math.min(70, ((r.x + r.w / 2) / W) * 100)}%`;
    tip.style.top = below ? `${((r.y + r.h) / H) * 100}%` : "";
    tip.style.bottom = below ? "" : `${(1 - r.y / H) * 100}%`;
  };
  const hide = () => {
    cursor.setAttribute("visibility", "hidden");
    tip.hidden = true;
  };
  /** The cell under a pointer event, or null. @param {PointerEvent | MouseEvent} e */
  const under = (e) => {
    const at = layer.getBoundingClientRect();
    if (!at.width || !at.height) return null;
    return cellAt(box, rows, cols, ((e.clientX - at.left) / at.width) * W, ((e.clientY - at.top) / at.height) * H);
  };
  frame.onpointermove = (e) => {
    const c = under(e);
    if (c) show(...c);
    else hide();
  };
  frame.onpointerleave = hide;
  frame.onclick = (e) => {
    const c = under(e);
    if (c && callbacks.onPick) callbacks.onPick(...c);
  };
  frame.classList.toggle("pickable", Boolean(callbacks.onPick));

  legend(/** @type {HTMLElement} */ (container.querySelector(".pic-legend")), data, top);
  others(/** @type {HTMLElement} */ (container.querySelector(".pic-others")), data);
  const text = describe(frame, {
    summary: strongestText(values, rows, cols, data.what),
    table: matrixTable(
      `${data.what}: each ${data.unit}'s weight, rows down, columns across`,
      "row \\ column",
      Array.from({ length: rows }, (_, i) => `row ${i + 1}`),
      Array.from({ length: cols }, (_, j) => `column ${j + 1}`),
      (i, j) => value(values[i * cols + j]),
    ),
  });
  keyCursor(frame, text.live, {
    rows,
    cols,
    label:
      `${data.what} over the picture, ${rows} × ${cols} ${plural(data.unit)}: the arrow keys move between them` +
      (callbacks.onPick ? `; Enter ${data.pickHow ?? "picks one"}` : ""),
    describedBy: text.summary.id,
    text: (i, j) => patchText(i, j, said(values[i * cols + j]), data.what),
    show,
    hide,
    pick: callbacks.onPick,
  });
  if (selection.focus) frame.focus();
}

/** The grey over what the grid does not cover (the whole picture less the box), or null. @param {number} W @param {number} H @param {number[]} box */
function outsideBox(W, H, box) {
  const [top, left, bottom, right] = box;
  if (top <= 0 && left <= 0 && bottom >= H && right >= W) return null;
  return svg("path", {
    d: `M0 0H${W}V${H}H0Z M${left} ${top}V${bottom}H${right}V${top}Z`,
    "fill-rule": "evenodd",
    fill: "#000000",
    "fill-opacity": "0.45",
    "data-role": "outside",
  });
}

/** The legend: the colour from 0 to the largest weight shown, and the outlines. @param {HTMLElement} box @param {PictureData} data @param {number} top */
function legend(box, data, top) {
  const [t, l, b, r] = data.box;
  const cropped = t > 0 || l > 0 || b < data.height || r < data.width;
  box.replaceChildren(
    el("span", { className: "legend" }, [
      el("span", { textContent: "0" }),
      el("span", { className: "legend-bar pic-bar", style: `background: linear-gradient(to right, #ffffff, ${HEAT})` }),
      el("span", { textContent: shortWeight(top, data.dtype) }),
      el("span", { className: "dim", textContent: `${data.unit} weight (to the largest shown)` }),
    ]),
    el("span", { className: "pic-key" }, [
      el("span", { className: "pic-swatch peak", "aria-hidden": "true" }),
      ` the strongest ${data.unit}`,
    ]),
    ...(data.marked
      ? [
          el("span", { className: "pic-key" }, [
            el("span", { className: "pic-swatch marked", "aria-hidden": "true" }),
            " the query",
          ]),
        ]
      : []),
    ...(cropped
      ? [
          el("span", { className: "pic-key" }, [
            el("span", { className: "pic-swatch outside", "aria-hidden": "true" }),
            " greyed: outside what the model sees (the processor's crop)",
          ]),
        ]
      : []),
  );
}

/** The weights beside the picture's, as bars (each its weight out of 1, as sent). @param {HTMLElement} list @param {PictureData} data */
function others(list, data) {
  const items = data.others ?? [];
  list.hidden = !items.length;
  list.setAttribute("aria-label", "Weights outside the picture: the text's tokens");
  list.replaceChildren(
    ...items.map(({ label, v }) =>
      el("li", {}, [
        el("span", { className: "pic-other-label", textContent: quotedToken(label) }),
        el("span", { className: "pic-other-bar", "aria-hidden": "true" }, [
          el("span", { style: `width: ${Math.max(0, Math.min(1, v)) * 100}%` }),
        ]),
        el("span", { className: "pic-other-value", textContent: shortWeight(v, data.dtype) }),
      ]),
    ),
  );
}
