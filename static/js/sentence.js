// Sentence mode: a real pretrained model on a text the reader types. Owns the inputs (model,
// text, examples, token options), asks for the trace in parts, and draws the model, head,
// query-key and trajectory views. The first request carries what the first screen draws (every
// head's thumbnail); each view then asks for its part (one head exact, one layer, the
// trajectories), which the server reads from the trace it already computed.

import { TraceClient, TraceParts, fetchModels, fetchTraceJson } from "./api.js";
import { sub } from "./compact.js";
import { createStatus, drawViews } from "./controller.js";
import { byId, download, fillIndexSelect, fillOptions } from "./dom.js";
import { SENTENCE_FEEDS, viewsFed } from "./feeds.js";
import * as genview from "./genview.js";
import * as heatcanvas from "./heatcanvas.js";
import * as headview from "./headview.js";
import * as modelview from "./modelview.js";
import * as qkview from "./qkview.js";
import { fillTokenChips, renderSentenceInputs } from "./sentenceui.js";
import { clampSentence, defaultSentence } from "./state.js";
import { WEIGHT_GRADIENT } from "./theme.js";
import * as trajectories from "./trajectories.js";

/** @typedef {import("./types.js").SentenceState} SentenceState */
/** @typedef {import("./types.js").Compact} Compact */
/** @typedef {import("./api.js").Params} Params */

const QK_FIELDS = "queries,keys,scores,attentions";
const PART_FIELDS = "attentions,scores,queries,keys,values"; // a head's JSON export

/**
 * @param {{setError: (m: string | null) => void, setStatus: (t: string) => void,
 *   setPending: (p: boolean) => void, traceDrawn: () => void, viewsDrawn: () => void,
 *   changed: () => void}} hooks traceDrawn: a new trace is drawn in every view; viewsDrawn: a
 *   redraw after a view choice is done; changed: the state changed (write the URL)
 */
export function createSentence(hooks) {
  const app = {
    s: defaultSentence(),
    /** @type {any} */ models: null,
    /** @type {Compact | null} */ first: null, // the first response of the current trace
    /** @type {TraceParts | null} */ parts: null,
    /** @type {import("./types.js").NDArray | null} */ entropy: null, // [L][H], for the grid's titles
    active: false,
    /** @type {string | null} */ problem: null, // why a link could not be followed exactly
    generation: 0, // a new trace: parts asked for an older one are dropped
  };
  const status = createStatus(hooks);

  const options = () => ({ hide_special: app.s.hideSpecial, merge_words: app.s.mergeWords });
  const modelInfo = () => app.models?.models.find((/** @type {any} */ m) => m.name === app.s.model) || null;

  const client = new TraceClient({
    delay: 150,
    onPending: (p) => status.waiting("request", p),
    onResult(result, request) {
      const { meta } = result;
      app.first = result;
      app.entropy = null;
      app.generation++;
      app.parts = new TraceParts(request.body);
      app.parts.seed(request.params, result);
      hooks.setError(app.problem);
      clampSentence(app.s, meta.layers, meta.heads, meta.n);
      showCount(meta.n);
      const specials = [...new Set(meta.tokens.filter((_, i) => meta.special?.[i]))];
      byId("s-special-names").textContent = specials.length ? `(${specials.join(", ")})` : "(none in this text)";
      status.set(`${meta.n} tokens · ${meta.layers} layers × ${meta.heads} heads`);
      hooks.changed();
      prefetch();
      status.drawing(drawAll(), () => {
        hooks.traceDrawn();
        entropyTitles(); // last: the grid's tooltips wait for every view
      });
    },
    onError(message) {
      hooks.setError(message);
      status.set("not updated");
      byId("s-count").textContent = "";
    },
  });

  // ---- Parts of the trace -----------------------------------------------------------------

  /** The thumbnails' side: no larger than the model view's cells are drawn (the grid's whole
   * width over the heads, at the device's pixel ratio); longer texts are max-pooled to it. */
  function thumbSize() {
    const split = byId("model-view-card").querySelector(".mv-split");
    const width = split?.clientWidth || 1000;
    const heads = modelInfo()?.heads ?? 12;
    return Math.max(16, Math.ceil((width / (heads + 0.6)) * (window.devicePixelRatio || 1)));
  }
  /** @returns {Params} */
  const thumbParams = () => ({ fields: "thumbs", thumb: thumbSize(), ...options() });
  /** The thumbnails of every head under the token options (the first part). */
  const thumbsPart = () => /** @type {TraceParts} */ (app.parts).get(thumbParams());
  /** The chosen head's exact weights under the token options, or the chosen aggregate of its
   * layer's heads. */
  const headPart = () => /** @type {TraceParts} */ (app.parts).get(app.s.aggregate === "head"
    ? { fields: "view", layer: app.s.layer, head: app.s.head, ...options() }
    : { fields: app.s.aggregate, layer: app.s.layer, ...options() });
  /** The generation step shown (1-based), and the row that wrote its token: the last one read. */
  const genStep = () => {
    const g = /** @type {Compact} */ (app.first).meta.generated;
    return g ? Math.min(app.s.step ?? g.steps, g.steps) : 0;
  };
  const genRow = () => (/** @type {Compact} */ (app.first).meta.generated?.start ?? 1) + genStep() - 2;
  const genPart = () => /** @type {TraceParts} */ (app.parts).get({ fields: "attentions",
    layer: app.s.layer, head: app.s.head, query: genRow() });
  /** The chosen head's queries and keys, and the chosen query's scores and weights. */
  const queryPart = () => /** @type {TraceParts} */ (app.parts).get({
    fields: app.s.hideSpecial ? `${QK_FIELDS},view` : QK_FIELDS, layer: app.s.layer, head: app.s.head,
    query: queryIndex(), ...(app.s.hideSpecial ? { hide_special: true } : {}) });

  /** @param {Compact} part */
  const thumbsOf = (part) => ({
    values: part.arrays["thumbs.values"], scale: part.arrays["thumbs.scale"],
    pool: /** @type {any} */ (part.meta.thumbs).pool, size: /** @type {any} */ (part.meta.thumbs).size,
  });

  /** One layer's 8-bit weights of every head, unpooled: the thumbnails when they are not
   * pooled, else that layer alone (asked for at once, without waiting for the thumbnails: the
   * first response says whether the text is long enough to be pooled). */
  async function layerPart() {
    const l = app.s.layer;
    /** Layer `k` of a part's thumbnails. @param {Compact} part @param {number} k */
    const layerOf = (part, k) => ({ meta: part.meta, values: sub(part.arrays["thumbs.values"], k),
      scale: sub(part.arrays["thumbs.scale"], k) });
    const alone = () => /** @type {TraceParts} */ (app.parts).get({ fields: "thumbs", thumb: 0,
      thumb_layer: l, ...options() });
    if (/** @type {any} */ (app.first?.meta.thumbs)?.pool > 1) return layerOf(await alone(), 0);
    const thumbs = await thumbsPart(); // (the options may make a long text's rows fewer)
    return /** @type {any} */ (thumbs.meta.thumbs).pool === 1 ? layerOf(thumbs, l) : layerOf(await alone(), 0);
  }

  /** @param {import("./types.js").TraceMeta} meta */
  const tokenView = (meta) => /** @type {import("./types.js").TokenViewMeta} */ (meta.token_view);

  /** True when the head view draws the chosen query from its rows first: a text so long that a
   * layer is megabytes (past 256 tokens), and tokens as the model has them (no option regroups
   * them). */
  const readsRows = () => (app.first?.meta.n ?? 0) > 256 && !app.s.hideSpecial && !app.s.mergeWords;
  /** The chosen query's weights in every head of the layer: [1][heads][1][n], exact. */
  const rowsPart = () => /** @type {TraceParts} */ (app.parts).get({ fields: "attentions",
    layer: app.s.layer, query: queryIndex() });

  /** The query as an original token index: the chosen one (unless it is a hidden special
   * token), else the first ordinary token. */
  function queryIndex() {
    const meta = /** @type {Compact} */ (app.first).meta;
    const q = app.s.query;
    if (q !== null && q < meta.n && !(app.s.hideSpecial && meta.special?.[q])) return q;
    const first = (meta.special || []).findIndex((x) => !x);
    return first >= 0 ? first : 0;
  }

  /** The row of the query under the token options (-1 when it is hidden). @param {number[][]} groups */
  const queryRow = (groups) => groups.findIndex((g) => g.includes(queryIndex()));

  // ---- Views --------------------------------------------------------------------------------

  /** @param {number} layer @param {number} head */
  function chooseHead(layer, head) {
    Object.assign(app.s, { layer, head, heads: [head] });
    viewChanged(["layer", "head", "heads"]);
    /** @type {HTMLElement | null} */ (byId("mv-grid").querySelector(`button.mv-cell[data-layer="${layer}"][data-head="${head}"]`))?.focus();
  }

  /** @param {number} index an original token index */
  function pickQuery(index) {
    app.s.query = index;
    viewChanged(["query"]);
  }

  /** @type {Record<string, number>} */
  const tickets = {};
  /** A view's draw is current while no newer draw of it (or newer trace) has started. @param {string} name */
  function ticket(name) {
    const mine = (tickets[name] = (tickets[name] || 0) + 1);
    const generation = app.generation;
    return () => mine === tickets[name] && generation === app.generation && app.active;
  }

  /** The parts the views `which` will ask for, asked for now, in the order the server should
   * serve them (it serves them in turn): the head view's (a long text's chosen query rows, else
   * its layer: the slowest first), the chosen head, its query, the trajectories. The grid's
   * titles (each head's entropy) come after every view is drawn; a long text's whole layer
   * (every token's lines) when the pointer comes to the head view.
   * @param {string[]} [which] */
  function prefetch(which = Object.keys(VIEWS)) {
    const asks = {
      head: [readsRows() ? rowsPart : layerPart], model: [headPart], traj: [projectionPart],
      qk: app.first?.meta.unavailable?.queries ? [] : [queryPart], // none without q and k
      gen: app.first?.meta.generated ? [genPart] : [],
    };
    for (const name of ["head", "model", "gen", "qk", "traj"]) {
      if (!which.includes(name)) continue;
      for (const ask of asks[/** @type {keyof asks} */ (name)]) {
        ask().catch(() => {}); // a failure is reported by the view that draws the part
      }
    }
  }
  const projectionPart = () => /** @type {TraceParts} */ (app.parts).get({ fields: "projection", ...options() });

  /** Each head's mean entropy into the grid's tooltips. */
  function entropyTitles() {
    const generation = app.generation;
    /** @type {TraceParts} */ (app.parts).get({ fields: "entropy_mean" }).then((part) => {
      if (generation !== app.generation) return;
      app.entropy = part.arrays.entropy_mean;
      modelview.titles(byId("mv-grid"), app.entropy);
    }, () => {});
  }

  const VIEWS = {
    async model() {
      const current = ticket("model");
      const meta = /** @type {Compact} */ (app.first).meta;
      const thumbs = await thumbsPart();
      if (!current()) return;
      const grid = byId("mv-grid");
      const sel = { layer: app.s.layer, head: app.s.head, peak: app.s.peak };
      const data = { layers: meta.layers, heads: meta.heads, thumbs: thumbsOf(thumbs), entropy: app.entropy };
      const tv = tokenView(thumbs.meta);
      // Past 64 rows the chosen head gets the card's whole width, below the grid (whose cells
      // are then as wide as thumbSize() says).
      /** @type {HTMLElement} */ (byId("model-view-card").querySelector(".mv-split")).classList.toggle("stacked", tv.labels.length > 64);
      modelview.render(grid, data, sel, { onSelect: chooseHead });
      byId("mv-shape").textContent = `${meta.layers} layers × ${meta.heads} heads`;
      showCount(meta.n, tv);
      byId("s-note").textContent = tv.note; // what the token options did, in the server's words
      byId("s-note").hidden = !tv.note;
      const { pool, size } = data.thumbs;
      const poolNote = byId("mv-pool");
      poolNote.hidden = pool === 1;
      poolNote.textContent = pool === 1 ? "" : `${tv.labels.length} tokens in ` +
        `${size} pixels: each thumbnail pixel is the largest weight of a ${pool} × ${pool} block.`;
      const agg = app.s.aggregate;
      const head = await headPart();
      if (!current()) return;
      const hv = tokenView(head.meta);
      const matrix = agg === "head" ? sub(head.arrays.view, 0, 0) : sub(head.arrays[agg], 0);
      const what = { head: `head ${app.s.head + 1}`, head_mean: `mean of ${meta.heads} heads`,
        head_max: `max of ${meta.heads} heads`, rollout: "rollout through it" }[agg];
      heatcanvas.render(byId("mv-large"), {
        labels: hv.labels, matrix, title: `Layer ${app.s.layer + 1}, ${what}`,
      }, { query: queryRow(hv.groups), peak: app.s.peak || agg === "head_max" }, { onPick: (row) => pickQuery(hv.groups[row][0]) });
      byId("mv-legend-max").textContent = app.s.peak ? "peak" : "1";
      byId("mv-caption").textContent = agg === "head"
        ? "The chosen head: hover a cell for its exact weight; click a row to make its token the query."
        : "The chosen layer's heads together: hover a cell for its exact value; click a row to make its token the query.";
      const rule = byId("mv-rule");
      rule.hidden = agg === "head";
      rule.textContent = head.meta.rules?.[agg] ?? "";
      const sink = modelview.sinkNote(matrix, hv.labels, agg === "head" || agg === "head_mean", hv.groups);
      byId("mv-sink").hidden = !sink;
      byId("mv-sink").textContent = sink;
    },
    async gen() {
      const current = ticket("gen");
      const meta = /** @type {Compact} */ (app.first).meta;
      const g = meta.generated;
      const card = byId("gen-card");
      card.hidden = !g;
      if (!g) return;
      fillIndexSelect(/** @type {HTMLSelectElement} */ (byId("gen-layer")), meta.layers, "layer", app.s.layer);
      fillIndexSelect(/** @type {HTMLSelectElement} */ (byId("gen-head")), meta.heads, "head", app.s.head);
      const step = genStep();
      const slider = /** @type {HTMLInputElement} */ (byId("gen-step"));
      slider.max = String(g.steps);
      slider.value = String(step);
      byId("gen-step-out").textContent = `step ${step} / ${g.steps}` +
        (g.stopped ? " · then it wrote its end-of-text token and stopped" : "");
      const part = await genPart();
      if (!current()) return;
      const row = sub(part.arrays.attentions, 0, 0, 0); // [n]: the row, keys after it masked (0)
      genview.render(byId("gen-view"), { tokens: meta.tokens, start: g.start, row },
        { layer: app.s.layer, head: app.s.head, step });
    },
    async head() {
      const current = ticket("head");
      const meta = /** @type {Compact} */ (app.first).meta;
      fillIndexSelect(/** @type {HTMLSelectElement} */ (byId("hv-layer")), meta.layers, "layer", app.s.layer);
      headview.renderHeadChips(byId("hv-heads"), meta.heads, app.s.heads, (heads) => {
        app.s.heads = heads;
        viewChanged(["heads"]);
      });
      const box = byId("head-view");
      /** @param {import("./types.js").TraceMeta} partMeta @param {import("./headview.js").HeadViewData} data */
      const draw = (partMeta, data) => {
        const tv = tokenView(partMeta);
        headview.render(box, data, { layer: app.s.layer, heads: app.s.heads, query: queryRow(tv.groups) },
          { onPick: (row) => pickQuery(tv.groups[row][0]) });
      };
      if (!readsRows()) {
        const part = await layerPart();
        if (current()) draw(part.meta, { labels: tokenView(part.meta).labels, values: part.values, scale: part.scale });
        return;
      }
      // A long text: the chosen query's lines from its exact rows (small, quick); every token's
      // weights (megabytes) only when the pointer comes to the view.
      const q = queryIndex();
      const part = await rowsPart();
      if (!current()) return;
      headview.render(box, { labels: meta.tokens, rows: { query: q, weights: sub(part.arrays.attentions, 0) } },
        { layer: app.s.layer, heads: app.s.heads, query: q }, {
          onPick: pickQuery,
          onNeedAll: () => layerPart().then((full) => {
            if (current()) draw(full.meta, { labels: tokenView(full.meta).labels, values: full.values, scale: full.scale });
          }, () => {}),
        });
    },
    async qk() {
      const current = ticket("qk");
      const meta = /** @type {Compact} */ (app.first).meta;
      fillIndexSelect(/** @type {HTMLSelectElement} */ (byId("qk-layer")), meta.layers, "layer", app.s.layer);
      fillIndexSelect(/** @type {HTMLSelectElement} */ (byId("qk-head")), meta.heads, "head", app.s.head);
      // Queries and keys belong to the model's tokens: the hidden special tokens are left out.
      const hide = app.s.hideSpecial;
      const keys = meta.tokens.map((_, i) => i).filter((i) => !(hide && meta.special?.[i]));
      fillOptions(/** @type {HTMLSelectElement} */ (byId("qk-query")),
        keys.map((i) => [i, `${i + 1}. ${meta.tokens[i]}`]), queryIndex());
      if (meta.unavailable?.queries) return qkview.renderUnavailable(byId("qk-view"), meta);
      const part = await queryPart();
      if (!current()) return;
      const input = { ...qkview.headInput(meta.tokens, part.arrays, queryIndex(), qkview.scoreRule(meta)),
        about: [...qkview.headNotes(meta, app.s.head, app.s.layer), ...optionNotes(meta)] };
      if (hide) {
        // The server's row of the query without the special tokens: each weight renormalised
        // over the keys shown (the softmax of their scores alone).
        const row = sub(part.arrays.view, 0, 0, 0);
        const weights = new Float64Array(meta.n).fill(NaN);
        keys.forEach((j, r) => { weights[j] = row.data[r]; });
        Object.assign(input, { shown: keys, weights: { dtype: row.dtype, shape: [meta.n], data: weights } });
      }
      return qkview.render(byId("qk-view"), input,
        { layer: app.s.layer, head: app.s.head, allKeys: app.s.allKeys },
        { onPick: pickQuery, onAllKeys: (all) => { app.s.allKeys = all; viewChanged(["allKeys"]); } });
    },
    async traj() {
      const current = ticket("traj");
      const meta = /** @type {Compact} */ (app.first).meta;
      const s = app.s;
      /** @type {HTMLInputElement} */ (byId(s.dims === 2 ? "traj-2d" : "traj-3d")).checked = true;
      const part = await projectionPart();
      if (!current()) return;
      // The rows under the token options (the server's): special tokens left out, a word's
      // point the mean of its pieces'. A row stands for its first token (its original index).
      const tv = part.meta.token_view;
      const groups = tv ? tv.groups : meta.tokens.map((_, i) => [i]);
      const labels = tv ? tv.labels : meta.tokens;
      const heads = groups.map((g) => g[0]);
      const rows = trajectories.defaultRows(groups, s.picked, queryIndex());
      /** @type {string[]} */
      const chipLabels = [];
      heads.forEach((i, r) => { chipLabels[i] = labels[r]; });
      fillTokenChips(byId("traj-tokens"), chipLabels, heads, rows.map((r) => heads[r]), (picked) => {
        app.s.picked = picked ?? "all";
        viewChanged(["picked"]);
      });
      const p = part.meta.projection;
      const projection = p ? { components: p.components, coords: part.arrays["projection.coords"],
        ratio: Array.from(part.arrays["projection.explained_variance_ratio"].data) } : null;
      return trajectories.render(byId("traj-view"), { tokens: labels, positions: heads, projection,
        unit: s.mergeWords ? "words" : "tokens", defaulted: s.picked === null },
      { tokens: rows, dims: s.dims }, { onPick: (r) => pickQuery(heads[r]) });
    },
  };

  /** The token count in the input card: the model's tokens against the cap, and the rows the
   * views show when the token options change them.
   * @param {number} n @param {import("./types.js").TokenViewMeta} [tv] */
  function showCount(n, tv) {
    const cap = `${n} / ${modelInfo()?.max_tokens ?? "?"} tokens`;
    const rows = tv?.labels.length ?? n;
    const what = app.s.mergeWords ? "words" : "tokens";
    byId("s-count").textContent = rows === n && !app.s.mergeWords ? cap : `${rows} ${what} shown · ${cap}`;
  }

  /** What the token options mean for the query-key view, whose vectors are the model's tokens'.
   * @param {import("./types.js").TraceMeta} meta @returns {string[]} */
  function optionNotes(meta) {
    const notes = [];
    if (app.s.hideSpecial) {
      notes.push("Special tokens hidden: each weight is renormalised over the keys shown, which is " +
        "the softmax of their scores alone; the scores are the model's.");
    }
    if (app.s.mergeWords) {
      const q = queryIndex();
      const w = meta.words?.[q];
      const word = [];
      for (let i = q; i >= 0 && w != null && meta.words?.[i] === w; i--) word.unshift(i);
      for (let i = q + 1; i < meta.n && w != null && meta.words?.[i] === w; i++) word.push(i);
      const why = "Word pieces are not merged in this view: each piece has its own query and key " +
        "vectors, and a word has none. The model and head views merge them (a word's row there is " +
        "the mean of its pieces' rows, its column the sum of theirs).";
      if (word.length > 1) {
        const off = meta.offsets;
        const text = off && meta.text ? meta.text.slice(off[word[0]][0], off[word[word.length - 1]][1]) : "";
        notes.push(`${why} “${text}” is ${word.length} pieces, tokens ${word[0] + 1}–${word[word.length - 1] + 1} ` +
          `(${word.map((i) => meta.tokens[i]).join(" ")}): pick each as the query.`);
      } else {
        notes.push(why);
      }
    }
    return notes;
  }
  /**
   * Draw the named views (all by default); settles when all are drawn.
   * @param {string[]} [which]
   */
  function drawAll(which = Object.keys(VIEWS)) {
    if (!app.first || !app.active) return Promise.resolve();
    return drawViews(VIEWS, which, hooks.setError);
  }

  /**
   * After a view choice: redraw the views the changed keys feed, write the URL, no new trace.
   * @param {string[]} keys keys of the sentence state that changed
   */
  function viewChanged(keys) {
    hooks.changed();
    const which = viewsFed(SENTENCE_FEEDS, keys);
    if (app.first) prefetch(which);
    status.drawing(drawAll(which), hooks.viewsDrawn);
  }

  // ---- Inputs -----------------------------------------------------------------------------

  function renderInputs() {
    renderSentenceInputs(app.models, app.s, modelInfo(), (text) => {
      app.s.text = text;
      /** @type {HTMLTextAreaElement} */ (byId("s-text")).value = text;
      edited(0);
    });
  }

  /**
   * After an input changed: sync, write the URL, ask for a trace.
   * @param {number | "link"} [delay]
   */
  function edited(delay) {
    hooks.changed();
    if (!app.models?.models.length) return;
    if (delay !== "link") app.problem = null;
    else delay = 0;
    if (!app.s.text.trim()) {
      client.idle();
      hooks.setError("text: must not be empty");
      return;
    }
    const body = { model: app.s.model, text: app.s.text, ...(app.s.generate ? { generate: app.s.generate } : {}) };
    client.request(body, thumbParams(), delay);
  }

  /** Generate: read the three inputs (an error names the one out of range), then a new trace. */
  function generate() {
    const num = (/** @type {string} */ id, /** @type {string} */ name, /** @type {boolean} */ int,
      /** @type {number} */ lo, /** @type {number} */ hi) => {
      const v = Number(/** @type {HTMLInputElement} */ (byId(id)).value);
      if (!Number.isFinite(v) || (int && !Number.isInteger(v)) || v < lo || v > hi) {
        throw new Error(`generate.${name}: must be ${int ? "a whole number" : "a number"} from ${lo} to ${hi}`);
      }
      return v;
    };
    try {
      app.s.generate = {
        steps: num("s-gen-steps", "steps", true, 1, app.models.max_generate),
        temperature: num("s-gen-temp", "temperature", false, 0, 2),
        seed: num("s-gen-seed", "seed", true, 0, 2 ** 31 - 1),
      };
    } catch (err) {
      hooks.setError(/** @type {Error} */ (err).message);
      return;
    }
    app.s.step = null;
    renderInputs();
    edited(0);
  }
  byId("s-gen-go").addEventListener("click", generate);
  byId("s-gen-clear").addEventListener("click", () => {
    app.s.generate = null;
    app.s.step = null;
    renderInputs();
    edited(0);
  });

  byId("s-text").addEventListener("input", (e) => {
    app.s.text = /** @type {HTMLTextAreaElement} */ (e.target).value;
    edited();
  });
  byId("s-model").addEventListener("change", (e) => {
    app.s.model = /** @type {HTMLSelectElement} */ (e.target).value;
    const info = modelInfo();
    if (info) clampSentence(app.s, info.layers, info.heads);
    if (!info?.causal) app.s.generate = null; // an encoder does not write
    renderInputs();
    edited(0);
  });
  /** @param {string} id @param {"hideSpecial" | "mergeWords"} key */
  const option = (id, key) => byId(id).addEventListener("change", (e) => {
    app.s[key] = /** @type {HTMLInputElement} */ (e.target).checked;
    viewChanged([key]);
  });
  option("s-hide-special", "hideSpecial");
  option("s-merge-words", "mergeWords");
  byId("gen-step").addEventListener("input", (e) => {
    app.s.step = Number(/** @type {HTMLInputElement} */ (e.target).value);
    viewChanged(["step"]);
  });
  for (const [id, key] of /** @type {const} */ ([["gen-layer", "layer"], ["gen-head", "head"]])) {
    byId(id).addEventListener("change", (e) => {
      app.s[key] = Number(/** @type {HTMLSelectElement} */ (e.target).value);
      viewChanged([key]);
    });
  }
  /** @type {ReturnType<typeof setInterval> | undefined} */
  let player;
  /** Play the generation steps from the first (or on from the one shown), one every 700 ms. */
  function playGeneration() {
    const button = byId("gen-play");
    const stop = () => {
      clearInterval(player);
      player = undefined;
      button.setAttribute("aria-pressed", "false");
      button.textContent = "▶ play";
    };
    if (player) return stop();
    const g = app.first?.meta.generated;
    if (!g) return;
    if (genStep() >= g.steps) {
      app.s.step = 1;
      viewChanged(["step"]);
    }
    button.setAttribute("aria-pressed", "true");
    button.textContent = "❚❚ pause";
    player = setInterval(() => {
      const now = app.first?.meta.generated;
      if (!now || genStep() >= now.steps) return stop();
      app.s.step = genStep() + 1;
      viewChanged(["step"]);
    }, 700);
  }
  byId("gen-play").addEventListener("click", () => playGeneration());
  byId("mv-aggregate").addEventListener("change", (e) => {
    app.s.aggregate = /** @type {import("./types.js").Aggregate} */ (/** @type {HTMLSelectElement} */ (e.target).value);
    viewChanged(["aggregate"]);
  });
  byId("mv-peak").addEventListener("change", (e) => {
    app.s.peak = /** @type {HTMLInputElement} */ (e.target).checked;
    viewChanged(["peak"]);
  });
  /** @param {string} id */
  const picked = (id) => Number(/** @type {HTMLSelectElement} */ (byId(id)).value);
  byId("hv-layer").addEventListener("change", () => {
    app.s.layer = picked("hv-layer");
    viewChanged(["layer"]);
  });
  byId("qk-layer").addEventListener("change", () => chooseHead(picked("qk-layer"), app.s.head));
  byId("qk-head").addEventListener("change", () => chooseHead(app.s.layer, picked("qk-head")));
  byId("qk-query").addEventListener("change", () => pickQuery(picked("qk-query")));
  byId("hv-all").addEventListener("click", () => {
    app.s.heads = Array.from({ length: app.first?.meta.heads ?? 0 }, (_, h) => h);
    viewChanged(["heads"]);
  });
  byId("hv-none").addEventListener("click", () => {
    app.s.heads = [];
    viewChanged(["heads"]);
  });
  for (const input of /** @type {NodeListOf<HTMLInputElement>} */ (document.querySelectorAll('input[name="traj-dims"]'))) {
    input.addEventListener("change", () => {
      app.s.dims = Number(input.value) === 2 ? 2 : 3;
      viewChanged(["dims"]);
    });
  }
  byId("traj-all").addEventListener("click", () => {
    app.s.picked = "all";
    viewChanged(["picked"]);
  });
  byId("traj-none").addEventListener("click", () => {
    app.s.picked = [];
    viewChanged(["picked"]);
  });
  byId("mv-legend").style.background = WEIGHT_GRADIENT;
  byId("mv-png").addEventListener("click", async () => {
    if (!app.first) return;
    const meta = app.first.meta;
    const thumbs = thumbsOf(await thumbsPart());
    download(modelview.gridPng({ layers: meta.layers, heads: meta.heads, thumbs }, app.s.peak), "attnviz-model-view.png");
  });
  byId("mv-large-png").addEventListener("click", () => {
    const png = heatcanvas.heatPng(byId("mv-large"));
    if (png) download(png, `attnviz-layer${app.s.layer + 1}-head${app.s.head + 1}.png`);
  });
  byId("hv-svg").addEventListener("click", () => {
    const text = headview.headViewSvg(byId("head-view"));
    if (text) download(text, "attnviz-head-view.svg", "image/svg+xml");
  });
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let resizeTimer;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => drawAll(["model", "head"]), 200);
  });

  // ---- Mode -------------------------------------------------------------------------------

  /**
   * Show sentence mode (loading the models the first time); `state` replaces the current one.
   * @param {SentenceState | null} [state]
   */
  async function activate(state = null) {
    app.active = true;
    if (!app.models) {
      status.waiting("models", true);
      try {
        app.models = await fetchModels();
      } catch (err) {
        hooks.setError(`Could not load the models: ${/** @type {Error} */ (err).message}`);
        return;
      } finally {
        status.waiting("models", false);
      }
      if (!state) state = defaultSentence(app.models.default, app.models.examples[0] || "");
    }
    if (state) return load(state);
    renderInputs();
    hooks.changed();
    if (!app.first) return edited(0);
    await status.drawing(drawAll(), hooks.viewsDrawn); // drawn while hidden: sizes were wrong
  }

  /** @param {SentenceState} state */
  function load(state) {
    const names = app.models.models.map((/** @type {any} */ m) => m.name);
    let problem = null;
    if (state.model === null || !names.includes(state.model)) {
      if (state.model !== null) {
        problem = `This link names the model '${state.model}', which this server does not have` +
          (app.models.default ? `; showing ${app.models.default}.` : ".");
      }
      state.model = app.models.default;
    }
    app.s = state;
    const info = modelInfo();
    if (info) clampSentence(app.s, info.layers, info.heads);
    app.problem = problem;
    renderInputs();
    edited("link");
    hooks.setError(problem);
  }

  /** The trace as JSON: whole when the server allows it, else the head in view. */
  async function exportJson() {
    if (!app.first) return null;
    const body = /** @type {TraceParts} */ (app.parts).body;
    const numbers = app.first.meta.json_numbers ?? Infinity;
    if (numbers <= app.models.max_json_values) {
      return { text: await fetchTraceJson(body), name: "attnviz-sentence-trace.json", note: "" };
    }
    const { layer, head } = app.s;
    const lacking = app.first.meta.unavailable ?? {}; // a bridged model without q and k
    const fields = PART_FIELDS.split(",").filter((f) => !(f in lacking)).join(",");
    const text = await fetchTraceJson(body, { fields, layer, head });
    return { text, name: `attnviz-sentence-layer${layer + 1}-head${head + 1}.json`,
      note: `exported layer ${layer + 1}, head ${head + 1}: the whole trace has ` +
        `${numbers.toLocaleString("en")} numbers, over this server's JSON cap` };
  }

  return {
    activate,
    deactivate() {
      app.active = false;
    },
    getState: () => app.s,
    /** The model list is read again on the next activation (a training run added a model). */
    forgetModels() {
      app.models = null;
    },
    hasTrace: () => Boolean(app.first),
    exportJson,
  };
}
