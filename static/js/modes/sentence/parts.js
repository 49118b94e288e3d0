// Which part of the trace each sentence view asks for: the parameters of each request (the
// thumbnails of every head, one head exact, a layer's aggregate or its 8-bit weights, a
// query's rows, the query-key part, the trajectories, the generation row), built from the
// sentence state and the first response, and asked of the trace's parts (openParts: the
// server's through TraceParts, or another source with the same shape). Each part carries the
// choices its fields read and no others (core/fields.js ask: a layer's aggregate no head, the
// value-weighted sum no measure), so that the same part is asked for the same way everywhere.

import { sub } from "../../core/compact.js";
import { ask } from "../../core/fields.js";
import { columnsFor, windowOf } from "../../views/lens.js";

/** @typedef {import("../../core/types.js").SentenceState} SentenceState */
/** @typedef {import("../../core/types.js").Compact} Compact */
/** @typedef {import("../../core/types.js").NDArray} NDArray */
/** @typedef {import("../../core/api.js").Params} Params */

/**
 * Where the views' parts come from: one trace (its request `body`), each part asked for by its
 * parameters; `seed` remembers a part already at hand (the first response).
 * @typedef {{body: object, get: (params: Params) => Promise<Compact>, seed: (params: Params, part: Compact) => void}} Parts
 */

/**
 * Sentence mode's state, shared by its modules (index.js owns it).
 * @typedef {object} SentenceApp
 * @property {SentenceState} s the reader's choices
 * @property {import("../../core/types.js").ModelList | null} models the server's models (fetchModels), null until read
 * @property {Compact | null} first the first response of the current trace
 * @property {Parts | null} parts the current trace's parts
 * @property {NDArray | null} entropy [L][H], for the grid's titles
 * @property {boolean} active
 * @property {string | null} problem why a link could not be followed exactly
 * @property {number} generation a new trace: parts asked for an older one are dropped
 */

const QK_FIELDS = "queries,keys,scores,attentions";

/** A part's thumbnails as the model view draws them. @param {Compact} part */
export const thumbsOf = (part) => ({
  values: part.arrays["thumbs.values"],
  scale: part.arrays["thumbs.scale"],
  pool: thumbsMeta(part).pool,
  size: thumbsMeta(part).size,
});

/** A part's thumbnails' pooling (a part with thumbs). @param {Compact} part */
const thumbsMeta = (part) => /** @type {NonNullable<Compact["meta"]["thumbs"]>} */ (part.meta.thumbs);

/** @param {import("../../core/types.js").TraceMeta} meta */
export const tokenView = (meta) => /** @type {import("../../core/types.js").TokenViewMeta} */ (meta.token_view);

/**
 * The parts of the current trace, as the state asks for them.
 * @param {SentenceApp} app
 * @param {() => import("../../core/types.js").ModelInfo | null} modelInfo the chosen model's entry in the model list, or null
 */
export function createParts(app, modelInfo) {
  const parts = () => /** @type {Parts} */ (app.parts);
  const first = () => /** @type {Compact} */ (app.first);
  const options = () => ({ hide_special: app.s.hideSpecial, merge_words: app.s.mergeWords });
  /** True when the views show value-weighted attention: chosen, and the trace has it (a model
   * served through transformers does not; the first response says so, and until it has come
   * the weights are asked for). */
  const valueWeighted = () =>
    app.s.measure === "value_weighted" && app.first !== null && !app.first.meta.unavailable?.value_weighted;
  /** The token options and the measure: the parameters of what the model and head views draw. */
  const shown = () => ({ ...options(), ...(valueWeighted() ? { measure: "value_weighted" } : {}) });

  /** The thumbnails' side: no larger than the model view's cells are drawn (the grid's whole
   * width over the heads, at the device's pixel ratio); longer texts are max-pooled to it. */
  function thumbSize() {
    const split = document.getElementById("model-view-card")?.querySelector(".mv-split");
    const width = split?.clientWidth || 1000;
    const heads = modelInfo()?.heads ?? 12;
    return Math.max(16, Math.ceil((width / (heads + 0.6)) * (window.devicePixelRatio || 1)));
  }
  /** @returns {Params} */
  const thumbParams = () => ask("thumbs", { thumb: thumbSize(), ...shown() });

  /** The query as an original token index: the chosen one (unless it is a hidden special
   * token), else the first ordinary token. */
  function queryIndex() {
    const meta = first().meta;
    const q = app.s.query;
    if (q !== null && q < meta.n && !(app.s.hideSpecial && meta.special?.[q])) return q;
    // None chosen: the first ordinary token, after the first image in a causal model (one
    // before it sees none of the picture).
    const after = meta.causal && meta.images?.length ? meta.images[0].stop : 0;
    const special = meta.special || [];
    const ordinary = special.findIndex((x, i) => !x && i >= after);
    const any = special.findIndex((x) => !x);
    return ordinary >= 0 ? ordinary : any >= 0 ? any : 0;
  }

  /** The generation step shown (1-based), and the row that wrote its token: the last one read. */
  const genStep = () => {
    const g = first().meta.generated;
    return g ? Math.min(app.s.step ?? g.steps, g.steps) : 0;
  };
  const genRow = () => (first().meta.generated?.start ?? 1) + genStep() - 2;

  /** The thumbnails of every head under the token options (the first part). */
  const thumbsPart = () => parts().get(thumbParams());

  /** One layer's 8-bit weights of every head, unpooled: the thumbnails when they are not
   * pooled, else that layer alone (asked for at once, without waiting for the thumbnails: the
   * first response says whether the text is long enough to be pooled). */
  async function layerPart() {
    const l = app.s.layer;
    /** Layer `k` of a part's thumbnails. @param {Compact} part @param {number} k */
    const layerOf = (part, k) => ({
      meta: part.meta,
      values: sub(part.arrays["thumbs.values"], k),
      scale: sub(part.arrays["thumbs.scale"], k),
    });
    const alone = () => parts().get(ask("thumbs", { thumb: 0, thumb_layer: l, ...shown() }));
    if ((app.first?.meta.thumbs?.pool ?? 0) > 1) return layerOf(await alone(), 0);
    const thumbs = await thumbsPart(); // (the options may make a long text's rows fewer)
    return thumbsMeta(thumbs).pool === 1 ? layerOf(thumbs, l) : layerOf(await alone(), 0);
  }

  /** The positions the Predictions card draws: as many as fit its width, around the query.
   * @returns {[number, number]} the first and how many */
  function lensWindow() {
    const shown = windowOf(
      first().meta.n,
      queryIndex(),
      columnsFor(document.getElementById("lens-view")?.clientWidth ?? 0),
    );
    return [shown[0], shown.length];
  }

  return {
    thumbParams,
    valueWeighted,
    thumbsPart,
    layerPart,
    queryIndex,
    genStep,
    /** The row of the query under the token options (-1 when it is hidden). @param {number[][]} groups */
    queryRow: (groups) => groups.findIndex((g) => g.includes(queryIndex())),
    /** The chosen head's exact weights under the token options, or the chosen aggregate of its
     * layer's heads. */
    headPart: () =>
      parts().get(
        ask(app.s.aggregate === "head" ? "view" : app.s.aggregate, {
          layer: app.s.layer,
          head: app.s.head,
          ...shown(),
        }),
      ),
    /** The chosen head's row that wrote the generation step's token. */
    genPart: () => parts().get(ask("attentions", { layer: app.s.layer, head: app.s.head, query: genRow() })),
    /** The chosen head's queries and keys, and the chosen query's scores and weights. */
    queryPart: () =>
      parts().get(
        ask(app.s.hideSpecial ? `${QK_FIELDS},view` : QK_FIELDS, {
          layer: app.s.layer,
          head: app.s.head,
          query: queryIndex(),
          hide_special: true, // (read by view alone, the row that shows the query)
        }),
      ),
    /** True when the head view draws the chosen query from its rows first: a text so long that
     * a layer is megabytes (past 256 tokens), and tokens as the model has them (no option
     * regroups them). */
    readsRows: () => (app.first?.meta.n ?? 0) > 256 && !app.s.hideSpecial && !app.s.mergeWords,
    /** The chosen query's weights (or value-weighted norms) in every head of the layer:
     * [1][heads][1][n], exact; the array is the part's `fields`. */
    rowsPart: () =>
      parts().get(ask(valueWeighted() ? "value_weighted" : "attentions", { layer: app.s.layer, query: queryIndex() })),
    /** Why this score: the chosen head's score of `key` at the chosen query, split into its
     * top query-side by key-side components (the rest summed), with every key the query sees.
     * @param {number} key an original token index */
    whyPart: (key) =>
      parts().get(
        ask("qk_attribution", {
          layer: app.s.layer,
          head: app.s.head,
          query: queryIndex(),
          key,
          top: /** @type {import("../../core/types.js").ModelList} */ (app.models).attribution_top,
        }),
      ),
    /** The chosen head's row of weights at the chosen query: [1][1][1][n] (its winning key). */
    weightRowPart: () => parts().get(ask("attentions", { layer: app.s.layer, head: app.s.head, query: queryIndex() })),
    /** Attention on the picture: the chosen query's row over every position (the image's
     * tokens among them), as the chosen head's weights ([1][1][1][n]), or the layer's mean or
     * rollout ([1][n][n], no token option: positions as the model has them, images included).
     * @param {"head" | "head_mean" | "rollout"} how */
    pictureRowPart: (how) =>
      parts().get(
        ask(how === "head" ? "attentions" : how, {
          layer: app.s.layer,
          head: app.s.head,
          query: queryIndex(),
          hide_special: false,
          merge_words: false,
        }),
      ),
    /** The vision tower's weights of one layer and head over one tile's patches, patch to
     * patch ([1][1][P][P]; the trace field `vision`). @param {number} image @param {number} tile
     * @param {number} layer @param {number} head */
    visionPart: (image, tile, layer, head) => parts().get(ask("vision", { image, tile, layer, head })),
    /** The hidden states' projection, under the token options. */
    projectionPart: () => parts().get(ask("projection", options())),
    /** What the model predicts (a causal model) at the positions the Predictions card draws
     * (lensWindow): their top tokens (the server's default k) and the logit lens. */
    lensPart: () => {
      const [start, count] = lensWindow();
      return parts().get(ask("top_k,lens", { pos_start: start, pos_count: count }));
    },
    lensWindow,
    /** Each component's direct contribution to `token`'s logit at `position` (minus
     * `versus`'s): What pushed this. @param {number} position @param {{token: number, versus?: number}} target */
    attributionPart: (position, target) => parts().get(ask("logit_attribution", { position, ...target })),
    /** Each head's mean entropy. */
    entropyPart: () => parts().get(ask("entropy_mean", {})),
    /** What the model card's CSV downloads hold (Python's html.py csv_parts): the chosen head's
     * weights, its layer's head mean (positions as the model has them), every layer's hidden
     * states. @param {"attention" | "layer_mean" | "hidden_states"} what */
    csvPart: (what) =>
      parts().get(
        what === "attention"
          ? ask("attentions", { layer: app.s.layer, head: app.s.head })
          : what === "layer_mean"
            ? ask("head_mean", { layer: app.s.layer })
            : ask("hidden_states", {}),
      ),
  };
}
