// Wiring: state -> URL and API request; API response -> every view. Two modes: the toy lab
// (an editable table) and sentence mode (sentence.js), each keeping its own state.

import { TraceClient, fetchPresets } from "./api.js";
import { renderBeforeAfter } from "./beforeafter.js";
import { createControls } from "./controls.js";
import { renderDistances } from "./distances.js";
import { copyText, downloadPng, downloadText } from "./export.js";
import { renderAttention } from "./heatmaps.js";
import { createSentence } from "./sentence.js";
import {
  DEFAULT_LIMITS, decodeShare, dims, encodeShare, fromPreset, matchesPreset, normalize, problem,
  toRequest,
} from "./state.js";
import { createTable } from "./table.js";
import { renderVectors } from "./vectors.js";

const $ = (id) => document.getElementById(id);
const root = document.documentElement;

const app = {
  state: null, // see state.js
  limits: DEFAULT_LIMITS,
  presets: [],
  trace: null, // the last good TraceResponse, and its text as the server sent it
  text: null,
  drawn: 0,
  linkProblem: null, // why the URL's state could not be used; shown until the next edit
  mode: "toy", // or "sentence"
  toyStarted: false, // the toy lab asked for its first trace
  errors: { toy: null, sentence: null }, // each mode's error line and status
  status: { toy: "", sentence: "" },
  pending: { toy: false, sentence: false },
};

function showMessages() {
  const line = $("error");
  line.textContent = app.errors[app.mode] || "";
  line.hidden = !app.errors[app.mode];
  $("status").textContent = app.status[app.mode];
  root.dataset.pending = app.pending.toy || app.pending.sentence ? "1" : "0";
  const text = app.mode === "toy" ? app.text : sentence.traceText();
  $("export-json").disabled = !text;
}

const messages = (mode) => ({
  setError(message) {
    app.errors[mode] = message || null;
    showMessages();
  },
  setStatus(text) {
    app.status[mode] = text;
    showMessages();
  },
  setPending(pending) {
    app.pending[mode] = pending;
    if (pending) app.status[mode] = "computing…";
    showMessages();
  },
});
const { setError, setStatus } = messages("toy");

/** data-traces counts traces whose views have all finished drawing (the tests wait on it);
 * data-views counts redraws after a view choice (layer, head, token...) in sentence mode. */
const traceDrawn = () => { root.dataset.traces = String(++app.drawn); };

const sentence = createSentence({
  ...messages("sentence"),
  traceDrawn,
  viewsDrawn: () => { root.dataset.views = String(+(root.dataset.views || 0) + 1); },
  changed: () => writeUrl(),
});

const client = new TraceClient({
  onPending: messages("toy").setPending,
  onResult(trace, text) {
    app.trace = trace;
    app.text = text;
    setError(app.linkProblem);
    const drawn = drawAll();
    setStatus(`n = ${trace.n}, d = ${trace.d}, ${trace.layers} layer${trace.layers > 1 ? "s" : ""}, ` +
      `${trace.heads} head${trace.heads > 1 ? "s" : ""}`);
    showMessages();
    drawn.then(traceDrawn);
  },
  onError(message) {
    setError(message);
    setStatus("not updated");
  },
});

const VIEWS = {
  attention: (trace, view) => renderAttention(trace, view),
  vectors: (trace, view) => renderVectors(trace, view),
  beforeAfter: (trace, view) => renderBeforeAfter($("before-after"), trace, view),
  distances: (trace, view) => renderDistances(trace, view),
};

/** Draw the views named in `which` (all of them by default); settles when all are drawn. */
function drawAll(which = Object.keys(VIEWS)) {
  if (!app.trace) return Promise.resolve();
  return Promise.all(which.map((name) => VIEWS[name](app.trace, app.state.view)));
}

function writeUrl() {
  if (app.state) history.replaceState(null, "", encodeShare(app.mode, app.state, sentence.getState()));
}

/** Show one mode (the other keeps its state); `sentenceState` replaces sentence mode's. */
function setMode(mode, sentenceState = null) {
  app.mode = mode;
  for (const m of ["toy", "sentence"]) {
    $(`mode-${m}`).setAttribute("aria-selected", String(m === mode));
    $(`${m}-mode`).hidden = m !== mode;
  }
  // One error line, in the active mode's inputs.
  if (mode === "toy") $("toy-mode").querySelector(".panel").prepend($("error"));
  else $("sentence-mode").prepend($("error"));
  root.dataset.mode = mode;
  showMessages();
  if (!sentenceState) writeUrl();
  if (mode === "sentence") return sentence.activate(sentenceState);
  sentence.deactivate();
  if (!app.toyStarted) edited({ structural: true });
  else drawAll();
}

/** An edit by the reader (not a preset or link being loaded). */
function userEdited(change) {
  app.linkProblem = null;
  edited(change);
}

const table = createTable($("embeddings"), {
  getState: () => app.state,
  getLimits: () => app.limits,
  onEdit: userEdited,
  onNotice: setStatus,
});

const controls = createControls({
  getState: () => app.state,
  getLimits: () => app.limits,
  onEdit: userEdited,
  onPreset: (preset) => {
    app.linkProblem = null;
    load(fromPreset(preset));
  },
});

/** After any change of the inputs: tidy the state, sync the form and URL, ask for a trace. */
function edited({ structural = false } = {}) {
  const s = app.state;
  normalize(s, app.limits, app.layers);
  app.layers = s.config.layers;
  if (structural) table.render();
  controls.render({ weights: structural });
  const preset = app.presets.find((p) => p.id === s.preset);
  controls.showPreset(s.preset, !matchesPreset(s, preset, app.limits));
  $("table-size").textContent = `${s.tokens.length} × ${dims(s)}`;
  $("add-token").disabled = s.tokens.length >= app.limits.max_tokens;
  $("add-dim").disabled = dims(s) >= app.limits.max_dim;
  writeUrl();
  if (app.mode !== "toy") return; // asked for when the toy lab is shown
  app.toyStarted = true;
  const bad = problem(s, app.limits);
  if (bad) {
    setError(bad);
    setStatus("not updated");
    client.idle();
    return;
  }
  client.request(toRequest(s));
}

/** Show a whole new state (a preset or a link). */
function load(state) {
  app.state = normalize(state, app.limits);
  app.layers = app.state.config.layers;
  edited({ structural: true });
}

/** After a view choice (layer, head, tokens): redraw what shows it, no request. */
function viewChanged(change, which) {
  Object.assign(app.state.view, change);
  normalize(app.state, app.limits);
  writeUrl();
  drawAll(which);
}

function wire() {
  $("add-token").addEventListener("click", () => table.addToken());
  $("add-dim").addEventListener("click", () => table.addDim());
  const on = (id, event, change, which) =>
    $(id).addEventListener(event, (e) => viewChanged(change(e.target), which));
  on("att-layer", "change", (t) => ({ layer: Number(t.value) }), ["attention"]);
  on("att-head", "change", (t) => ({ head: Number(t.value) }), ["attention"]);
  on("vec-layer", "input", (t) => ({ vlayer: Number(t.value) }), ["vectors", "beforeAfter", "distances"]);
  on("vec-trails", "change", (t) => ({ trails: t.checked }), ["vectors"]);
  on("dist-a", "change", (t) => ({ a: Number(t.value) }), ["distances"]);
  on("dist-b", "change", (t) => ({ b: Number(t.value) }), ["distances"]);
  $("export-json").addEventListener("click", () => {
    const [text, name] = app.mode === "toy"
      ? [app.text, "attnviz-trace.json"] : [sentence.traceText(), "attnviz-sentence-trace.json"];
    if (text) downloadText(text, name);
  });
  $("copy-link").addEventListener("click", async () => {
    writeUrl();
    const copied = await copyText(location.href);
    messages(app.mode).setStatus(copied ? "link copied" : "copy the address bar to share");
  });
  for (const m of ["toy", "sentence"]) {
    $(`mode-${m}`).addEventListener("click", () => { if (app.mode !== m) setMode(m); });
  }
  for (const button of document.querySelectorAll("button.png[data-plot]")) {
    button.addEventListener("click", () => downloadPng($(button.dataset.plot), `attnviz-${button.dataset.plot}`));
  }
  window.addEventListener("hashchange", () => {
    try {
      const link = decodeShare(location.hash, app.limits);
      if (link) follow(link);
    } catch (err) {
      setError(`This link could not be read (${err.message}).`);
    }
  });
}

async function init() {
  root.dataset.pending = "1";
  if (!window.Plotly) {
    setError("Plotly.js did not load; the plots cannot be drawn.");
    return;
  }
  wire();
  try {
    const { presets, limits } = await fetchPresets();
    app.presets = presets;
    app.limits = { ...DEFAULT_LIMITS, ...limits };
  } catch (err) {
    setError(`Could not load the presets: ${err.message}`);
    root.dataset.pending = "0";
    return;
  }
  controls.setPresets(app.presets);
  let link = null;
  try {
    link = decodeShare(location.hash, app.limits);
  } catch (err) {
    app.linkProblem = `This link could not be read (${err.message}); showing the first preset.`;
    setError(app.linkProblem);
  }
  if (!link?.toy && !app.presets.length) {
    setError("The server has no presets.");
    return;
  }
  if (!link?.toy) app.state = normalize(fromPreset(app.presets[0]), app.limits);
  follow(link || { mode: "toy", toy: app.state });
}

/** Open a link's state: the toy table, or a sentence (the toy lab keeps what it has). */
function follow(link) {
  if (link.mode === "sentence") return setMode("sentence", link.sentence);
  if (app.mode !== "toy") setMode("toy");
  load(link.toy);
}

init();
