// Where the Learn verdict note sits (guide.js drawVerdict): the place in the window that leaves
// clear the part in view of each card the step outlines (learn outline(), .learn-focus) and the
// control in use. On a wide window a corner, bottom right first, at the note's own width or as
// wide as the column beside the cards leaves (the editor's, on the left); on a narrow one (one
// column) the bottom edge or the top. Where none leaves room, the note shrinks to one line (its
// badge and its buttons; its words are still read by a screen reader) and tries again; failing
// that, it sits at the bottom in one line. Found again as the page scrolls or the window is
// resized. The note's data-place names the place (app.css), data-compact the one-line form.

/** A narrow window: the note docked along an edge (app.css's breakpoint). */
const NARROW = "(max-width: 900px)";
/** The places tried, in order. */
const WIDE_SPOTS = ["bottom-right", "bottom-left", "top-right", "top-left"];
const NARROW_SPOTS = ["bottom", "top"];
/** Kept between the note and a card (a card's outline, 3 px at 2 px from it, with it). */
const GAP = 6;
/** The narrowest the note is made to fit a column beside the cards (px). */
const MIN_WIDTH = 240;

/** @typedef {{left: number, top: number, right: number, bottom: number}} Box */

/** Whether two boxes overlap. @param {Box} a @param {Box} b */
export function meets(a, b) {
  return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
}

/**
 * What the note keeps clear of: the part in the window of each outlined card, with its outline
 * (none for a card out of the window or not drawn), and the control in use.
 * @param {HTMLElement} note @returns {Box[]}
 */
export function keepClear(note) {
  /** @type {Box[]} */
  const boxes = [];
  for (const card of document.querySelectorAll(".learn-focus")) {
    const r = card.getBoundingClientRect();
    const box = {
      left: Math.max(0, r.left - GAP),
      top: Math.max(0, r.top - GAP),
      right: Math.min(innerWidth, r.right + GAP),
      bottom: Math.min(innerHeight, r.bottom + GAP),
    };
    if (r.width > 0 && box.right > box.left && box.bottom > box.top) boxes.push(box);
  }
  const at = document.activeElement;
  if (at instanceof HTMLElement && at !== document.body && !note.contains(at)) {
    const r = at.getBoundingClientRect();
    if (r.width > 0 && r.bottom > 0 && r.top < innerHeight) boxes.push(r);
  }
  return boxes;
}

/**
 * How wide the note at `spot` may be beside the boxes that share its rows: from its window
 * edge to the nearest box (0: a box reaches that edge).
 * @param {string} spot @param {DOMRect} n the note's box there @param {Box[]} clear
 * @param {number} edge the note's distance from the window's side (px)
 */
export function sideRoom(spot, n, clear, edge) {
  const rows = clear.filter((b) => b.top < n.bottom && n.top < b.bottom);
  if (spot.endsWith("left")) {
    const stop = Math.min(innerWidth, ...rows.map((b) => b.left));
    return Math.max(0, Math.floor(stop - edge - GAP));
  }
  const stop = Math.max(0, ...rows.map((b) => b.right));
  return Math.max(0, Math.floor(innerWidth - edge - stop - GAP));
}

/**
 * Put the note (shown) where it covers none of what it keeps clear of: the place it is in
 * first (it does not move while it may stay), then the others in order; in one line where
 * none leaves room. Returns whether it covers nothing.
 * @param {HTMLElement} note
 */
export function placeNote(note) {
  if (note.hidden || note.getBoundingClientRect().height <= 0) return true;
  const clear = keepClear(note);
  const narrow = matchMedia(NARROW).matches;
  const spots = narrow ? NARROW_SPOTS : WIDE_SPOTS;
  const was = { spot: note.dataset.place ?? "", compact: note.dataset.compact === "true" };
  const fits = () => !clear.some((b) => meets(note.getBoundingClientRect(), b));
  /** @param {string} spot @param {boolean} compact */
  const tryAt = (spot, compact) => {
    note.dataset.place = spot;
    note.dataset.compact = String(compact);
    note.style.maxWidth = "";
    if (fits()) return true;
    if (narrow) return false;
    // As wide as the column beside the cards leaves (its rows found again once it is narrower,
    // and so taller).
    const edge = parseFloat(getComputedStyle(note)[spot.endsWith("left") ? "left" : "right"]) || 0;
    for (let i = 0; i < 2; i++) {
      const width = sideRoom(spot, note.getBoundingClientRect(), clear, edge);
      if (width < MIN_WIDTH) return false;
      note.style.maxWidth = `${width}px`;
      if (fits()) return true;
    }
    return false;
  };
  for (const compact of [false, true]) {
    const order = was.compact === compact && spots.includes(was.spot) ? [was.spot, ...spots] : spots;
    for (const spot of order) if (tryAt(spot, compact)) return true;
  }
  tryAt(spots[0], true);
  return false;
}
