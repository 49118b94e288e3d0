// The page: three modes (modes/toy, the toy lab; modes/sentence; modes/train), each keeping
// its own state, one status line and error line for the mode in view, the share link in the
// URL, and the header's actions (copy link, export JSON). The layout: core/ holds what every
// mode shares (the API client, the compact form, state, theme, numbers, the DOM helpers);
// views/ every render(container, data, selection, callbacks) module; modes/ the controllers.

import { busy, exportHtml, fetchPresets } from "./core/api.js";
import { byId, download } from "./core/dom.js";
import { copyText, downloadPng } from "./core/export.js";
import { createSentence } from "./modes/sentence/index.js";
import { decodeShare, defaultSentence, encodeShare } from "./core/state.js";
import { createToy } from "./modes/toy/index.js";
import { createTrain } from "./modes/train/index.js";
import { decodeTrainLink } from "./modes/train/link.js";

/** @typedef {"toy" | "sentence" | "train"} Mode */

const root = document.documentElement;
const MODES = /** @type {Mode[]} */ (["toy", "sentence", "train"]);
const TRAIN_HASH = "#train";
/** A Train tab link (modes/train/link.js) as follow() takes it, or null. @param {string} hash */
const trainLink = (hash) => { const train = decodeTrainLink(hash); return train && { mode: "train", train }; };

const app = {
  /** @type {Mode} */ mode: "toy",
  drawn: 0,
  /** @type {Record<Mode, string | null>} */ errors: { toy: null, sentence: null, train: null },
  /** @type {Record<Mode, string>} */ status: { toy: "", sentence: "", train: "" },
  /** @type {Record<Mode, boolean>} */ pending: { toy: false, sentence: false, train: false },
  /** @type {ReturnType<typeof createToy> | null} */ toy: null,
  /** @type {ReturnType<typeof createSentence> | null} */ sentence: null,
  /** @type {ReturnType<typeof createTrain> | null} */ train: null,
};

let exporting = false; // an HTML export in flight (the button waits for it)

function showMessages() {
  const line = byId("error");
  line.textContent = app.errors[app.mode] || "";
  line.hidden = !app.errors[app.mode];
  const wait = busy.retryAt ? Math.max(1, Math.ceil((busy.retryAt - Date.now()) / 1000)) : 0;
  byId("status").textContent = wait ? `busy, retrying in ${wait} s` : app.status[app.mode];
  root.dataset.busy = wait ? "1" : "0";
  root.dataset.pending = app.pending.toy || app.pending.sentence || app.pending.train ? "1" : "0";
  const ready = { toy: app.toy?.hasTrace(), sentence: app.sentence?.hasTrace(), train: app.train?.hasRun() }[app.mode];
  /** @type {HTMLButtonElement} */ (byId("export-json")).disabled = !ready;
  // One HTML file of what is in view: the toy lab and sentence mode (a run's is Train's own).
  const html = /** @type {HTMLButtonElement} */ (byId("export-html"));
  html.hidden = app.mode === "train";
  html.disabled = !ready || app.mode === "train" || exporting;
}

/** @param {Mode} mode */
const messages = (mode) => ({
  /** @param {string | null} message */
  setError(message) {
    app.errors[mode] = message || null;
    showMessages();
  },
  /** @param {string} text */
  setStatus(text) {
    app.status[mode] = text;
    showMessages();
  },
  /** @param {boolean} pending */
  setPending(pending) {
    app.pending[mode] = pending;
    showMessages();
  },
});

/** data-traces counts traces whose views have all finished drawing (the tests wait on it);
 * data-views counts redraws after a view choice (layer, head, token...). */
const traceDrawn = () => {
  root.dataset.traces = String(++app.drawn);
  showMessages();
};
const viewsDrawn = () => { root.dataset.views = String(+(root.dataset.views || 0) + 1); };

/** A link's state of a mode not opened yet (it opens with it), and what a link's toy part is
 * read against. */
const share = {
  /** @type {{toy: import("./core/types.js").ToyState | null, sentence: import("./core/types.js").SentenceState | null}} */
  pending: { toy: null, sentence: null },
  /** @type {import("./core/state.js").ShareContext | null} */ context: null,
};

function writeUrl() {
  // The Train tab's link: the run open (while its server keeps it) and the form's settings.
  if (app.mode === "train") return history.replaceState(null, "", app.train?.link() ?? TRAIN_HASH);
  // Both modes' states travel (each as the reader left it, or as a link gave it).
  const toy = share.pending.toy ?? app.toy?.getState() ?? null;
  const sentence = share.pending.sentence ?? app.sentence?.getState() ?? null;
  if (toy || sentence) history.replaceState(null, "", encodeShare(app.mode, toy, sentence, share.context ?? undefined));
}

/**
 * Show one mode (the other keeps its state); a link's state replaces that mode's.
 * @param {Mode} mode @param {any} [state]
 */
function setMode(mode, state = null) {
  app.mode = mode;
  if (!state && mode !== "train" && share.pending[mode]) state = share.pending[mode]; // a link's, kept until now
  for (const m of MODES) {
    byId(`mode-${m}`).setAttribute("aria-selected", String(m === mode));
    byId(`${m}-mode`).hidden = m !== mode;
  }
  // One error line, in the active mode's inputs.
  if (mode === "sentence") byId("sentence-mode").prepend(byId("error"));
  else /** @type {HTMLElement} */ (byId(`${mode}-mode`).querySelector(".panel")).prepend(byId("error"));
  root.dataset.mode = mode;
  showMessages();
  const toy = /** @type {ReturnType<typeof createToy>} */ (app.toy);
  const sentence = /** @type {ReturnType<typeof createSentence>} */ (app.sentence);
  const train = /** @type {ReturnType<typeof createTrain>} */ (app.train);
  if (mode !== "toy") toy.deactivate();
  if (mode !== "sentence") sentence.deactivate();
  if (mode !== "train") train.deactivate();
  if (mode === "sentence") {
    if (!state) writeUrl();
    return sentence.activate(state);
  }
  if (mode === "train") {
    if (!state) writeUrl();
    return train.activate(state);
  }
  toy.activate(state);
  writeUrl();
}

/** Open a link's state (or the first preset when there is none). @param {any} link */
function follow(link) {
  if (link?.mode === "train") return setMode("train", link.train);
  // The other mode's state opens when that mode is first shown.
  share.pending = { toy: link?.mode === "sentence" ? link.toy : null,
    sentence: link && link.mode !== "sentence" ? link.sentence : null };
  if (link?.mode === "sentence") return setMode("sentence", link.sentence);
  return setMode("toy", link?.toy || null);
}

/** While a request waits out a busy server, count the seconds down in the status line. */
function watchBusy() {
  /** @type {ReturnType<typeof setInterval> | undefined} */
  let ticker;
  busy.addEventListener("change", () => {
    clearInterval(ticker);
    if (busy.retryAt) ticker = setInterval(showMessages, 250);
    showMessages();
  });
}

function wire() {
  byId("export-json").addEventListener("click", async () => {
    const say = messages(app.mode);
    try {
      const out = await { toy: app.toy, sentence: app.sentence, train: app.train }[app.mode]?.exportJson();
      if (!out) return;
      download(out.text, out.name);
      if (out.note) say.setStatus(out.note);
    } catch (err) {
      say.setError(`The export failed: ${/** @type {Error} */ (err).message}`);
    }
  });
  byId("export-html").addEventListener("click", async () => {
    const mode = app.mode;
    if (mode === "train") return;
    const say = messages(mode);
    const body = mode === "toy" ? app.toy?.htmlRequest() : app.sentence?.htmlRequest();
    if (!body) return;
    exporting = true;
    say.setStatus("making the HTML file…");
    try {
      const { blob, name } = await exportHtml(body);
      download(blob, name);
      say.setStatus(`saved ${name}: it opens offline, with no server`);
    } catch (err) {
      say.setError(`The HTML export failed: ${/** @type {Error} */ (err).message}`);
    } finally {
      exporting = false;
      showMessages();
    }
  });
  byId("copy-link").addEventListener("click", async () => {
    writeUrl();
    const copied = await copyText(location.href);
    messages(app.mode).setStatus(copied ? "link copied" : "copy the address bar to share");
  });
  for (const m of MODES) {
    byId(`mode-${m}`).addEventListener("click", () => { if (app.mode !== m) setMode(m); });
  }
  for (const button of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("button.png[data-plot]"))) {
    button.addEventListener("click", () => downloadPng(byId(/** @type {string} */ (button.dataset.plot)), `attnviz-${button.dataset.plot}`));
  }
}

async function init() {
  root.dataset.pending = "1";
  watchBusy();
  if (!window.Plotly) {
    messages("toy").setError("Plotly.js did not load; the plots cannot be drawn.");
    return;
  }
  let presets;
  try {
    presets = await fetchPresets();
  } catch (err) {
    messages("toy").setError(`Could not load the presets: ${/** @type {Error} */ (err).message}`);
    root.dataset.pending = "0";
    return;
  }
  const { limits, config_defaults: defaults } = presets;
  if (!presets.presets.length) {
    messages("toy").setError("The server has no presets.");
    root.dataset.pending = "0";
    return;
  }
  share.context = { presets: presets.presets, limits, defaults };
  // A mode's own change replaces what a link held for it.
  const changed = (/** @type {"toy" | "sentence"} */ mode) => () => {
    share.pending[mode] = null;
    writeUrl();
  };
  app.toy = createToy({ ...messages("toy"), traceDrawn, viewsDrawn, changed: changed("toy"), limits, defaults,
    presets: presets.presets });
  app.sentence = createSentence({ ...messages("sentence"), traceDrawn, viewsDrawn, changed: changed("sentence") });
  app.train = createTrain({ ...messages("train"), viewsDrawn, changed: showMessages, linked() {
    if (app.mode === "train") writeUrl();
  }, openModel(name, text) {
    /** @type {ReturnType<typeof createSentence>} */ (app.sentence).forgetModels();
    setMode("sentence", defaultSentence(name, text));
  } });
  wire();
  /** @type {any} */
  let link = null;
  try {
    link = trainLink(location.hash) ?? decodeShare(location.hash, limits, defaults, presets.presets);
  } catch (err) {
    app.toy.setLinkProblem(`This link could not be read (${/** @type {Error} */ (err).message}); showing the first preset.`);
  }
  window.addEventListener("hashchange", () => {
    try {
      const next = trainLink(location.hash) ?? decodeShare(location.hash, limits, defaults, presets.presets);
      if (next) follow(next);
    } catch (err) {
      messages(app.mode).setError(`This link could not be read (${/** @type {Error} */ (err).message}).`);
    }
  });
  follow(link);
}

init();
