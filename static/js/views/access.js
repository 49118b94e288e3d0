// A plot for every reader: its text alternative (a one-line summary that follows the data, and
// the numbers in a table behind "Show the numbers" where they are few enough), and a keyboard
// path (the plot takes focus; the arrow keys move a cursor over its cells or points, and a
// polite live region reads the one under it). Used by every view that draws a canvas or a
// Plotly plot; the cursor's moves are describe.js's moveCursor.

import { el } from "../core/dom.js";
import { moveCursor } from "./describe.js";

let ids = 0;

/**
 * @typedef {{caption: string, head: string[], rows: string[][]}} NumbersTable head: the column
 *   headers (the first is the row headers' column); rows: a row header, then the cells
 * @typedef {{box: HTMLElement, summary: HTMLElement, live: HTMLElement}} TextParts
 */

/**
 * The text alternative of `plot`, in a box just after it (made on the first call): the summary
 * line, the numbers table behind a <details> (hidden when `table` is null) and the live region
 * the keyboard cursor speaks in.
 * @param {HTMLElement} plot
 * @param {{summary: string, table?: NumbersTable | null}} text summary: empty hides the line
 * @returns {TextParts}
 */
export function describe(plot, text) {
  let box = /** @type {HTMLElement | null} */ (plot.nextElementSibling);
  if (!box || !box.classList.contains("plot-text")) {
    const id = `plot-text-${++ids}`;
    box = el("div", { className: "plot-text" }, [
      el("p", { className: "plot-summary", id: `${id}-summary` }),
      el("details", { className: "plot-numbers", hidden: true }, [
        el("summary", { textContent: "Show the numbers" }),
        el("div", { className: "table-scroll", tabIndex: 0, role: "region" }, [
          el("table", { className: "data-table" }),
        ]),
      ]),
      el("p", { className: "sr-only plot-live", "aria-live": "polite" }),
    ]);
    plot.after(box);
  }
  const summary = /** @type {HTMLElement} */ (box.querySelector(".plot-summary"));
  summary.textContent = text.summary;
  summary.hidden = !text.summary;
  const details = /** @type {HTMLElement} */ (box.querySelector(".plot-numbers"));
  const t = text.table ?? null;
  details.hidden = !t;
  if (t) {
    const scroll = /** @type {HTMLElement} */ (details.querySelector(".table-scroll"));
    scroll.setAttribute("aria-label", t.caption);
    /** @type {HTMLElement} */ (details.querySelector("table")).replaceChildren(
      el("caption", { className: "sr-only", textContent: t.caption }),
      el("thead", {}, [
        el(
          "tr",
          {},
          t.head.map((h) => el("th", { scope: "col", textContent: h })),
        ),
      ]),
      el(
        "tbody",
        {},
        t.rows.map(([head, ...cells]) =>
          el("tr", {}, [
            el("th", { scope: "row", textContent: head }),
            ...cells.map((c) => el("td", { textContent: c })),
          ]),
        ),
      ),
    );
  }
  return { box, summary, live: /** @type {HTMLElement} */ (box.querySelector(".plot-live")) };
}

/**
 * A numbers table of a matrix: a row per row label, a column per column label.
 * @param {string} caption @param {string} corner @param {string[]} rowLabels
 * @param {string[]} colLabels @param {(i: number, j: number) => string} cell
 * @returns {NumbersTable}
 */
export function matrixTable(caption, corner, rowLabels, colLabels, cell) {
  return {
    caption,
    head: [corner, ...colLabels],
    rows: rowLabels.map((r, i) => [r, ...colLabels.map((_, j) => cell(i, j))]),
  };
}

/**
 * @typedef {{rows: number, cols: number, label: string, describedBy?: string,
 *   text: (i: number, j: number) => string, show?: (i: number, j: number) => void,
 *   hide?: () => void, pick?: (i: number, j: number) => void}} CursorSpec
 *   rows x cols: the grid the cursor moves over (a heatmap's cells; a line plot's curves by
 *   points); label: what the target is, and how to move; text: what the live region reads at a
 *   cell; show / hide: draw and remove the cursor (the hover label); pick: Enter or Space
 */

/**
 * Make `target` a keyboard stop whose arrow keys move a cursor over `spec`'s grid, reading each
 * cell into `live`. The cursor's place is kept across renders (clamped to the new grid); calling
 * it again replaces the previous spec.
 * @param {HTMLElement} target @param {HTMLElement} live @param {CursorSpec} spec
 */
export function keyCursor(target, live, spec) {
  const t = /** @type {HTMLElement & {__cursor?: {i: number, j: number}}} */ (target);
  target.tabIndex = 0;
  target.setAttribute("role", "application");
  target.setAttribute("aria-label", spec.label);
  if (spec.describedBy) target.setAttribute("aria-describedby", spec.describedBy);
  const at = t.__cursor ?? { i: 0, j: 0 };
  at.i = Math.max(0, Math.min(spec.rows - 1, at.i));
  at.j = Math.max(0, Math.min(spec.cols - 1, at.j));
  t.__cursor = at;
  const empty = spec.rows < 1 || spec.cols < 1;
  const say = () => {
    if (empty) return;
    live.textContent = spec.text(at.i, at.j);
    spec.show?.(at.i, at.j);
  };
  target.onfocus = say;
  target.onblur = () => spec.hide?.();
  target.onkeydown = (e) => {
    if (empty) return;
    if ((e.key === "Enter" || e.key === " ") && spec.pick) {
      e.preventDefault();
      spec.pick(at.i, at.j);
      return;
    }
    const to = moveCursor(e.key, at.i, at.j, spec.rows, spec.cols, e.ctrlKey || e.metaKey);
    if (!to) return;
    e.preventDefault();
    [at.i, at.j] = to;
    say();
  };
  // Redrawn while focused (a training run's new steps): nothing is read until a key is pressed,
  // so that a live plot does not flood the live region.
}

/**
 * A layers x heads grid of buttons (`selector`, each with data-layer and data-head, from 0):
 * one stop of the Tab key (the cell focused last, else the selected one: see `gridStop`), the
 * arrow keys move the focus to the neighbouring head (Enter or Space, a button's own keys,
 * then open it). The model view's and the head atlas's grids.
 * @param {HTMLElement} grid @param {string} selector @param {number} layers @param {number} heads
 */
export function gridArrows(grid, selector, layers, heads) {
  /** @type {Record<string, [number, number]>} */
  const steps = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };
  grid.onkeydown = (e) => {
    const b = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (e.target).closest(selector));
    const step = steps[e.key];
    if (!b || !step) return;
    const l = Math.min(layers - 1, Math.max(0, Number(b.dataset.layer) + step[0]));
    const h = Math.min(heads - 1, Math.max(0, Number(b.dataset.head) + step[1]));
    /** @type {HTMLElement | null} */ (grid.querySelector(`${selector}[data-layer="${l}"][data-head="${h}"]`))?.focus();
    e.preventDefault();
  };
  if (!grid.dataset.roving) {
    grid.dataset.roving = "1"; // (once: the grid is drawn again and again)
    grid.addEventListener("focusin", (e) => {
      const b = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (e.target).closest(selector));
      if (b) gridStop(grid, selector, b);
    });
  }
  gridStop(grid, selector);
}

/**
 * The grid's one Tab stop (a roving tabindex): `cell`, else the focused cell, else the
 * selected one, else the first; every other cell is reached with the arrow keys.
 * @param {HTMLElement} grid @param {string} selector @param {HTMLElement | null} [cell]
 */
export function gridStop(grid, selector, cell = null) {
  const cells = /** @type {NodeListOf<HTMLElement>} */ (grid.querySelectorAll(selector));
  const focused = /** @type {HTMLElement | null} */ (document.activeElement)?.closest?.(selector);
  const stop =
    cell ??
    (focused && grid.contains(focused) ? /** @type {HTMLElement} */ (focused) : null) ??
    /** @type {HTMLElement | null} */ (grid.querySelector(`${selector}.selected`)) ??
    cells[0];
  for (const c of cells) c.tabIndex = c === stop ? 0 : -1;
}

/**
 * A row of controls (`selector` in `box`: the head view's head checkboxes) as one Tab stop:
 * the control focused last (the first at first) takes the Tab key, Left and Right (Home, End)
 * move along the row, and each keeps its own keys (Space toggles a checkbox).
 * @param {HTMLElement} box @param {string} selector
 */
export function rovingRow(box, selector) {
  const items = () => /** @type {HTMLElement[]} */ ([...box.querySelectorAll(selector)]);
  const stop = (/** @type {HTMLElement} */ at) => {
    for (const c of items()) c.tabIndex = c === at ? 0 : -1;
  };
  if (!items().some((c) => c.getAttribute("tabindex") === "0")) stop(items()[0]); // (made anew)
  if (box.dataset.roving) return;
  box.dataset.roving = "1"; // (once: the row is made again for another model)
  box.addEventListener("focusin", (e) => {
    const at = /** @type {HTMLElement} */ (e.target).closest(selector);
    if (at) stop(/** @type {HTMLElement} */ (at));
  });
  box.addEventListener("keydown", (e) => {
    const all = items();
    const i = all.indexOf(/** @type {HTMLElement} */ (/** @type {HTMLElement} */ (e.target).closest(selector)));
    /** @type {Record<string, number>} */
    const to = { ArrowLeft: i - 1, ArrowRight: i + 1, Home: 0, End: all.length - 1 };
    if (i < 0 || !(e.key in to)) return;
    e.preventDefault();
    all[Math.max(0, Math.min(all.length - 1, to[e.key]))].focus();
  });
}
