// The toy lab: an editable table of token vectors, the model's wiring, and four views of the
// trace (attention heatmaps, vectors, before/after, distances). Asks the server for what the
// first screen draws, then for one head at a time as the reader picks it.
//
// Where the parts come from is an argument (openParts), and a page without a server gives the
// inputs as a record (fixed): no request is sent, the inputs are read only, and the page calls
// show() with its first response (offline/toy.js).

import { TraceClient, TraceParts, fetchTraceJson } from "../../core/api.js";
import { sub } from "../../core/compact.js";
import { createStatus, drawViews } from "../../core/controller.js";
import { csvByteCap, CSV_TYPE, tableCsv } from "../../core/csv.js";
import { byId, download } from "../../core/dom.js";
import { TOY_FEEDS, viewsFed } from "../../core/feeds.js";
import * as attention from "../../views/heatmaps.js";
import * as beforeAfter from "../../views/beforeafter.js";
import { createControls } from "./controls.js";
import * as distances from "../../views/distances.js";
import { dims, fromPreset, headsNote, normalize, presetNote, problem, toRequest } from "../../core/state.js";
import { parseBlock } from "./paste.js";
import { createTable } from "./table.js";
import * as vectors from "../../views/vectors.js";

/** @typedef {import("../../core/types.js").ToyState} ToyState */
/** @typedef {import("../../core/types.js").Compact} Compact */
/** @typedef {import("../../core/types.js").NDArray} NDArray */

const FIRST = "hidden_states,distances,projection,entropy_mean,score_range,attentions,scores";
const HEAD = "attentions,scores";

/**
 * @param {{setError: (m: string | null) => void, setStatus: (t: string) => void,
 *   setPending: (p: boolean) => void, traceDrawn: () => void, viewsDrawn: () => void,
 *   changed: () => void, unchecked?: () => void,
 *   limits: import("../../core/types.js").Limits, defaults: import("../../core/types.js").ToyConfig,
 *   presets: any[]}} hooks
 * @param {{openParts?: (body: object) => import("../sentence/parts.js").Parts, fixed?: boolean,
 *   still?: boolean}} [sources] openParts: the parts of the trace of a request body (the
 *   server's, by default); fixed: the inputs are a record of what was traced (no request is
 *   sent, nothing edits them: the page calls show()); still: the token vectors in 3-D as a
 *   still picture only (a page without Plotly's 3-D bundle)
 */
export function createToy(hooks, { openParts = (body) => new TraceParts(body), fixed = false, still = false } = {}) {
  const { limits, defaults, presets } = hooks;
  const app = {
    /** @type {ToyState} */ state: /** @type {any} */ (null),
    /** @type {any} */ data: null, // the last good trace's first-screen arrays
    /** @type {import("../sentence/parts.js").Parts | null} */ parts: null,
    /** @type {object | null} */ body: null,
    layers: 1,
    started: false,
    attentionAsked: 0, // the attention view's draws asked: only the newest draws
    active: false,
    touched: false, // the reader has edited the inputs since they were loaded (a preset, a link, a step)
    /** @type {string | null} */ linkProblem: null, // shown until the next edit
    /** @type {string[]} */ said: [], // what the last edit did unasked (a paste, heads changed)
    /** @type {string[]} */ saying: [], // what the edit in progress did, said with its trace
  };

  const status = createStatus(hooks);
  /** The status line: `text`, then what the last edit did that the reader did not ask for. @param {string} text */
  const setStatus = (text) => status.set([text, ...app.said].join(" · "));

  /**
   * Draw a first response (of the request `request`: the FIRST fields at one layer and head)
   * into every view: the trace's parts are opened on its body, seeded with the response.
   * @param {Compact} result @param {{body: object, params: import("../../core/api.js").Params}} request
   */
  function show(result, request) {
    const { meta, arrays } = result;
    const p = meta.projection
      ? {
          components: meta.projection.components,
          ratio: Array.from(arrays["projection.explained_variance_ratio"].data),
          coords: arrays["projection.coords"],
        }
      : null;
    let scoreMax = 0;
    for (const v of arrays.score_range.data) scoreMax = Math.max(scoreMax, v);
    app.data = {
      meta,
      hidden: arrays.hidden_states,
      distances: arrays.distances,
      projection: p,
      entropyMean: arrays.entropy_mean,
      scoreMax,
      still,
    };
    app.body = request.body;
    app.parts = openParts(request.body);
    const { layer, head } = request.params;
    app.parts.seed({ fields: HEAD, layer, head }, result); // the first response holds that head
    hooks.setError(app.linkProblem);
    setStatus(
      `n = ${meta.n}, d = ${meta.d}, ${meta.layers} layer${meta.layers > 1 ? "s" : ""}, ` +
        `${meta.heads} head${meta.heads > 1 ? "s" : ""}`,
    );
    status.drawing(drawAll(), hooks.traceDrawn);
  }

  const client = new TraceClient({
    onPending: (p) => status.waiting("request", p),
    onResult: (result, request) => show(result, request),
    onError(message) {
      hooks.setError(message);
      setStatus("not updated");
    },
  });

  /** @param {Partial<import("../../core/types.js").ToyView>} change */
  const select = (change) => viewChanged(change);

  /** @type {Record<keyof TOY_FEEDS, () => Promise<unknown> | void>} */
  const VIEWS = {
    async attention() {
      const { layer, head, measure } = app.state.view;
      const value = measure === "value_weighted";
      // The first response holds the weights; value-weighted attention is a part of its own.
      const fields = value ? `${HEAD},value_weighted` : HEAD;
      const data = app.data;
      const asked = ++app.attentionAsked;
      const part = await /** @type {import("../sentence/parts.js").Parts} */ (app.parts).get({ fields, layer, head });
      // A newer draw was asked while this part came (a newer trace, another head): it shows
      // its own, and this older part must not land after it.
      if (asked !== app.attentionAsked) return;
      const { meta } = data;
      const entropy = data.entropyMean.data[layer * meta.heads + head];
      return attention.render(
        byId("attention-card"),
        {
          meta,
          scores: sub(part.arrays.scores, 0, 0),
          weights: sub(part.arrays.attentions, 0, 0),
          valueWeighted: value ? sub(part.arrays.value_weighted, 0, 0) : undefined,
          scoreMax: data.scoreMax,
          entropy,
        },
        { layer, head, measure },
        { onSelect: select },
      );
    },
    vectors: () => vectors.render(byId("vectors-card"), app.data, app.state.view, { onSelect: select }),
    beforeAfter: () =>
      beforeAfter.render(
        byId("before-after-card"),
        { tokens: app.data.meta.tokens, hidden: app.data.hidden },
        app.state.view,
      ),
    distances: () =>
      distances.render(
        byId("distances-card"),
        { tokens: app.data.meta.tokens, distances: app.data.distances },
        app.state.view,
        { onSelect: select },
      ),
  };

  /**
   * Draw the named views (all by default); settles when all are drawn.
   * @param {string[]} [which]
   */
  function drawAll(which = Object.keys(VIEWS)) {
    if (!app.data || !app.active) return Promise.resolve();
    return drawViews(VIEWS, which, hooks.setError);
  }

  /**
   * After a view choice (layer, head, tokens): redraw what it feeds, no new trace.
   * @param {Partial<import("../../core/types.js").ToyView>} change
   */
  function viewChanged(change) {
    Object.assign(app.state.view, change);
    normalize(app.state, limits);
    hooks.changed();
    status.drawing(drawAll(viewsFed(TOY_FEEDS, Object.keys(change))), hooks.viewsDrawn);
  }

  /**
   * An edit by the reader (not a preset or link being loaded): the table's or the config's
   * new values (made on a copy by table.js and controls.js, which never write the state), then
   * a new trace.
   * @param {Partial<import("../../core/types.js").ToyState>} patch @param {{structural?: boolean}} change
   */
  function userEdited(patch, change) {
    Object.assign(app.state, patch);
    app.linkProblem = null;
    app.touched = true;
    edited(change);
  }

  const table = createTable(/** @type {HTMLTableElement} */ (byId("embeddings")), {
    getState: () => app.state,
    getLimits: () => limits,
    onEdit: userEdited,
    onNotice: (text) => {
      app.saying.push(importing ? `${importing}: ${text}` : text);
    },
    note: byId("embeddings-problem"),
  });
  let importing = ""; // the name of the file being imported, said with what it did

  const controls = createControls({
    getState: () => app.state,
    getLimits: () => limits,
    onEdit: userEdited,
    onPreset: (preset) => {
      app.linkProblem = null;
      load(fromPreset(preset, defaults));
    },
  });
  controls.setPresets(presets);
  byId("add-token").addEventListener("click", () => table.addToken());
  byId("add-dim").addEventListener("click", () => table.addDim());
  byId("export-csv").addEventListener("click", () => {
    download(tableCsv(app.state), "attnviz-table.csv", CSV_TYPE);
  });
  // Import CSV: the file through paste's parser into the whole table, with paste's limits and
  // status line; a file larger than any table within the limits is refused before it is read.
  const importCsv = /** @type {HTMLInputElement} */ (byId("import-csv"));
  importCsv.addEventListener("change", async () => {
    const file = importCsv.files?.[0];
    importCsv.value = ""; // the same file again is a new import
    if (!file) return;
    const cap = csvByteCap(limits);
    if (file.size > cap) {
      const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
      setStatus(
        `${file.name} is too large (${mb(file.size)}): a table of at most ` +
          `${limits.max_tokens} tokens × ${limits.max_dim} dimensions fits in ${mb(cap)}`,
      );
      return;
    }
    const text = await file.text();
    const block = parseBlock(text);
    if (!block.values.length && !block.axes) {
      setStatus(`${file.name} has no rows to import`);
      return;
    }
    importing = file.name;
    try {
      table.pasteBlock(parseBlock(text), 0, 0);
    } finally {
      importing = "";
    }
  });

  /**
   * After any change of the inputs: tidy the state, sync the form and URL, ask for a trace.
   * @param {{structural?: boolean}} [change]
   */
  function edited({ structural = false } = {}) {
    const s = app.state;
    const heads = s.config.heads;
    normalize(s, limits, app.layers);
    app.said = app.saying;
    app.saying = [];
    const note = headsNote(heads, s, limits);
    if (note) app.said.push(note);
    app.layers = s.config.layers;
    if (structural) table.render();
    controls.render({ weights: structural });
    const preset = presets.find((p) => p.id === s.preset);
    controls.showPreset(s.preset, presetNote(s, preset, limits, defaults, app.touched));
    byId("table-size").textContent = `${s.tokens.length} × ${dims(s)}`;
    byId("toy-mode").style.setProperty("--table-cols", String(dims(s))); // the panel fits up to 8
    /** @type {HTMLButtonElement} */ (byId("add-token")).disabled = s.tokens.length >= limits.max_tokens;
    /** @type {HTMLButtonElement} */ (byId("add-dim")).disabled = dims(s) >= limits.max_dim;
    hooks.changed();
    if (fixed) return lock(); // a record: nothing to ask for, the page shows its trace
    if (!app.active) return; // asked for when the toy lab is shown
    const first = !app.started; // the lab's first trace is asked at once, not after the typing debounce
    app.started = true;
    const bad = problem(s, limits);
    if (bad) {
      hooks.setError(bad);
      client.idle();
      setStatus("not updated");
      hooks.unchecked?.(); // no trace to draw: Learn says the table is to be fixed
      return;
    }
    const { layer, head } = s.view;
    client.request(toRequest(s, defaults), { fields: FIRST, layer, head }, first ? 0 : undefined);
  }

  /** The inputs of a record, read only, and seen to be: the table's cells and the model form
   * without the look of a text box, no remove buttons, and a note in each card (its Export CSV
   * still saves the table). */
  function lock() {
    table.lock();
    const panel = /** @type {HTMLElement} */ (byId("toy-mode").querySelector(".panel"));
    panel.classList.add("read-only");
    for (const e of /** @type {NodeListOf<HTMLInputElement>} */ (
      panel.querySelectorAll("input, select, textarea, button")
    )) {
      if (e.id === "export-csv") continue;
      if (e.tagName === "INPUT" && e.type === "text") e.readOnly = true;
      else e.disabled = true;
    }
    for (const id of ["add-token", "add-dim", "preset-reset"]) byId(id).hidden = true;
    const importLabel = byId("import-csv").closest("label");
    if (importLabel) importLabel.hidden = true;
    const keys = byId("table-keys");
    if (keys.previousElementSibling) /** @type {HTMLElement} */ (keys.previousElementSibling).hidden = true; // how to edit
    keys.textContent = "Tab reaches the table once; the arrow keys move between its cells, which are read only here.";
    for (const card of [byId("embeddings").closest(".card"), byId("config").closest(".card")]) {
      if (!card || card.querySelector(".read-only-note")) continue;
      const note = document.createElement("p");
      note.className = "read-only-note";
      note.textContent = "Read-only copy: open attnviz to edit.";
      (card.querySelector(":scope > .card-head") ?? card.querySelector("h2"))?.after(note);
    }
  }

  /** Show a whole new state (a preset or a link). @param {ToyState} state */
  function load(state) {
    app.state = normalize(state, limits);
    app.touched = false;
    app.layers = app.state.config.layers;
    edited({ structural: true });
  }

  return {
    /** Show the toy lab; `state` (a link's) replaces the current one. @param {ToyState | null} [state] */
    activate(state = null) {
      app.active = true;
      if (state) return load(state);
      if (!app.state) return load(normalize(fromPreset(presets[0], defaults), limits));
      if (!app.started) return edited({ structural: true });
      return status.drawing(drawAll(), hooks.viewsDrawn);
    },
    deactivate() {
      app.active = false;
    },
    /** Say why a link was not followed, until the next edit. @param {string} text */
    setLinkProblem(text) {
      app.linkProblem = text;
      hooks.setError(text);
    },
    /** Draw a first response into every view (what the trace client does with its answer). */
    show,
    getState: () => app.state,
    hasTrace: () => Boolean(app.data),
    /** The HTML export's body (core/api.js exportHtml) for what is in view (null before the first trace). */
    htmlRequest() {
      if (!app.body) return null;
      const { layer, head, vlayer, a, b, trails } = app.state.view;
      return { trace: app.body, selection: { layer, head, view: { vlayer, a, b, trails } } };
    },
    /** The whole trace as the JSON API sends it. */
    exportJson: async () =>
      app.body ? { text: await fetchTraceJson(app.body), name: "attnviz-trace.json", note: "" } : null,
  };
}
