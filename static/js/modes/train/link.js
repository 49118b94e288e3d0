// A link to the Train tab: `#train`, then the run's id (`/<id>`) when one is open, then the
// form's settings as a query (`?task=induction&layers=2&...`, the names of the fields of
// startRun's body), the head the reader chose (`at=<variant>.<layer>.<head>`, 0-based) and the
// cell of its heatmap whose Why this score is open (`cell=<query>.<key>`, 0-based tokens), and
// the comparison shown in the card Why not an RNN? (`comparison=<id>`). Pure: what the settings
// mean, and whether they are offered, index.js and form.js decide.

export const TRAIN_HASH = "#train";

/**
 * The head the reader chose in a run, and the cell of its heatmap open (query and key, both or
 * neither).
 * @typedef {{variant: number, layer: number, head: number, query?: number, key?: number}} TrainLinkView
 */

/**
 * A Train link's parts.
 * @typedef {object} TrainLink
 * @property {string | null} run the run to open
 * @property {Record<string, string>} settings the form's fields by name, as text
 * @property {TrainLinkView | null} [view] the head the reader chose in the run (none: the
 *   view's first), with the cell open when there is one
 * @property {string | null} [comparison] the recurrent comparison to show in its card
 */

/** The query's own names: not a setting of the form. */
const OWN = ["at", "cell", "comparison"];

/**
 * The link of a run (or none) and the form's settings.
 * @param {TrainLink} link
 * @returns {string}
 */
export function encodeTrainLink(link) {
  const v = link.view;
  /** @type {Record<string, string>} */
  const own = {};
  if (link.run && v) {
    own.at = `${v.variant}.${v.layer}.${v.head}`;
    if (Number.isInteger(v.query) && Number.isInteger(v.key)) own.cell = `${v.query}.${v.key}`;
  }
  if (link.comparison) own.comparison = link.comparison;
  const query = new URLSearchParams({ ...link.settings, ...own }).toString();
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
  const cell = /^(\d{1,5})\.(\d{1,5})$/.exec(settings.cell ?? "");
  const comparison = settings.comparison || null;
  for (const k of OWN) delete settings[k];
  /** @type {TrainLinkView | null} */
  const view = at ? { variant: Number(at[1]), layer: Number(at[2]), head: Number(at[3]) } : null;
  if (view && cell) Object.assign(view, { query: Number(cell[1]), key: Number(cell[2]) });
  return { run: run || null, settings, view, ...(comparison ? { comparison } : {}) };
}
