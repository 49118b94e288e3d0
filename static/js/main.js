// The page: two modes (the toy lab, toy.js; sentence mode, sentence.js), each keeping its own
// state, one status line and error line for the mode in view, the share link in the URL, and
// the header's actions (copy link, export JSON).

import { busy, fetchPresets } from "./api.js";
import { byId, download } from "./dom.js";
import { copyText, downloadPng } from "./export.js";
import { createSentence } from "./sentence.js";
import { decodeShare, encodeShare } from "./state.js";
import { createToy } from "./toy.js";

/** @typedef {"toy" | "sentence"} Mode */

const root = document.documentElement;
const MODES = /** @type {Mode[]} */ (["toy", "sentence"]);

const app = {
  /** @type {Mode} */ mode: "toy",
  drawn: 0,
  errors: { toy: /** @type {string | null} */ (null), sentence: /** @type {string | null} */ (null) },
  status: { toy: "", sentence: "" },
  pending: { toy: false, sentence: false },
  /** @type {ReturnType<typeof createToy> | null} */ toy: null,
  /** @type {ReturnType<typeof createSentence> | null} */ sentence: null,
};

function showMessages() {
  const line = byId("error");
  line.textContent = app.errors[app.mode] || "";
  line.hidden = !app.errors[app.mode];
  const wait = busy.retryAt ? Math.max(1, Math.ceil((busy.retryAt - Date.now()) / 1000)) : 0;
  byId("status").textContent = wait ? `busy, retrying in ${wait} s` : app.status[app.mode];
  root.dataset.busy = wait ? "1" : "0";
  root.dataset.pending = app.pending.toy || app.pending.sentence ? "1" : "0";
  const ready = app.mode === "toy" ? app.toy?.hasTrace() : app.sentence?.hasTrace();
  /** @type {HTMLButtonElement} */ (byId("export-json")).disabled = !ready;
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

function writeUrl() {
  const toy = app.toy?.getState();
  if (toy && app.sentence) history.replaceState(null, "", encodeShare(app.mode, toy, app.sentence.getState()));
}

/**
 * Show one mode (the other keeps its state); a link's state replaces that mode's.
 * @param {Mode} mode @param {any} [state]
 */
function setMode(mode, state = null) {
  app.mode = mode;
  for (const m of MODES) {
    byId(`mode-${m}`).setAttribute("aria-selected", String(m === mode));
    byId(`${m}-mode`).hidden = m !== mode;
  }
  // One error line, in the active mode's inputs.
  if (mode === "toy") /** @type {HTMLElement} */ (byId("toy-mode").querySelector(".panel")).prepend(byId("error"));
  else byId("sentence-mode").prepend(byId("error"));
  root.dataset.mode = mode;
  showMessages();
  const toy = /** @type {ReturnType<typeof createToy>} */ (app.toy);
  const sentence = /** @type {ReturnType<typeof createSentence>} */ (app.sentence);
  if (mode === "sentence") {
    toy.deactivate();
    if (!state) writeUrl();
    return sentence.activate(state);
  }
  sentence.deactivate();
  toy.activate(state);
  writeUrl();
}

/** Open a link's state (or the first preset when there is none). @param {any} link */
function follow(link) {
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
      const out = await (app.mode === "toy" ? app.toy?.exportJson() : app.sentence?.exportJson());
      if (!out) return;
      download(out.text, out.name);
      if (out.note) say.setStatus(out.note);
    } catch (err) {
      say.setError(`The export failed: ${/** @type {Error} */ (err).message}`);
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
  app.toy = createToy({ ...messages("toy"), traceDrawn, viewsDrawn, changed: writeUrl, limits, defaults,
    presets: presets.presets });
  app.sentence = createSentence({ ...messages("sentence"), traceDrawn, viewsDrawn, changed: writeUrl });
  wire();
  let link = null;
  try {
    link = decodeShare(location.hash, limits, defaults);
  } catch (err) {
    app.toy.setLinkProblem(`This link could not be read (${/** @type {Error} */ (err).message}); showing the first preset.`);
  }
  window.addEventListener("hashchange", () => {
    try {
      const next = decodeShare(location.hash, limits, defaults);
      if (next) follow(next);
    } catch (err) {
      messages(app.mode).setError(`This link could not be read (${/** @type {Error} */ (err).message}).`);
    }
  });
  follow(link);
}

init();
