// Wiring: state -> URL and API request; API response -> every view.

import { TraceClient, fetchPresets } from "./api.js";
import { renderBeforeAfter } from "./beforeafter.js";
import { createControls } from "./controls.js";
import { renderDistances } from "./distances.js";
import { copyText, downloadPng, downloadText } from "./export.js";
import { renderAttention } from "./heatmaps.js";
import {
  DEFAULT_LIMITS, decodeState, dims, encodeState, fromPreset, matchesPreset, normalize, problem,
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
};

function setError(message) {
  const line = $("error");
  line.textContent = message || "";
  line.hidden = !message;
}

const setStatus = (text) => { $("status").textContent = text; };

const client = new TraceClient({
  onPending(pending) {
    root.dataset.pending = pending ? "1" : "0";
    if (pending) setStatus("computing…");
  },
  onResult(trace, text) {
    app.trace = trace;
    app.text = text;
    setError(app.linkProblem);
    const drawn = drawAll();
    setStatus(`n = ${trace.n}, d = ${trace.d}, ${trace.layers} layer${trace.layers > 1 ? "s" : ""}, ` +
      `${trace.heads} head${trace.heads > 1 ? "s" : ""}`);
    $("export-json").disabled = false;
    // data-traces counts traces whose plots have finished drawing (the tests wait on it).
    drawn.then(() => { root.dataset.traces = String(++app.drawn); });
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
  history.replaceState(null, "", encodeState(app.state));
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
    if (app.text) downloadText(app.text, "attnviz-trace.json");
  });
  $("copy-link").addEventListener("click", async () => {
    writeUrl();
    setStatus((await copyText(location.href)) ? "link copied" : "copy the address bar to share");
  });
  for (const button of document.querySelectorAll("button.png")) {
    button.addEventListener("click", () => downloadPng($(button.dataset.plot), `attnviz-${button.dataset.plot}`));
  }
  window.addEventListener("hashchange", () => {
    try {
      const state = decodeState(location.hash, app.limits);
      if (state) load(state);
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
  let state = null;
  try {
    state = decodeState(location.hash, app.limits);
  } catch (err) {
    app.linkProblem = `This link could not be read (${err.message}); showing the first preset.`;
    setError(app.linkProblem);
  }
  if (!state && !app.presets.length) {
    setError("The server has no presets.");
    return;
  }
  load(state || fromPreset(app.presets[0]));
}

init();
