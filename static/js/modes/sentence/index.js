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

import { runName } from "../../core/runname.js";
import { TraceClient, TraceParts, cancelTraceJob, fetchModels, fetchTraceJson } from "../../core/api.js";
import { holdInView } from "../../core/anchor.js";
import { createStatus } from "../../core/controller.js";
import { byId } from "../../core/dom.js";
import { SENTENCE_FEEDS } from "../../core/feeds.js";
import { ablateBody, defaultSentence } from "../../core/state.js";
import { createAtlasCard } from "./cards/atlas.js";
import { createCompositionCard } from "./cards/composition.js";
import { createCorpusCard } from "./cards/corpus.js";
import { createDrawing } from "./draw.js";
import { readsImages, removeImage, renderImages, wireImages, wireCollapse } from "./imageinput.js";
import { renderSentenceInputs, tokenIndex, wireInputs } from "./inputs.js";
import { renderJob } from "./job.js";
import { createMore } from "./more.js";
import { createParts } from "./parts.js";
import { sayUnreadable } from "./unreadable.js";

/** @typedef {import("../../core/types.js").SentenceState} SentenceState */
/** @typedef {import("../../core/types.js").Compact} Compact */
/** @typedef {import("../../core/api.js").Params} Params */
/** @typedef {import("./parts.js").Parts} Parts */
/** @typedef {import("./parts.js").SentenceApp} SentenceApp */
/** @typedef {import("../../core/types.js").ModelList} ModelList */

const PART_FIELDS = "attentions,scores,queries,keys,values"; // a head's JSON export

/**
 * @param {{setError: (m: string | null) => void, setStatus: (t: string) => void,
 *   setPending: (p: boolean) => void, traceDrawn: () => void, viewsDrawn: () => void,
 *   changed: () => void}} hooks traceDrawn: a new trace is drawn in every view; viewsDrawn: a
 *   redraw after a view choice is done; changed: the state changed (write the URL)
 * @param {{openParts?: (body: object) => Parts, models?: ModelList | null, views?: string[]}} [sources]
 *   openParts: the parts of the trace of a request body (the server's, by default); models: the
 *   model list as fetchModels gives it (read from the server when null; given, there is no
 *   server to ask: activate(state) sends no request, the page calls show() with its trace);
 *   views: the names of the views drawn (SENTENCE_FEEDS'; all by default): the others' cards
 *   stay hidden and are never drawn
 */
export function createSentence(hooks, { openParts = undefined, models = null, views = undefined } = {}) {
  const fixed = models !== null; // no server: the trace shown is the page's
  const shown = viewsShown(views);
  const app = createApp();
  const status = createStatus(hooks);
  /** A model's entry in the model list, or null. @param {string | null} name */
  const infoOf = (name) => app.models?.models.find((m) => m.name === name) || null;
  const modelInfo = () => infoOf(app.s.model);
  const p = createParts(app, modelInfo);
  /** The "Many texts" card (made with the atlas's, below): its head follows the views' until the
   * reader picks its own. @type {{sync: () => void} | null} */
  let corpus = null;
  /** The element the reader acted on, kept where it was in the window while the views and
   * cards above it are drawn (a head opened from the atlas: the views above it grow, the atlas
   * stays under the pointer; core/anchor.js). @type {(() => void) | null} */
  let anchor = null;
  const settle = () => anchor?.();
  const jobBox = jobContainer();
  /** A part's job (a remote model's trip to its deployment): shown as a trace's, Cancel stops it.
   * @param {import("../../core/types.js").TraceJob | null} job */
  const partJob = (job) => renderJob(jobBox, job, { cancel: () => job && cancelTraceJob(job.url) });
  /** @type {ReturnType<typeof createMore> | null} */
  let more = null; // made below, with the card draws it opens
  const { show, chooseHead, change, replace, drawAll, hideOthers, knockCard, opened } = createDrawing({
    app,
    p,
    hooks: {
      ...hooks,
      traceDrawn() {
        settle();
        hooks.traceDrawn();
      },
      viewsDrawn() {
        settle();
        hooks.viewsDrawn();
      },
    },
    status,
    shown,
    fixed,
    openParts: openParts ?? ((body) => new TraceParts(body, undefined, partJob)),
    modelInfo,
    edited,
    headChanged: () => corpus?.sync(),
    atlas: () => atlas?.current() ?? null,
    isOpen: (name) => more?.isOpen(name) ?? true,
  });
  more = createMore({
    app,
    fixed,
    shown,
    change,
    opened,
    closed: (name) => (name === "knock" ? knockCard?.close() : undefined),
  });

  const client = new TraceClient({
    delay: 150,
    onPending: (pending) => status.waiting("request", pending),
    onJob: (job) => renderJob(jobBox, job, { cancel: cancelJob }),
    onResult: (result, request) => show(result, request),
    onError(message, code) {
      if (code === 404 && !fixed) return modelGone(message);
      hooks.setError(message);
      status.set("not updated");
      byId("s-count").textContent = "";
    },
  });

  /** Cancel pressed: the job stops on the server, the views keep the trace they show. */
  function cancelJob() {
    client.idle();
    status.set(app.first ? "cancelled: the views show the last trace" : "cancelled");
    /** @type {HTMLElement} */ (byId("s-text")).focus(); // the button is gone
  }

  /**
   * A trace refused with 404: when the model asked for is no longer on the server (a trained
   * run removed, or evicted, while the page stayed open), the model list is read again (every
   * model gone leaves the picker), the page says so and goes back to a model it has: the one
   * whose views are shown, else the server's default. Any other 404 is said as it is.
   * @param {string} message the server's
   */
  async function modelGone(message) {
    const gone = app.s.model;
    // Its name as the picker gave it (a trained run's by what it is, never its id).
    const was = app.models?.models.find((m) => m.name === gone);
    const goneName = was?.run ? runName(was.title, was.created, was.named) : gone;
    /** @type {ModelList | null} */
    let list = null;
    try {
      list = await fetchModels(gone);
    } catch {
      // the list could not be read again: the server's message is all there is to say
    }
    if (!list || !gone || list.models.some((m) => m.name === gone)) {
      hooks.setError(message);
      status.set("not updated");
      return;
    }
    app.models = list;
    const names = list.models.map((m) => m.name);
    const shownModel = /** @type {{model?: string} | undefined} */ (app.parts?.body)?.model;
    const back = shownModel && names.includes(shownModel) ? shownModel : list.default;
    const info = infoOf(back); // (app.models is the new list)
    change(
      { model: back, ...(info?.causal ? {} : { generate: null }) },
      { delay: "link", fit: info ? [info.layers, info.heads] : undefined }, // (keeps the problem said)
    );
    renderInputs();
    app.problem =
      `The model '${goneName}' is no longer on this server (a trained run is removed when its owner ` +
      `forgets it, or when the server keeps too many), so it has left the model list` +
      (back ? `; showing ${back}.` : ".");
    hooks.setError(app.problem);
  }

  // ---- Head atlas -------------------------------------------------------------------------

  /** A head of the atlas (or of the Many texts card) opened on its text: the text, then the
   * head in every view; the page stays where the reader clicked (no focus moves to the model view).
   * @param {string} text @param {number} layer @param {number} head */
  function openHead(text, layer, head) {
    const at = document.activeElement;
    anchor = at && at !== document.body ? holdInView(at) : null;
    const traced = app.first?.meta;
    if (traced && traced.text === text && !traced.generated && app.s.text === text)
      return chooseHead(layer, head, {}, { focus: false });
    /** @type {HTMLTextAreaElement} */ (byId("s-text")).value = text;
    change({ text, layer, head, heads: [head], generate: null, step: null }, { delay: 0 });
    renderInputs();
  }
  /** @type {ReturnType<typeof createCompositionCard> | null} */
  let composition = null;
  const atlas = fixed
    ? null
    : createAtlasCard({
        model: () => app.s.model,
        openHead,
        setError: hooks.setError,
        onShown: () => {
          composition?.redraw();
          drawAll(["why"]); // the heads' roles
        },
      });
  composition = fixed
    ? null
    : createCompositionCard({
        model: () => app.s.model,
        atlas: () => atlas?.current() ?? null,
        openHead: (layer, head) => openHead(app.s.text, layer, head),
        setError: hooks.setError,
      });
  corpus = fixed ? null : createCorpus(app, modelInfo, openHead, hooks.setError);
  if (fixed) serverless();

  // ---- Inputs -----------------------------------------------------------------------------

  function renderInputs() {
    renderSentenceInputs(
      /** @type {ModelList} */ (app.models),
      app.s,
      modelInfo(),
      (text) => {
        /** @type {HTMLTextAreaElement} */ (byId("s-text")).value = text;
        change({ text }, { delay: 0 });
      },
      showExampleHead,
    );
    const images = { app, renderInputs, change };
    renderImages(/** @type {ModelList} */ (app.models), app.s, modelInfo(), (i) => removeImage(images, i));
    hideOthers();
    more?.resolve();
    more?.apply();
    atlas?.sync();
    composition?.sync();
    corpus?.sync();
    knockCard?.sync();
  }

  /**
   * *Show this head*: the example's head in every view (opened, even while the knock-out
   * switch is on), with its query's row chosen: the row its note says to read.
   * @param {import("../../core/types.js").ExampleHead} example
   */
  function showExampleHead(example) {
    const meta = app.first?.meta;
    const query = meta && meta.text === example.text ? tokenIndex(meta.tokens, example.query) : -1;
    chooseHead(example.layer, example.head, query >= 0 ? { query } : {}, { focus: false });
    headIntoView(example.layer, example.head);
  }

  /**
   * The model view scrolled to the window's top (the head's cell and its large heatmap in sight;
   * where its grid is taller than the window, the cell to the middle), smoothly unless the reader
   * asks for less motion, and the focus on the head's cell: a keyboard lands where it looks.
   * @param {number} layer @param {number} head
   */
  function headIntoView(layer, head) {
    const card = byId("model-view-card");
    const cell = /** @type {HTMLElement | null} */ (
      byId("mv-grid").querySelector(`button.mv-cell[data-layer="${layer}"][data-head="${head}"]`)
    );
    const behavior = matchMedia("(prefers-reduced-motion: reduce)").matches ? "auto" : "smooth";
    const fits = !cell || cell.getBoundingClientRect().bottom - card.getBoundingClientRect().top <= innerHeight;
    (fits ? card : /** @type {HTMLElement} */ (cell)).scrollIntoView({ behavior, block: fits ? "start" : "center" });
    if (!cell) card.tabIndex = -1; // no grid drawn yet: the card itself
    (cell ?? card).focus({ preventScroll: true });
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
    // A model that cannot read the text: said by the text box, no trace asked for (a 422).
    const shownModel = /** @type {{model?: string} | undefined} */ (app.parts?.body)?.model ?? null;
    const useText = (/** @type {string} */ text) => {
      /** @type {HTMLTextAreaElement} */ (byId("s-text")).value = text;
      change({ text }, { delay: 0 });
      renderInputs();
    };
    const models = /** @type {ModelList} */ (app.models);
    if (sayUnreadable({ models, info: modelInfo(), text: app.s.text, shown: shownModel, useText })) {
      client.idle();
      hooks.setError(app.problem);
      // As the note by the text box says it: the views (if any) are the last trace's, not this
      // text's (short enough for the header's two lines).
      status.set(`${app.first ? "not updated" : "no trace"}: the model can't read it`);
      return;
    }
    client.request(traceBody(app.s, modelInfo()), p.thumbParams(), delay);
  }

  wireInputs({ app, infoOf, renderInputs, change, setError: hooks.setError });
  wireImages({ app, modelInfo, renderInputs, change, setError: hooks.setError });
  wireCollapse(change);
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let resizeTimer;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    // lens: the columns that fit; qk: side by side, or stacked in a narrow card
    resizeTimer = setTimeout(() => drawAll(["model", "head", "lens", "qk"]), 200);
  });

  // ---- Mode -------------------------------------------------------------------------------

  /**
   * Show sentence mode (loading the models the first time); `state` replaces the current one.
   * @param {SentenceState | null} [state]
   */
  async function activate(state = null) {
    app.active = true;
    if (!app.models) {
      const list = models ?? (await loadModels(status, hooks.setError, state?.model ?? null));
      if (!list) return;
      app.models = list;
      if (!state) state = defaultSentence(list.default, list.examples[0] || "");
    }
    if (state) return load(state);
    renderInputs();
    hooks.changed();
    if (!app.first) return edited(0);
    await status.drawing(drawAll(), hooks.viewsDrawn); // drawn while hidden: sizes were wrong
  }

  /** @param {SentenceState} state */
  function load(state) {
    const problem = servedModel(/** @type {ModelList} */ (app.models), state);
    const info = infoOf(state.model);
    replace(state, info ? [info.layers, info.heads] : undefined);
    app.problem = problem;
    renderInputs();
    edited("link");
    hooks.setError(problem);
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
    /** The trace as JSON: whole when the server allows it, else the head in view. */
    exportJson: () => traceJson(app),
    /** The HTML export's body (core/api.js exportHtml) for what is in view (null before the first trace). */
    htmlRequest: () => htmlRequest(app, p, shown),
  };
}

/** Where a long trace's progress is drawn: under the text's row (made here, hidden). */
function jobContainer() {
  const box = document.createElement("div");
  box.className = "job-progress";
  box.hidden = true;
  const row = byId("s-count").parentElement;
  row?.after(box);
  return box;
}

/**
 * The views drawn: `views` (all of SENTENCE_FEEDS' by default), each checked.
 * @param {string[] | undefined} views @returns {string[]}
 */
function viewsShown(views) {
  const shown = views ?? Object.keys(SENTENCE_FEEDS);
  for (const name of shown) {
    if (!(name in SENTENCE_FEEDS))
      throw new Error(`views: no view named ${name} (views: ${Object.keys(SENTENCE_FEEDS).join(", ")})`);
  }
  return shown;
}

/** Sentence mode's state before the models are read. @returns {SentenceApp} */
function createApp() {
  return {
    s: defaultSentence(),
    models: null,
    first: null,
    parts: null,
    entropy: null,
    active: false,
    problem: null,
    generation: 0,
  };
}

/**
 * The "Many texts" card: the model's queries and keys on a set of texts, with the sentence
 * among them. @param {SentenceApp} app @param {() => import("../../core/types.js").ModelInfo | null} modelInfo
 * @param {(text: string, layer: number, head: number) => void} openHead
 * @param {(message: string | null) => void} setError
 */
function createCorpus(app, modelInfo, openHead, setError) {
  return createCorpusCard({
    model: () => app.s.model,
    info: modelInfo,
    models: () => app.models,
    text: () => app.s.text,
    selection: () => ({ layer: app.s.layer, head: app.s.head }),
    openHead,
    setError,
  });
}

/** A page without a server (a one-file export): no atlas, composition or many texts to ask for
 * (their cards go), no server to rerun the model with heads knocked out. */
function serverless() {
  byId("atlas-card").remove();
  byId("comp-card").remove();
  byId("corpus-card").remove();
  byId("mv-knock-label").hidden = true;
}

/**
 * The server's models, or null when they could not be read (said in the error line); `open`:
 * the model a link names (a trained run's is listed once its name is asked for).
 * @param {ReturnType<typeof createStatus>} status @param {(message: string | null) => void} setError
 * @param {string | null} open
 * @returns {Promise<ModelList | null>}
 */
async function loadModels(status, setError, open) {
  status.waiting("models", true);
  try {
    return await fetchModels(open);
  } catch (err) {
    setError(`Could not load the models: ${/** @type {Error} */ (err).message}`);
    return null;
  } finally {
    status.waiting("models", false);
  }
}

/**
 * The trace request's body for the state: the text, its images (a model that reads them), what
 * to generate, the heads knocked out.
 * @param {SentenceState} s @param {import("../../core/types.js").ModelInfo | null} info the model's entry
 */
function traceBody(s, info) {
  const knocks = !info?.ablate_refused; // the server says when a model's heads cannot be knocked out
  const ablate = knocks && !s.generate ? ablateBody(s) : []; // else the card says why not
  return {
    model: s.model,
    text: s.text,
    ...(readsImages(info) && s.images.length ? { images: s.images.map((i) => i.url) } : {}),
    ...(s.generate ? { generate: s.generate } : {}),
    ...(ablate.length ? { ablate } : {}),
  };
}

/**
 * A link's model, served here or else the server's default (`state.model` set to it).
 * @param {ModelList} models @param {SentenceState} state
 * @returns {string | null} why the link's model is not the one shown, or null
 */
function servedModel(models, state) {
  const names = models.models.map((m) => m.name);
  let problem = null;
  if (state.model === null || !names.includes(state.model)) {
    if (state.model !== null) {
      problem =
        `This link names the model '${state.model}', which this server does not have` +
        (models.default ? `; showing ${models.default}.` : ".");
    }
    state.model = models.default;
  }
  return problem;
}

/** The trace as JSON: whole when the server allows it, else the head in view. @param {SentenceApp} app */
async function traceJson(app) {
  if (!app.first) return null;
  const body = /** @type {Parts} */ (app.parts).body;
  const numbers = app.first.meta.json_numbers ?? Infinity;
  if (numbers <= /** @type {ModelList} */ (app.models).max_json_values) {
    return { text: await fetchTraceJson(body), name: "attnviz-sentence-trace.json", note: "" };
  }
  const { layer, head } = app.s;
  const lacking = app.first.meta.unavailable ?? {}; // a bridged model without q and k
  const fields = PART_FIELDS.split(",")
    .filter((f) => !(f in lacking))
    .join(",");
  const text = await fetchTraceJson(body, { fields, layer, head });
  return {
    text,
    name: `attnviz-sentence-layer${layer + 1}-head${head + 1}.json`,
    note:
      `exported layer ${layer + 1}, head ${head + 1}: the whole trace has ` +
      `${numbers.toLocaleString("en")} numbers, over this server's JSON cap`,
  };
}

/**
 * The HTML export's body (core/api.js exportHtml) for what is in view (null before the first
 * trace). @param {SentenceApp} app @param {ReturnType<typeof createParts>} p
 * @param {string[]} shown the views drawn
 */
function htmlRequest(app, p, shown) {
  if (!app.first || !app.parts) return null;
  const s = app.s;
  const query = p.queryIndex();
  // Why this score's key as its card shows it: the one picked, unless a causal model's query
  // cannot see it (the card then shows the winning key, as the file does by default), and none
  // while heads are knocked out (no split to show).
  const meta = app.first.meta;
  const key = s.key !== null && !meta.ablated?.length && !(meta.causal && s.key > query) ? s.key : null;
  return {
    trace: app.parts.body,
    selection: {
      layer: s.layer,
      head: s.head,
      query,
      ...(key !== null ? { key } : {}),
      hide_special: s.hideSpecial,
      merge_words: s.mergeWords,
      views: shown.filter((v) => v !== "knock"),
    },
  }; // the one-file export has no model to rerun with heads knocked out
}
