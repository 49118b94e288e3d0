// Keeping an element where it is in the window while the page above it changes: a head opened
// from the atlas redraws every view and card above the atlas, some of them later than others
// (a card that asks the server for its own part, a chart drawn as it comes into view), and
// the atlas must stay under the reader's pointer through all of it. The hold lasts until the
// reader acts (a wheel, a key, a press or a touch) or a few seconds pass.

/** How long a hold lasts at most, in milliseconds (the slowest card's part has come by then). */
const HOLD_MS = 10000;
/** What the reader does that ends a hold: from then on the page scrolls as they ask. */
const ACTS = /** @type {const} */ (["wheel", "keydown", "pointerdown", "touchstart"]);

/** @type {(() => void) | null} */
let release = null;

/**
 * Keep `el` at its present distance from the window's top while the page's layout changes,
 * until the reader next acts or HOLD_MS pass; a new hold replaces the last.
 * @param {Element} el
 * @returns {() => void} re-place it now (after a draw the page knows of)
 */
export function holdInView(el) {
  release?.();
  const top = el.getBoundingClientRect().top;
  const place = () => {
    if (!el.isConnected) return;
    const off = el.getBoundingClientRect().top - top;
    if (Math.abs(off) >= 0.5) window.scrollBy(0, off);
  };
  const sizes = new ResizeObserver(place); // the page grows or shrinks above the element
  sizes.observe(document.body);
  const timer = setTimeout(() => release?.(), HOLD_MS);
  const stop = () => {
    sizes.disconnect();
    clearTimeout(timer);
    for (const act of ACTS) window.removeEventListener(act, stop, true);
    if (release === stop) release = null;
  };
  for (const act of ACTS) window.addEventListener(act, stop, { capture: true, passive: true });
  release = stop;
  return place;
}
