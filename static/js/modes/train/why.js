// The Train tab's Why this score, under the heads card's large heatmap: a click (or Enter) on a
// cell of a finished run's trained model asks the server for the QK attribution of that model
// (the run's served model, by its name) on the probe's text at that (query, key), and
// views/why.js draws it; the model's atlas names the heads' roles ("a previous-token head").
// The heatmap shows a checkpoint; the attribution is always of the trained model, and at an
// earlier checkpoint a note says so. The pure parts (whyModel, modelStep, cellOf) run in Node.

import { fetchAtlas, fetchModels, fetchTrace } from "../../core/api.js";
import { byId } from "../../core/dom.js";
import { quotedToken } from "../../core/tokens.js";
import { shownSteps } from "../../core/trainrun.js";
import { headRoles } from "../../views/composition.js";
import * as view from "../../views/why.js";

/** @typedef {import("../../core/types.js").TrainRun} TrainRun */
/** @typedef {import("../../core/types.js").TrainView} TrainView */
/** @typedef {import("../../core/types.js").Compact} Compact */

/** Attributions and atlases remembered (a few cells and heads clicked back and forth). */
const KEEP = 24;

export const CLICK_HINT =
  "Click a cell of the large heatmap, or press Enter on it, to split that score into what the query's and the key's residual streams carry.";

/**
 * The served model whose scores a cell of the variant in view explains, or null and why not.
 * @param {TrainRun} run @param {TrainView} sel @param {boolean} live
 * @returns {{model: string | null, said: string}}
 */
export function whyModel(run, sel, live) {
  const v = run.variants[sel.variant];
  if (run.probe.source) return { model: null, said: "" }; // an encoder-decoder: no sentence-mode model
  if (!live) return { model: null, said: "This file holds no model: open the run in the live page to split a score." };
  if (!v?.model)
    return {
      model: null,
      said: "Once this model has finished training, click a cell of its heatmap to see why it scores as it does.",
    };
  return { model: v.model, said: "" };
}

/**
 * The step the variant's trained model is as of: an interrupted run's stored step, else its
 * last checkpoint's (null: none).
 * @param {TrainRun["variants"][number]} v
 */
export function modelStep(v) {
  if (v.model_step !== undefined && v.model_step !== null) return v.model_step;
  const last = v.checkpoints[v.checkpoints.length - 1];
  return last ? last.step : null;
}

/**
 * The cell open, when the view has one a causal model's query sees: {query, key}, else null.
 * @param {TrainView} sel
 */
export function cellOf(sel) {
  const { query, key } = sel;
  if (query === null || key === null || query === undefined || key === undefined || key > query) return null;
  return { query, key };
}

/**
 * @param {{onPickKey: (key: number) => void}} callbacks onPickKey: a key picked in the panel's
 *   key view
 */
export function createWhy(callbacks) {
  /** @type {Map<string, Promise<Compact>>} */
  const parts = new Map();
  /** @type {Map<string, Promise<Record<string, string>>>} */
  const roles = new Map();
  let seq = 0;
  /** @type {"keys" | null} */
  let refocus = null;

  /** @template T @param {Map<string, Promise<T>>} map @param {string} key @param {() => Promise<T>} ask */
  function kept(map, key, ask) {
    let got = map.get(key);
    if (!got) {
      got = ask();
      got.catch(() => map.delete(key));
    } else map.delete(key);
    map.set(key, got);
    while (map.size > KEEP) map.delete(/** @type {string} */ (map.keys().next().value));
    return got;
  }

  /** The components kept on each side (the rest summed into "rest"): the server's
   * attribution_top, as sentence mode keeps. @type {Promise<number> | null} */
  let top = null;
  const topOf = () => {
    top ??= fetchModels().then((list) => list.attribution_top);
    top.catch(() => (top = null));
    return top;
  };

  /** The atlas's roles of the model's heads; none where it cannot be had. @param {string} model */
  const rolesOf = (model) =>
    kept(roles, model, () =>
      fetchAtlas(model)
        .then((atlas) => headRoles(atlas))
        .catch(() => ({})),
    );

  /**
   * Draw the panel for the run and view (at once what needs no request, then the attribution);
   * each draw that is still the newest ends by counting itself in the view's data-drawn.
   * @param {TrainRun} run @param {TrainView} sel @param {boolean} live
   */
  async function draw(run, sel, live) {
    const mine = ++seq;
    try {
      await explain(run, sel, live, mine);
    } finally {
      const out = byId("t-why-view");
      if (mine === seq) out.dataset.drawn = String(Number(out.dataset.drawn ?? 0) + 1); // for tests
    }
  }

  /** @param {TrainRun} run @param {TrainView} sel @param {boolean} live @param {number} mine */
  async function explain(run, sel, live, mine) {
    const box = byId("t-why");
    const hint = byId("t-why-hint");
    const note = byId("t-why-note");
    const out = byId("t-why-view");
    const { model, said } = whyModel(run, sel, live);
    box.hidden = Boolean(run.probe.source);
    hint.textContent = model ? CLICK_HINT : said;
    const cell = cellOf(sel);
    const tokens = run.probe.tokens;
    if (!model || !cell) {
      out.replaceChildren();
      note.textContent =
        model && sel.query !== null && sel.key !== null && sel.key > sel.query
          ? `Key ${quotedToken(tokens[sel.key] ?? "")} (${sel.key + 1}) comes after query ` +
            `${quotedToken(tokens[sel.query] ?? "")} (${sel.query + 1}): a causal model's query sees no later key. ` +
            "Click a cell on or left of the diagonal."
          : "";
      return;
    }
    const body = { model, text: run.probe.text };
    note.textContent = "Splitting the score…";
    let part, named;
    try {
      const params = {
        fields: "qk_attribution",
        layer: sel.layer,
        head: sel.head,
        query: cell.query,
        key: cell.key,
        top: await topOf(),
      };
      [part, named] = await Promise.all([
        kept(parts, JSON.stringify([model, params]), () => fetchTrace(body, params)),
        rolesOf(model),
      ]);
    } catch (err) {
      if (mine !== seq) return;
      out.replaceChildren();
      note.textContent = `Why this score could not be computed: ${/** @type {Error} */ (err).message}`;
      return;
    }
    if (mine !== seq) return;
    const focus = refocus;
    refocus = null;
    view.render(
      out,
      { tokens: part.meta.tokens ?? tokens, attribution: view.attributionOf(part), roles: named },
      { focus },
      {
        onPickKey(k) {
          refocus = out.contains(document.activeElement) ? "keys" : null;
          callbacks.onPickKey(k);
        },
      },
    );
    const v = run.variants[sel.variant];
    const at = modelStep(v);
    const shown = shownSteps(run)[sel.checkpoint];
    note.textContent =
      at !== null && shown !== undefined && shown !== at
        ? `The heatmap shows step ${shown}; these numbers are the trained model's, at step ${at}.`
        : `The trained model's numbers, at step ${at ?? "?"}.`;
  }

  return { draw };
}
