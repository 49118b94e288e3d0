// A link to the Train tab: `#train`, then the run's id (`/<id>`) when one is open, then the
// form's settings as a query (`?task=induction&layers=2&...`, the names of the fields of
// startRun's body). Pure: what the settings mean, and whether they are offered, index.js and
// form.js decide.

export const TRAIN_HASH = "#train";

/**
 * A Train link's parts.
 * @typedef {object} TrainLink
 * @property {string | null} run the run to open
 * @property {Record<string, string>} settings the form's fields by name, as text
 */

/**
 * The link of a run (or none) and the form's settings.
 * @param {TrainLink} link
 * @returns {string}
 */
export function encodeTrainLink(link) {
  const query = new URLSearchParams(link.settings).toString();
  return `${TRAIN_HASH}${link.run ? `/${encodeURIComponent(link.run)}` : ""}${query ? `?${query}` : ""}`;
}

/**
 * A location hash as a Train link, or null when it is not one (another mode's link).
 * @param {string} hash
 * @returns {TrainLink | null}
 */
export function decodeTrainLink(hash) {
  const m = /^#train(?:\/([^?]*))?(?:\?(.*))?$/.exec(hash);
  if (!m) return null;
  let run;
  try {
    run = m[1] ? decodeURIComponent(m[1]) : null;
  } catch {
    run = m[1];
  }
  return { run: run || null, settings: Object.fromEntries(new URLSearchParams(m[2] || "")) };
}
