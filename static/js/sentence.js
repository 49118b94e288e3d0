// Sentence mode: a real pretrained model on a sentence the reader types. Owns the inputs (model,
// text, examples, token options), asks for traces, and draws the model, head, query-key and
// trajectory views from the state in state.js (`sentence`).

import { TraceClient, fetchModels } from "./api.js";
import { downloadText } from "./export.js";
import { headViewSvg, renderHeadChips, renderHeadView } from "./headview.js";
import { WEIGHT_GRADIENT, gridPng, renderGrid, renderLarge } from "./modelview.js";
import { clampSentence, defaultSentence } from "./state.js";
import { tokenView } from "./tokenview.js";
import {
  fillSelect, fillTokenChips, loadView, renderSentenceInputs, showUnavailable,
} from "./sentenceui.js";

const $ = (id) => document.getElementById(id);

/**
 * createSentence({setError, setStatus, setPending, traceDrawn, viewsDrawn, changed}).
 * traceDrawn(): a new trace has been drawn in every view; viewsDrawn(): a redraw after a view
 * choice is done; changed(): the state changed (write the URL).
 */
export function createSentence(hooks) {
  const app = {
    s: defaultSentence(), models: null, trace: null, text: null, tv: null, active: false,
    problem: null, // why a link could not be followed exactly; shown until the next edit
  };
  const busy = { request: false, drawing: 0, models: false };
  let status = ""; // the status line once nothing is pending
  const syncPending = () => {
    const pending = busy.request || busy.drawing > 0 || busy.models;
    hooks.setPending(pending);
    hooks.setStatus(pending ? "computing…" : status);
  };
  const setStatus = (text) => {
    status = text;
    syncPending();
  };

  const client = new TraceClient({
    delay: 250,
    onPending(p) {
      busy.request = p;
      syncPending();
    },
    onResult(trace, text) {
      app.trace = trace;
      app.text = text;
      hooks.setError(app.problem);
      clampSentence(app.s, trace.layers, trace.heads, trace.n);
      $("s-count").textContent = `${trace.n} / ${modelInfo()?.max_tokens ?? "?"} tokens`;
      const specials = [...new Set(trace.tokens.filter((_, i) => trace.special[i]))];
      $("s-special-names").textContent = specials.length ? `(${specials.join(", ")})` : "(none in this text)";
      status = `${trace.n} tokens · ${trace.layers} layers × ${trace.heads} heads`;
      hooks.changed();
      busy.drawing++;
      drawAll().finally(() => {
        busy.drawing--;
        hooks.traceDrawn();
        syncPending();
      });
    },
    onError(message) {
      hooks.setError(message);
      setStatus("not updated");
      $("s-count").textContent = "";
    },
  });

  const modelInfo = () => app.models?.models.find((m) => m.name === app.s.model) || null;

  // ---- Views ------------------------------------------------------------------------------

  /** The query as an original token index: the chosen one, else the first ordinary token. */
  function queryIndex() {
    const t = app.trace;
    if (app.s.query !== null && app.s.query < t.n) return app.s.query;
    const first = (t.special || []).findIndex((x) => !x);
    return first >= 0 ? first : 0;
  }

  function chooseHead(layer, head) {
    Object.assign(app.s, { layer, head, heads: [head] });
    viewChanged(["model", "head", "qk"]);
    $("mv-grid").querySelector(`button.mv-cell[data-layer="${layer}"][data-head="${head}"]`)?.focus();
  }

  function pickQuery(index) {
    app.s.query = index;
    viewChanged(["head", "qk"]);
  }

  const VIEWS = {
    model() {
      const { s, trace: t, tv } = app;
      $("mv-shape").textContent = `${t.layers} layers × ${t.heads} heads`;
      renderGrid($("mv-grid"), t, tv, s, chooseHead);
      return renderLarge($("mv-large"), t, tv, s);
    },
    head() {
      const { s, trace: t, tv } = app;
      fillSelect($("hv-layer"), t.layers, "layer", s.layer);
      renderHeadChips($("hv-heads"), t.heads, s.heads, (heads) => {
        app.s.heads = heads;
        viewChanged(["head"]);
      });
      const row = tv.indexOf(queryIndex());
      renderHeadView($("head-view"), t, tv, { layer: s.layer, heads: s.heads, query: row },
        (r) => pickQuery(tv.groups[r][0]));
    },
    async qk() {
      const { s, trace: t } = app;
      fillSelect($("qk-layer"), t.layers, "layer", s.layer);
      fillSelect($("qk-head"), t.heads, "head", s.head);
      fillSelect($("qk-query"), t.n, null, queryIndex(), t.tokens);
      const box = $("qk-view");
      const render = await loadView("qkview", "renderQueryKey");
      if (!render) return showUnavailable(box, "query-key view");
      return render(box, t, { layer: s.layer, head: s.head, query: queryIndex(), onPick: pickQuery });
    },
    async traj() {
      const { s, trace: t } = app;
      const shown = t.tokens.map((_, i) => i).filter((i) => !(s.hideSpecial && t.special[i]));
      fillTokenChips($("traj-tokens"), t.tokens, shown, s.picked, (picked) => {
        app.s.picked = picked;
        viewChanged(["traj"]);
      });
      $(s.dims === 2 ? "traj-2d" : "traj-3d").checked = true;
      const tokens = s.picked ? s.picked.filter((i) => shown.includes(i)) : s.hideSpecial ? shown : null;
      const box = $("traj-view");
      const render = await loadView("trajectories", "renderTrajectories");
      if (!render) return showUnavailable(box, "trajectories view");
      return render(box, t, { tokens, dims: s.dims, onPick: pickQuery });
    },
  };

  function showNote() {
    const note = app.tv?.note || "";
    $("s-note").textContent = note;
    $("s-note").hidden = !note;
  }

  /** Draw the named views (all by default); settles when all are drawn. */
  function drawAll(which = Object.keys(VIEWS)) {
    if (!app.trace || !app.active) return Promise.resolve();
    app.tv = tokenView(app.trace, { hideSpecial: app.s.hideSpecial, mergeWords: app.s.mergeWords });
    showNote();
    return Promise.all(which.map((name) => Promise.resolve().then(() => VIEWS[name]()).catch((err) => {
      console.error(`attnviz: the ${name} view failed`, err);
    })));
  }

  /** After a view choice: redraw what shows it, write the URL, no request. */
  function viewChanged(which) {
    hooks.changed();
    drawAll(which).then(() => hooks.viewsDrawn());
  }

  // ---- Inputs -----------------------------------------------------------------------------

  function renderInputs() {
    renderSentenceInputs(app.models, app.s, modelInfo(), (text) => {
      app.s.text = text;
      $("s-text").value = text;
      edited(0);
    });
  }

  /** After an input changed: sync, write the URL, ask for a trace. */
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
    client.request({ model: app.s.model, text: app.s.text }, delay);
  }

  $("s-text").addEventListener("input", (e) => {
    app.s.text = e.target.value;
    edited();
  });
  $("s-model").addEventListener("change", (e) => {
    app.s.model = e.target.value;
    const info = modelInfo();
    if (info) clampSentence(app.s, info.layers, info.heads);
    renderInputs();
    edited(0);
  });
  const option = (id, key) => $(id).addEventListener("change", (e) => {
    app.s[key] = e.target.checked;
    viewChanged(["model", "head", "traj"]);
  });
  option("s-hide-special", "hideSpecial");
  option("s-merge-words", "mergeWords");
  $("hv-layer").addEventListener("change", (e) => {
    app.s.layer = Number(e.target.value);
    viewChanged(["model", "head", "qk"]);
  });
  $("qk-layer").addEventListener("change", (e) => chooseHead(Number(e.target.value), app.s.head));
  $("qk-head").addEventListener("change", (e) => chooseHead(app.s.layer, Number(e.target.value)));
  $("qk-query").addEventListener("change", (e) => pickQuery(Number(e.target.value)));
  $("hv-all").addEventListener("click", () => {
    app.s.heads = Array.from({ length: app.trace?.heads ?? 0 }, (_, h) => h);
    viewChanged(["head"]);
  });
  $("hv-none").addEventListener("click", () => {
    app.s.heads = [];
    viewChanged(["head"]);
  });
  for (const input of document.querySelectorAll('input[name="traj-dims"]')) {
    input.addEventListener("change", (e) => {
      app.s.dims = Number(e.target.value);
      viewChanged(["traj"]);
    });
  }
  $("traj-all").addEventListener("click", () => {
    app.s.picked = null;
    viewChanged(["traj"]);
  });
  $("mv-legend").style.background = WEIGHT_GRADIENT;
  $("mv-png").addEventListener("click", () => {
    if (!app.trace) return;
    const a = document.createElement("a");
    a.href = gridPng($("mv-grid"), app.trace, app.tv);
    a.download = "attnviz-model-view.png";
    document.body.append(a);
    a.click();
    a.remove();
  });
  $("hv-svg").addEventListener("click", () => {
    const text = headViewSvg($("head-view"));
    if (text) downloadText(text, "attnviz-head-view.svg", "image/svg+xml");
  });
  let resizeTimer = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => drawAll(["model", "head"]), 200);
  });

  // ---- Mode -------------------------------------------------------------------------------

  /** Show sentence mode (loading the models the first time); `state` replaces the current one. */
  async function activate(state = null) {
    app.active = true;
    if (!app.models) {
      busy.models = true;
      syncPending();
      try {
        app.models = await fetchModels();
      } catch (err) {
        hooks.setError(`Could not load the models: ${err.message}`);
        return;
      } finally {
        busy.models = false;
        syncPending();
      }
      if (!state) state = defaultSentence(app.models.default, app.models.examples[0] || "");
    }
    if (state) return load(state);
    renderInputs();
    hooks.changed();
    if (app.trace) await drawAll(); // drawn while hidden: sizes were wrong
    else edited(0);
  }

  function load(state) {
    const names = app.models.models.map((m) => m.name);
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

  return {
    activate,
    deactivate() {
      app.active = false;
    },
    getState: () => app.s,
    traceText: () => app.text,
  };
}
