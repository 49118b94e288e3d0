// Small DOM helpers shared by every module: no view looks anything up by global id; the
// controllers (main.js, modes/*/) find their elements with `byId` once.

import { shownToken } from "./tokens.js";

/**
 * The element with this id; throws when the page has none (a template and a controller
 * disagree), rather than failing later on null.
 * @param {string} id
 * @returns {HTMLElement}
 */
export function byId(id) {
  const found = document.getElementById(id);
  if (!found) throw new Error(`attnviz: the page has no #${id}`);
  return found;
}

/**
 * A new element: `el("button", {className: "x", type: "button"}, ["text"])`. Props that are
 * element properties are set as such (textContent, value...), `dataset` is merged, the rest
 * become attributes. User text goes into textContent or value, never into HTML.
 * @param {string} tag
 * @param {Record<string, any>} [props]
 * @param {(Node | string)[]} [children]
 * @returns {HTMLElement}
 */
export function el(tag, props = {}, children = []) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null) continue;
    if (k === "dataset") Object.assign(node.dataset, v);
    else if (k in node) /** @type {any} */ (node)[k] = v;
    else node.setAttribute(k, String(v));
  }
  node.append(...children);
  return node;
}

/**
 * Fill a <select> with [value, text] items (only when they changed) and choose `value`.
 * @param {HTMLSelectElement} select
 * @param {[string | number, string][]} items
 * @param {string | number | null} [value]
 */
export function fillOptions(select, items, value = null) {
  const same =
    select.options.length === items.length &&
    items.every(([v, text], i) => select.options[i].value === String(v) && select.options[i].textContent === text);
  const current = select.value;
  if (!same) select.replaceChildren(...items.map(([v, text]) => new Option(text, String(v))));
  const want = value === null ? current : String(value);
  if (items.some(([v]) => String(v) === want)) select.value = want;
}

/**
 * Fill a <select> with `count` numbered options ("layer 1", ...) or the token labels
 * ("1. the", ...), valued 0..count-1, and choose `value`.
 * @param {HTMLSelectElement} select
 * @param {number} count
 * @param {string | null} label
 * @param {number} value
 * @param {string[] | null} [tokens]
 */
export function fillIndexSelect(select, count, label, value, tokens = null) {
  const items = /** @type {[number, string][]} */ (
    Array.from({ length: count }, (_, i) => [i, tokens ? `${i + 1}. ${shownToken(tokens[i])}` : `${label} ${i + 1}`])
  );
  fillOptions(select, items, value);
}

/**
 * Let the browser download `data` (text, a Blob, or a data: URL) as `filename`.
 * @param {string | Blob} data
 * @param {string} filename
 * @param {string} [type]
 */
export function download(data, filename, type = "application/json") {
  const isUrl = typeof data === "string" && data.startsWith("data:");
  const url = isUrl
    ? /** @type {string} */ (data)
    : URL.createObjectURL(data instanceof Blob ? data : new Blob([data], { type }));
  const a = el("a", { href: url, download: filename });
  document.body.append(a);
  a.click();
  a.remove();
  if (!isUrl) setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/**
 * Size `canvas` to `width` x `height` CSS pixels at the screen's pixel density, its context
 * scaled to draw in CSS pixels, and paint it white.
 * @param {HTMLCanvasElement} canvas @param {CanvasRenderingContext2D} ctx its 2-D context
 * @param {number} width @param {number} height
 */
export function sizeCanvas(canvas, ctx, width, height) {
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, width, height);
}

/** @type {WeakMap<Element, Promise<void>>} */
const near = new WeakMap();

/**
 * Settles once `element` has come within 200 px of the window (a card below the first screen
 * asks the server for its part then: a reader who never scrolls to it costs the server
 * nothing); the same promise for the same element, once it has.
 * @param {Element} element
 * @returns {Promise<void>}
 */
export function whenNear(element) {
  let seen = near.get(element);
  if (!seen) {
    seen = new Promise((resolve) => {
      const watch = new IntersectionObserver(
        (entries) => {
          if (!entries.some((e) => e.isIntersecting)) return;
          watch.disconnect();
          resolve();
        },
        { rootMargin: "200px" },
      );
      watch.observe(element);
    });
    near.set(element, seen);
  }
  return seen;
}

/**
 * Text cells in `box` that a click selects whole, as the keyboard does, so typing replaces what
 * a cell holds (a click landed the caret before a right-aligned "0", or after the text just
 * typed: typing 1.5 gave "1.51.2"); a click on a cell already all selected edits it where the
 * caret lands, as in a spreadsheet; a drag's selection stays. (The toy table has its own, with
 * its roving stop and edit mode: modes/toy/table.js.)
 * @param {HTMLElement} box
 */
export function selectOnEntry(box) {
  /** The cell a click is selecting (its pointer went down on it). @type {HTMLInputElement | null} */
  let entered = null;
  /** @param {EventTarget | null} t @returns {t is HTMLInputElement} */
  const textCell = (t) => t instanceof HTMLInputElement && t.type === "text";
  /** @param {HTMLInputElement} t */
  const allSelected = (t) =>
    t === document.activeElement && t.selectionStart === 0 && t.selectionEnd === t.value.length;
  box.addEventListener("pointerdown", (event) => {
    if (textCell(event.target)) entered = allSelected(event.target) ? null : event.target;
  });
  box.addEventListener("click", (event) => {
    const t = event.target;
    if (t !== entered || !textCell(t)) return;
    entered = null;
    if (t.selectionStart === t.selectionEnd) t.select(); // after the caret landed
  });
  box.addEventListener("focusin", (event) => {
    if (textCell(event.target) && event.target !== entered) event.target.select(); // by Tab
  });
  box.addEventListener("focusout", (event) => {
    if (event.target === entered) entered = null; // its click never came (dragged away)
  });
}
