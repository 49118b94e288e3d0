// A trained run's name on the page: what it trains and when it started, in the reader's own
// clock ("induction, 2 layers, 21:34"), or the name its owner gave it, as it is; never its id.
// Pure: no DOM, runs in Node for the tests.

/**
 * @param {string | null | undefined} title what it trains, in words, or its owner's name for it (the server's)
 * @param {number | null | undefined} created when it started, epoch seconds
 * @param {boolean | null | undefined} [named] the title is the name its owner gave it: shown as it is
 * @returns {string}
 */
export function runName(title, created, named = false) {
  if (named && title) return title;
  const what = title || "a trained model";
  if (created === null || created === undefined || !Number.isFinite(created)) return what;
  const t = new Date(created * 1000);
  const two = (/** @type {number} */ n) => String(n).padStart(2, "0");
  return `${what}, ${two(t.getHours())}:${two(t.getMinutes())}`;
}
