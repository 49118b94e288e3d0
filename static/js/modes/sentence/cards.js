// The cards of sentence mode's views: each card's chrome (its pickers, captions and notes) and
// the view module that draws into it, from the parts the view asks for (parts.js); and the
// cards' own controls (pickers, play, PNG and SVG downloads), wired once.

import { sub } from "../../core/compact.js";
import { CSV_TYPE, partCsv } from "../../core/csv.js";
import { byId, download, el, fillIndexSelect, fillOptions } from "../../core/dom.js";
import { fmt } from "../../core/numbers.js";
import { WEIGHT_GRADIENT } from "../../core/theme.js";
import * as genview from "../../views/genview.js";
import * as headview from "../../views/headview.js";
import * as heatcanvas from "../../views/heatcanvas.js";
import * as lensview from "../../views/lens.js";
import * as modelview from "../../views/modelview.js";
import * as qkview from "../../views/qkview.js";
import * as trajectories from "../../views/trajectories.js";
import { thumbsOf, tokenView } from "./parts.js";

/** @typedef {import("../../core/types.js").Compact} Compact */

/**
 * Toggle buttons for the tokens `shown` (original indices); `picked` null = all on.
 * @param {HTMLElement} box @param {string[]} tokens @param {number[]} shown
 * @param {number[] | null} picked
 * @param {(picked: number[] | null) => void} onChange picked list, or null when all are on
 */
function fillTokenChips(box, tokens, shown, picked, onChange) {
  const key = shown.map((i) => `${i}:${tokens[i]}`).join("\u0000");
  if (box.dataset.key !== key) {
    box.dataset.key = key;
    box.replaceChildren(...shown.map((i) => el("button", { type: "button", className: "token-chip",
      dataset: { index: String(i) }, textContent: tokens[i] })));
  }
  box.onclick = (e) => {
    const b = /** @type {Element} */ (e.target).closest("button.token-chip");
    if (!b) return;
    b.setAttribute("aria-pressed", b.getAttribute("aria-pressed") === "true" ? "false" : "true");
    const on = [...box.querySelectorAll('button.token-chip[aria-pressed="true"]')]
      .map((c) => Number(/** @type {HTMLElement} */ (c).dataset.index));
    onChange(on.length === shown.length ? null : on);
  };
  for (const b of /** @type {NodeListOf<HTMLElement>} */ (box.querySelectorAll("button.token-chip"))) {
    const on = !picked || picked.includes(Number(b.dataset.index));
    b.setAttribute("aria-pressed", on ? "true" : "false");
  }
}

/**
 * The views' draws by name (each settles when its view is drawn), and the cards' controls.
 * @param {{app: import("./parts.js").SentenceApp, p: ReturnType<typeof import("./parts.js").createParts>,
 *   ticket: (name: string) => () => boolean, chooseHead: (layer: number, head: number) => void,
 *   pickCell?: (layer: number, head: number) => void,
 *   pickQuery: (index: number) => void, viewChanged: (keys: string[]) => void,
 *   showCount: (n: number, tv?: import("../../core/types.js").TokenViewMeta) => void,
 *   setError: (message: string | null) => void}} ctx
 *   ticket(name)(): the draw begun is still the newest of its view and trace; pickCell: a model
 *   view cell clicked (chooseHead by default; the knock-out switch's toggle); setError: the
 *   error line (a download that failed says why there)
 */
export function createCards(ctx) {
  const { app, p, ticket, chooseHead, pickQuery, viewChanged, showCount, setError } = ctx;

  const views = {
    async lens() {
      const current = ticket("lens");
      const meta = /** @type {Compact} */ (app.first).meta;
      const box = byId("lens-view");
      const lacking = meta.unavailable?.lens;
      if (lacking) return lensview.renderUnavailable(box, lacking);
      const part = await p.lensPart();
      if (!current()) return;
      const m = /** @type {any} */ (part.meta);
      const a = part.arrays;
      lensview.render(box, {
        tokens: meta.tokens, start: m.lens.start, predicts: m.lens.predicts,
        top: { k: m.top_k.k, ids: a["top_k.ids"], probs: a["top_k.probs"], vocab: m.top_k.vocab },
        lens: { rows: m.lens.rows, ids: a["lens.ids"], probs: a["lens.probs"], targets: a["lens.targets"],
          target_ranks: a["lens.target_ranks"], target_probs: a["lens.target_probs"], vocab: m.lens.vocab },
      }, { query: p.queryIndex() }, { onPick: pickQuery });
    },
    async model() {
      const current = ticket("model");
      const meta = /** @type {Compact} */ (app.first).meta;
      const thumbs = await p.thumbsPart();
      if (!current()) return;
      const grid = byId("mv-grid");
      const sel = { layer: app.s.layer, head: app.s.head, peak: app.s.peak };
      const data = { layers: meta.layers, heads: meta.heads, thumbs: thumbsOf(thumbs), entropy: app.entropy };
      const tv = tokenView(thumbs.meta);
      // Value-weighted norms are not weights: the grid is coloured from 0 to the largest of every
      // head's (heads compared on one scale), unless each head goes to its own peak.
      const value = thumbs.meta.measure === "value_weighted";
      const top = value ? modelview.thumbsTop(data.thumbs) : 1;
      showMeasure(meta, value);
      // Past 64 rows the chosen head gets the card's whole width, below the grid (whose cells
      // are then as wide as thumbSize() says).
      /** @type {HTMLElement} */ (byId("model-view-card").querySelector(".mv-split")).classList.toggle("stacked", tv.labels.length > 64);
      modelview.render(grid, data, { ...sel, top, unit: value ? "value-weighted" : undefined }, { onSelect: ctx.pickCell ?? chooseHead });
      byId("mv-shape").textContent = `${meta.layers} layers × ${meta.heads} heads`;
      showCount(meta.n, tv);
      byId("s-note").textContent = tv.note; // what the token options did, in the server's words
      byId("s-note").hidden = !tv.note;
      const { pool, size } = data.thumbs;
      const poolNote = byId("mv-pool");
      poolNote.hidden = pool === 1;
      poolNote.textContent = pool === 1 ? "" : `${tv.labels.length} tokens in ` +
        `${size} pixels: each thumbnail pixel is the largest ${value ? "value" : "weight"} of a ${pool} × ${pool} block.`;
      byId("mv-legend-max").textContent = app.s.peak ? "peak" : value ? fmt(top, 3) : "1";
      byId("mv-legend-unit").textContent = value ? "value-weighted norm ‖a v W_O‖" : "attention weight";
      const agg = app.s.aggregate;
      const head = await p.headPart();
      if (!current()) return;
      const hv = tokenView(head.meta);
      const matrix = agg === "head" ? sub(head.arrays.view, 0, 0) : sub(head.arrays[agg], 0);
      // What the large heatmap's cells are: weights (rollout's rows always sum to 1), or norms.
      const norms = agg === "value_weighted_sum" || (head.meta.measure === "value_weighted" && agg !== "rollout");
      const vw = head.meta.measure === "value_weighted" ? ", value-weighted" : "";
      const what = { head: `head ${app.s.head + 1}${vw}`, head_mean: `mean of ${meta.heads} heads${vw}`,
        head_max: `max of ${meta.heads} heads${vw}`, rollout: `rollout through it${vw}`,
        value_weighted_sum: `norm of ${meta.heads} heads' summed contributions` }[agg];
      heatcanvas.render(byId("mv-large"), {
        labels: hv.labels, matrix, title: `Layer ${app.s.layer + 1}, ${what}`,
        unit: norms ? "value-weighted norm" : "weight",
      }, { query: p.queryRow(hv.groups), peak: app.s.peak || agg === "head_max" || norms }, { onPick: (row) => pickQuery(hv.groups[row][0]) });
      const cell = norms ? "value-weighted norm (what the key adds to the query's output)" : agg === "head" ? "weight" : "value";
      byId("mv-caption").textContent = agg === "head"
        ? `The chosen head: hover a cell for its exact ${cell}; click a row to make its token the query.`
        : `The chosen layer's heads together: hover a cell for its exact ${cell}; click a row to make its token the query.`;
      const rule = byId("mv-rule");
      const ruleText = head.meta.rules?.[agg === "head" ? "value_weighted" : agg] ?? "";
      rule.hidden = !ruleText;
      rule.textContent = ruleText;
      const sink = modelview.sinkNote(matrix, hv.labels, !norms && (agg === "head" || agg === "head_mean"), hv.groups);
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
      const step = p.genStep();
      const slider = /** @type {HTMLInputElement} */ (byId("gen-step"));
      slider.max = String(g.steps);
      slider.value = String(step);
      byId("gen-step-out").textContent = `step ${step} / ${g.steps}` +
        (g.stopped ? " · then it wrote its end-of-text token and stopped" : "");
      const part = await p.genPart();
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
      const meta0 = /** @type {Compact} */ (app.first).meta;
      const value = p.valueWeighted();
      showMeasure(meta0, value);
      const unit = value ? "value-weighted norm" : undefined;
      /** @param {import("../../core/types.js").TraceMeta} partMeta @param {import("../../views/headview.js").HeadViewData} data */
      const draw = (partMeta, data) => {
        const tv = tokenView(partMeta);
        headview.render(box, data, { layer: app.s.layer, heads: app.s.heads, query: p.queryRow(tv.groups), unit },
          { onPick: (row) => pickQuery(tv.groups[row][0]) });
      };
      if (!p.readsRows()) {
        const part = await p.layerPart();
        if (current()) draw(part.meta, { labels: tokenView(part.meta).labels, values: part.values, scale: part.scale });
        return;
      }
      // A long text: the chosen query's lines from its exact rows (small, quick); every token's
      // weights (megabytes) only when the pointer comes to the view.
      const q = p.queryIndex();
      const part = await p.rowsPart();
      if (!current()) return;
      const rows = sub(part.arrays[value ? "value_weighted" : "attentions"], 0);
      headview.render(box, { labels: meta.tokens, rows: { query: q, weights: rows } },
        { layer: app.s.layer, heads: app.s.heads, query: q, unit }, {
          onPick: pickQuery,
          onNeedAll: () => p.layerPart().then((full) => {
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
        keys.map((i) => [i, `${i + 1}. ${meta.tokens[i]}`]), p.queryIndex());
      if (meta.unavailable?.queries) return qkview.renderUnavailable(byId("qk-view"), meta);
      const part = await p.queryPart();
      if (!current()) return;
      const input = { ...qkview.headInput(meta.tokens, part.arrays, p.queryIndex(), qkview.scoreRule(meta)),
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
      const part = await p.projectionPart();
      if (!current()) return;
      // The rows under the token options (the server's): special tokens left out, a word's
      // point the mean of its pieces'. A row stands for its first token (its original index).
      const tv = part.meta.token_view;
      const groups = tv ? tv.groups : meta.tokens.map((_, i) => [i]);
      const labels = tv ? tv.labels : meta.tokens;
      const heads = groups.map((g) => g[0]);
      const rows = trajectories.defaultRows(groups, s.picked, p.queryIndex());
      /** @type {string[]} */
      const chipLabels = [];
      heads.forEach((i, r) => { chipLabels[i] = labels[r]; });
      fillTokenChips(byId("traj-tokens"), chipLabels, heads, rows.map((r) => heads[r]), (picked) => {
        app.s.picked = picked ?? "all";
        viewChanged(["picked"]);
      });
      const proj = part.meta.projection;
      const projection = proj ? { components: proj.components, coords: part.arrays["projection.coords"],
        ratio: Array.from(part.arrays["projection.explained_variance_ratio"].data) } : null;
      return trajectories.render(byId("traj-view"), { tokens: labels, positions: heads, projection,
        unit: s.mergeWords ? "words" : "tokens", defaulted: s.picked === null },
      { tokens: rows, dims: s.dims }, { onPick: (r) => pickQuery(heads[r]) });
    },
  };


  /**
   * Both cards' weights | value-weighted switches as the state says (off, with the reason, for
   * a trace without value-weighted attention), and the notes that say what is shown.
   * @param {import("../../core/types.js").TraceMeta} meta @param {boolean} value shown now
   */
  function showMeasure(meta, value) {
    const lacking = meta.unavailable?.value_weighted ?? "";
    for (const name of ["mv-measure", "hv-measure"]) {
      for (const input of /** @type {NodeListOf<HTMLInputElement>} */ (document.querySelectorAll(`input[name="${name}"]`))) {
        input.checked = input.value === (value ? "value_weighted" : "weights");
        input.disabled = Boolean(lacking) && input.value === "value_weighted";
        /** @type {HTMLElement} */ (input.parentElement).title = input.disabled ? lacking.replace(/^value_weighted: /, "") : "";
      }
    }
    const said = lacking && app.s.measure === "value_weighted"
      ? `Value-weighted attention is not available: ${lacking.replace(/^value_weighted: /, "")}. The weights are shown.`
      : value ? "Value-weighted: each cell is ||a_ij v_j W_O^h||, the norm of what key j adds to query i's " +
        "output through the head (its weight times its value through the head's slice of the output " +
        "projection; Kobayashi et al., 2020). A key with much weight but a small value moves little." : "";
    for (const id of ["mv-measure-note", "hv-measure-note"]) {
      byId(id).hidden = !said;
      byId(id).textContent = id === "hv-measure-note" && value
        ? "Value-weighted: a line's thickness and opacity is ||a_ij v_j W_O^h|| over the strongest line drawn " +
          "(lines under 1% of it are left out)." : said;
    }
  }

  /** What the token options mean for the query-key view, whose vectors are the model's tokens'.
   * @param {import("../../core/types.js").TraceMeta} meta @returns {string[]} */
  function optionNotes(meta) {
    const notes = [];
    if (app.s.hideSpecial) {
      notes.push("Special tokens hidden: each weight is renormalised over the keys shown, which is " +
        "the softmax of their scores alone; the scores are the model's.");
    }
    if (app.s.mergeWords) {
      const q = p.queryIndex();
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
    if (p.genStep() >= g.steps) {
      app.s.step = 1;
      viewChanged(["step"]);
    }
    button.setAttribute("aria-pressed", "true");
    button.textContent = "❚❚ pause";
    player = setInterval(() => {
      const now = app.first?.meta.generated;
      if (!now || p.genStep() >= now.steps) return stop();
      app.s.step = p.genStep() + 1;
      viewChanged(["step"]);
    }, 700);
  }
  byId("gen-play").addEventListener("click", () => playGeneration());
  byId("mv-aggregate").addEventListener("change", (e) => {
    app.s.aggregate = /** @type {import("../../core/types.js").Aggregate} */ (/** @type {HTMLSelectElement} */ (e.target).value);
    viewChanged(["aggregate"]);
  });
  for (const name of ["mv-measure", "hv-measure"]) {
    for (const input of /** @type {NodeListOf<HTMLInputElement>} */ (document.querySelectorAll(`input[name="${name}"]`))) {
      input.addEventListener("change", () => {
        if (!input.checked) return;
        app.s.measure = /** @type {import("../../core/types.js").Measure} */ (input.value);
        viewChanged(["measure"]);
      });
    }
  }
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
    const thumbs = thumbsOf(await p.thumbsPart());
    const top = p.valueWeighted() ? modelview.thumbsTop(thumbs) : 1;
    download(modelview.gridPng({ layers: meta.layers, heads: meta.heads, thumbs }, app.s.peak, top), "attnviz-model-view.png");
  });
  byId("mv-large-png").addEventListener("click", () => {
    const png = heatcanvas.heatPng(byId("mv-large"));
    if (png) download(png, `attnviz-layer${app.s.layer + 1}-head${app.s.head + 1}.png`);
  });
  // CSV of the chosen head, its layer's mean, and the hidden states after that layer: the
  // parts' exact numbers, as Python's trace.to_csv writes them for the same selection. A part
  // that cannot be had (the server refused it, a saved file does not hold it) is said in the
  // error line.
  /** @param {"attention" | "layer_mean" | "hidden_states"} what @param {string} name @param {object} params */
  async function saveCsv(what, name, params) {
    if (!app.parts) return;
    const layer = app.s.layer;
    try {
      const part = await app.parts.get(params);
      download(partCsv(what, part, layer + 1), `attnviz-layer${layer + 1}-${name}.csv`, CSV_TYPE);
    } catch (err) {
      setError(`The CSV could not be made: ${/** @type {Error} */ (err).message}`);
    }
  }
  byId("mv-csv-head").addEventListener("click", () => saveCsv("attention", `head${app.s.head + 1}`,
    { fields: "attentions", layer: app.s.layer, head: app.s.head }));
  byId("mv-csv-mean").addEventListener("click", () => saveCsv("layer_mean", "mean",
    { fields: "head_mean", layer: app.s.layer }));
  byId("mv-csv-states").addEventListener("click", () => saveCsv("hidden_states", "hidden-states",
    { fields: "hidden_states" }));
  byId("hv-svg").addEventListener("click", () => {
    const text = headview.headViewSvg(byId("head-view"));
    if (text) download(text, "attnviz-head-view.svg", "image/svg+xml");
  });

  return views;
}
