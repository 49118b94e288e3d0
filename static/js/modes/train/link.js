// A link to the Train tab: `#train`, then the run's id (`/<id>`) when one is open, then the
// form's settings as a query (`?task=induction&layers=2&...`, the names of the fields of
// startRun's body), and the head the reader chose (`at=<variant>.<layer>.<head>`, 0-based).
// Pure: what the settings mean, and whether they are offered, index.js and form.js decide.

export const TRAIN_HASH = "#train";

/**
 * A Train link's parts.
 * @typedef {object} TrainLink
 * @property {string | null} run the run to open
 * @property {Record<string, string>} settings the form's fields by name, as text
 * @property {{variant: number, layer: number, head: number} | null} [view] the head the reader
 *   chose in the run (none: the view's first)
 */

/**
 * The link of a run (or none) and the form's settings.
 * @param {TrainLink} link
 * @returns {string}
 */
export function encodeTrainLink(link) {
  const v = link.view;
  /** @type {Record<string, string>} */
  const at = link.run && v ? { at: `${v.variant}.${v.layer}.${v.head}` } : {};
  const query = new URLSearchParams({ ...link.settings, ...at }).toString();
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
  const settings = Object.fromEntries(new URLSearchParams(m[2] || ""));
  const at = /^(\d{1,2})\.(\d{1,3})\.(\d{1,3})$/.exec(settings.at ?? "");
  delete settings.at;
  const view = at ? { variant: Number(at[1]), layer: Number(at[2]), head: Number(at[3]) } : null;
  return { run: run || null, settings, view };
}
