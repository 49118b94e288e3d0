// Sentence mode: a real pretrained model on a text the reader types. The controller: it owns
// the state, asks for the trace (the first request carries what the first screen draws, every
// head's thumbnail), shows it (show()), and redraws the views a choice feeds. Each view then
// asks for its part (parts.js: one head exact, one layer, the trajectories...), which the
// server reads from the trace it already computed; the cards (cards.js, one module each in
// cards/) draw the model, head, query-key, trajectory, generation and predictions views, and
// the input card is inputs.js.
//
// Where the parts come from and the model list are arguments (openParts, models), so a page
// without a server draws the same views from parts it holds: it calls show() with its first
// response.

import { TraceClient, TraceParts, fetchModels, fetchTraceJson } from "../../core/api.js";
import { createStatus, drawViews } from "../../core/controller.js";
import { byId } from "../../core/dom.js";
import { SENTENCE_FEEDS, viewsFed } from "../../core/feeds.js";
import { ablateBody, clampSentence, defaultSentence } from "../../core/state.js";
import * as modelview from "../../views/modelview.js";
import { createAtlasCard } from "./atlascard.js";
import { createCards } from "./cards.js";
import { createCorpusCard } from "./corpuscard.js";
import { renderSentenceInputs, wireInputs } from "./inputs.js";
import { createKnockCard } from "./knockcard.js";
import { createParts } from "./parts.js";

/** @typedef {import("../../core/types.js").SentenceState} SentenceState */
/** @typedef {import("../../core/types.js").Compact} Compact */
/** @typedef {import("../../core/api.js").Params} Params */
/** @typedef {import("./parts.js").Parts} Parts */
/** @typedef {import("./parts.js").SentenceApp} SentenceApp */

const PART_FIELDS = "attentions,scores,queries,keys,values"; // a head's JSON export

/**
 * @param {{setError: (m: string | null) => void, setStatus: (t: string) => void,
 *   setPending: (p: boolean) => void, traceDrawn: () => void, viewsDrawn: () => void,
 *   changed: () => void}} hooks traceDrawn: a new trace is drawn in every view; viewsDrawn: a
 *   redraw after a view choice is done; changed: the state changed (write the URL)
 * @param {{openParts?: (body: object) => Parts, models?: any, views?: string[]}} [sources]
 *   openParts: the parts of the trace of a request body (the server's, by default); models: the
 *   model list as fetchModels gives it (read from the server when null; given, there is no
 *   server to ask: activate(state) sends no request, the page calls show() with its trace);
 *   views: the names of the views drawn (SENTENCE_FEEDS'; all by default): the others' cards
 *   stay hidden and are never drawn
 */
export function createSentence(hooks, { openParts = (body) => new TraceParts(body), models = null, views = undefined } = {}) {
  const fixed = models !== null; // no server: the trace shown is the page's
  const shown = views ?? Object.keys(SENTENCE_FEEDS);
  for (const name of shown) {
    if (!(name in SENTENCE_FEEDS)) throw new Error(`views: no view named ${name} (views: ${Object.keys(SENTENCE_FEEDS).join(", ")})`);
  }
  /** @type {SentenceApp} */
  const app = {
    s: defaultSentence(),
    models: null,
    first: null,
    parts: null,
    entropy: null,
    active: false,
    problem: null,
    generation: 0,
  };
  const status = createStatus(hooks);
  const modelInfo = () => app.models?.models.find((/** @type {any} */ m) => m.name === app.s.model) || null;
  const p = createParts(app, modelInfo);

  /**
   * Draw a first response (of the request `request`) into every view: the trace's parts are
   * opened on its body, seeded with the response.
   * @param {Compact} result @param {{body: object, params: Params}} request
   */
  function show(result, request) {
    const { meta } = result;
    app.first = result;
    app.entropy = null;
    app.generation++;
    app.parts = openParts(request.body);
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
  }

  const client = new TraceClient({
    delay: 150,
    onPending: (pending) => status.waiting("request", pending),
    onResult: (result, request) => show(result, request),
    onError(message) {
      hooks.setError(message);
      status.set("not updated");
      byId("s-count").textContent = "";
    },
  });

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

  /** The token count in the input card: the model's tokens against the cap, and the rows the
   * views show when the token options change them.
   * @param {number} n @param {import("../../core/types.js").TokenViewMeta} [tv] */
  function showCount(n, tv) {
    const cap = `${n} / ${modelInfo()?.max_tokens ?? "?"} tokens`;
    const rows = tv?.labels.length ?? n;
    const what = app.s.mergeWords ? "words" : "tokens";
    byId("s-count").textContent = rows === n && !app.s.mergeWords ? cap : `${rows} ${what} shown · ${cap}`;
  }

  /** The "Many texts" card (made with the atlas's, below): its head follows the views' until the
   * reader picks its own. @type {{sync: () => void} | null} */
  let corpus = null;
  // The Knock-out card needs the server (the clean run beside the knocked-out one).
  const knockCard = fixed ? null : createKnockCard({ app, ticket, edited, viewChanged, setError: hooks.setError });
  /** A head's cell clicked in the model view: knocked out (or put back) while the switch is on,
   * else opened. @param {number} layer @param {number} head */
  const pickCell = (layer, head) => (knockCard?.knocking() ? knockCard.toggle(layer, head) : chooseHead(layer, head));
  const drawn = createCards({ app, p, ticket, chooseHead, pickCell, pickQuery, viewChanged, showCount, setError: hooks.setError });
  const cards = { ...drawn,
    async model() {
      await drawn.model();
      knockCard?.mark();
    },
    knock: async () => knockCard?.draw() };
  /** The views drawn (the others are never drawn). */
  const VIEWS = /** @type {typeof cards} */ (Object.fromEntries(Object.entries(cards).filter(([name]) => shown.includes(name))));
  /** Each view's card, by the view's name. */
  const CARDS = /** @type {Record<string, string>} */ ({
    model: "model-view-card", gen: "gen-card", head: "head-view-card", qk: "qk-card", traj: "traj-card",
    lens: "lens-card", knock: "knock-card",
  });
  /** The cards of the views not drawn: hidden (after the input card shows the others). */
  function hideOthers() {
    for (const [name, id] of Object.entries(CARDS)) if (!shown.includes(name)) byId(id).hidden = true;
  }

  /** The parts the views `which` will ask for, asked for now, in the order the server should
   * serve them (it serves them in turn): the head view's (a long text's chosen query rows, else
   * its layer: the slowest first), the chosen head, its query, the trajectories. The grid's
   * titles (each head's entropy) come after every view is drawn; a long text's whole layer
   * (every token's lines) when the pointer comes to the head view.
   * @param {string[]} [which] */
  function prefetch(which = Object.keys(VIEWS)) {
    const asks = {
      head: [p.readsRows() ? p.rowsPart : p.layerPart], model: [p.headPart], traj: [p.projectionPart],
      qk: app.first?.meta.unavailable?.queries ? [] : [p.queryPart], // none without q and k
      gen: app.first?.meta.generated ? [p.genPart] : [],
      lens: app.first?.meta.unavailable?.lens ? [] : [p.lensPart], // none for an encoder
    };
    for (const name of ["head", "model", "gen", "qk", "traj", "lens"]) {
      if (!which.includes(name) || !shown.includes(name)) continue;
      for (const ask of asks[/** @type {keyof asks} */ (name)]) {
        /** @type {() => Promise<unknown>} */ (ask)().catch(() => {}); // a failure is reported by the view that draws the part
      }
    }
  }

  /** Each head's mean entropy into the grid's tooltips. */
  function entropyTitles() {
    const generation = app.generation;
    p.entropyPart().then((part) => {
      if (generation !== app.generation) return;
      app.entropy = part.arrays.entropy_mean;
      modelview.titles(byId("mv-grid"), app.entropy);
    }, () => {});
  }

  /**
   * Draw the named views (all by default); settles when all are drawn.
   * @param {string[]} [which]
   */
  function drawAll(which = Object.keys(VIEWS)) {
    if (!app.first || !app.active) return Promise.resolve();
    return drawViews(VIEWS, which.filter((name) => name in VIEWS), hooks.setError);
  }

  /**
   * After a view choice: redraw the views the changed keys feed, write the URL, no new trace.
   * @param {string[]} keys keys of the sentence state that changed
   */
  function viewChanged(keys) {
    hooks.changed();
    const which = viewsFed(SENTENCE_FEEDS, keys);
    if (keys.includes("layer") || keys.includes("head")) corpus?.sync();
    if (app.first) prefetch(which);
    status.drawing(drawAll(which), hooks.viewsDrawn);
  }

  // ---- Head atlas -------------------------------------------------------------------------

  /** A head of the atlas opened on its probe: the text, then the head in every view.
   * @param {string} text @param {number} layer @param {number} head */
  function openHead(text, layer, head) {
    const traced = app.first?.meta;
    if (traced && traced.text === text && !traced.generated && app.s.text === text) return chooseHead(layer, head);
    Object.assign(app.s, { text, layer, head, heads: [head], generate: null, step: null });
    /** @type {HTMLTextAreaElement} */ (byId("s-text")).value = text;
    renderInputs();
    edited(0);
  }
  // A page without a server (a one-file export) has no atlas to ask for: its card goes.
  const atlas = fixed ? null : createAtlasCard({ model: () => app.s.model, openHead, setError: hooks.setError });
  if (fixed) byId("atlas-card").remove();
  // Many texts: the model's queries and keys on a set of texts, with the sentence among them.
  corpus = fixed ? null : createCorpusCard({ model: () => app.s.model, info: modelInfo, models: () => app.models,
    text: () => app.s.text, selection: () => ({ layer: app.s.layer, head: app.s.head }), openHead, setError: hooks.setError });
  if (fixed) byId("corpus-card").remove();
  if (fixed) byId("mv-knock-label").hidden = true; // no server to rerun the model

  // ---- Inputs -----------------------------------------------------------------------------

  function renderInputs() {
    renderSentenceInputs(app.models, app.s, modelInfo(), (text) => {
      app.s.text = text;
      /** @type {HTMLTextAreaElement} */ (byId("s-text")).value = text;
      edited(0);
    });
    hideOthers();
    atlas?.sync();
    corpus?.sync();
    knockCard?.sync();
  }

  /**
   * After an input changed: sync, write the URL, ask for a trace.
   * @param {number | "link"} [delay]
   */
  function edited(delay) {
    hooks.changed();
    if (fixed || !app.models?.models.length) return; // no server to ask: the page shows its trace
    if (delay !== "link") app.problem = null;
    else delay = 0;
    if (!app.s.text.trim()) {
      client.idle();
      hooks.setError("text: must not be empty");
      return;
    }
    const knocks = !modelInfo()?.ablate_refused; // the server says when a model's heads cannot be knocked out
    const ablate = knocks && !app.s.generate ? ablateBody(app.s) : []; // else the card says why not
    const body = { model: app.s.model, text: app.s.text, ...(app.s.generate ? { generate: app.s.generate } : {}),
      ...(ablate.length ? { ablate } : {}) };
    client.request(body, p.thumbParams(), delay);
  }

  wireInputs({ app, modelInfo, renderInputs, edited, viewChanged, setError: hooks.setError });
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let resizeTimer;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => drawAll(["model", "head", "lens"]), 200); // lens: the columns that fit
  });

  // ---- Mode -------------------------------------------------------------------------------

  /**
   * Show sentence mode (loading the models the first time); `state` replaces the current one.
   * @param {SentenceState | null} [state]
   */
  async function activate(state = null) {
    app.active = true;
    if (!app.models) {
      if (models) app.models = models;
      else {
        status.waiting("models", true);
        try {
          app.models = await fetchModels();
        } catch (err) {
          hooks.setError(`Could not load the models: ${/** @type {Error} */ (err).message}`);
          return;
        } finally {
          status.waiting("models", false);
        }
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
    const body = /** @type {Parts} */ (app.parts).body;
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
    /** Draw a first response into every view (what the trace client does with its answer). */
    show,
    getState: () => app.s,
    /** The model list is read again on the next activation (a training run added a model). */
    forgetModels() {
      app.models = null;
    },
    hasTrace: () => Boolean(app.first),
    exportJson,
    /** The HTML export's body (core/api.js exportHtml) for what is in view (null before the first trace). */
    htmlRequest() {
      if (!app.first || !app.parts) return null;
      const s = app.s;
      return { trace: app.parts.body, selection: { layer: s.layer, head: s.head, query: p.queryIndex(),
        hide_special: s.hideSpecial, merge_words: s.mergeWords,
        views: shown.filter((v) => v !== "lens" && v !== "knock") } }; // the one-file export holds no predictions, no clean run
    },
  };
}
