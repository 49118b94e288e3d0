// The page: four modes (modes/learn, the guided path over a lab; modes/toy, the toy lab;
// modes/sentence; modes/train), each keeping its own state, one status line and error line for
// the mode in view, the share link in the URL, and the header's actions (copy link, export
// JSON). Learn shows its guide above the toy lab or the Train tab (the step's lab): leaving it
// keeps the lab as it is. The layout: core/ holds what every mode shares (the API client, the
// compact form, state, theme, numbers, the DOM helpers); views/ every render(container, data,
// selection, callbacks) module; modes/ the controllers.

import { busy, exportHtml, fetchPresets } from "./core/api.js";
import { byId, download } from "./core/dom.js";
import { installGlossary } from "./core/glossary.js";
import { copyText, downloadPng } from "./core/export.js";
import { load2d } from "./core/plotly.js";
import { CLASS_HASH } from "./modes/learn/classroom.js";
import { createLearn } from "./modes/learn/index.js";
import { decodeLearnHash, encodeLearnHash, LEARN_HASH } from "./modes/learn/progress.js";
import { createSentence } from "./modes/sentence/index.js";
import { decodeShare, defaultSentence, encodeShare } from "./core/state.js";
import { createToy } from "./modes/toy/index.js";
import { createTrain } from "./modes/train/index.js";
import { decodeTrainLink } from "./modes/train/link.js";

/** @typedef {"learn" | "toy" | "sentence" | "train"} Mode */
/** @typedef {"toy" | "train"} Lab a lab a Learn step shows beneath its guide */

const root = document.documentElement;
const MODES = /** @type {Mode[]} */ (["learn", "toy", "sentence", "train"]);
const TRAIN_HASH = "#train";
/** A Train tab link (modes/train/link.js) as follow() takes it, or null. @param {string} hash */
const trainLink = (hash) => {
  const train = decodeTrainLink(hash);
  return train && { mode: "train", train };
};
/** A mode's plain address (`#toy`, `#sentence`): the mode as it opens. @param {string} hash */
const modeLink = (hash) =>
  hash === "#sentence" || hash === "#toy" ? { mode: hash.slice(1), toy: null, sentence: null } : null;
/** A Learn link (`#learn`, `#learn/4`) as follow() takes it, or null. @param {string} hash */
const learnLink = (hash) => {
  const learn = decodeLearnHash(hash);
  return learn && { mode: "learn", learn };
};

const app = {
  /** @type {Mode} */ mode: "toy",
  drawn: 0,
  /** @type {Record<Mode, string | null>} */ errors: { learn: null, toy: null, sentence: null, train: null },
  /** @type {Record<Mode, string>} */ status: { learn: "", toy: "", sentence: "", train: "" },
  /** @type {Record<Mode, boolean>} */ pending: { learn: false, toy: false, sentence: false, train: false },
  /** @type {ReturnType<typeof createLearn> | null} */ learn: null,
  /** @type {ReturnType<typeof createToy> | null} */ toy: null,
  /** @type {ReturnType<typeof createSentence> | null} */ sentence: null,
  /** @type {ReturnType<typeof createTrain> | null} */ train: null,
};

let exporting = false; // an HTML export in flight (the button waits for it)

/** The mode whose views are in view: Learn's lab beneath its guide (null before the path is in). */
const inView = () => (app.mode === "learn" ? (app.learn?.lab() ?? null) : app.mode);

function showMessages() {
  const lab = inView();
  const line = byId("error");
  // In Learn: the guide's own error first, else its lab's.
  const error = app.errors[app.mode] || (lab && lab !== app.mode ? app.errors[lab] : null);
  line.textContent = error || "";
  line.hidden = !error;
  const wait = busy.retryAt ? Math.max(1, Math.ceil((busy.retryAt - Date.now()) / 1000)) : 0;
  const said = wait ? `busy, retrying in ${wait} s` : lab ? app.status[lab] : app.status[app.mode];
  byId("status").textContent = said;
  byId("status").title = said ?? ""; // the whole line, where its box cuts it
  root.dataset.busy = wait ? "1" : "0";
  root.dataset.pending = Object.values(app.pending).some(Boolean) ? "1" : "0";
  const ready =
    lab && { toy: app.toy?.hasTrace(), sentence: app.sentence?.hasTrace(), train: app.train?.hasRun() }[lab];
  /** @type {HTMLButtonElement} */ (byId("export-json")).disabled = !ready;
  // One HTML file of what is in view, in every mode: the toy lab's and sentence mode's views,
  // the Train tab's run once it has ended.
  const html = /** @type {HTMLButtonElement} */ (byId("export-html"));
  html.disabled = !(lab === "train" ? app.train?.hasEnded() : ready) || exporting;
  // The skip links: the table's only where the toy lab is in view, the views' where a lab is.
  for (const a of /** @type {NodeListOf<HTMLAnchorElement>} */ (document.querySelectorAll(".skip-links a"))) {
    a.hidden = a.dataset.skip === "table" ? lab !== "toy" : a.dataset.skip === "views" ? !lab : false;
  }
  html.title =
    lab === "train"
      ? "The run as one HTML file, its views with the checkpoints to scrub, to open offline (once it has ended)"
      : "One HTML file of the views in view, to open anywhere, offline";
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
 * data-views counts redraws after a view choice (layer, head, token...). The first is marked on
 * the page's timeline (`attnviz bench --browser` reads the mark, as Lighthouse's user timings). */
const traceDrawn = () => {
  root.dataset.traces = String(++app.drawn);
  if (app.drawn === 1) performance.mark("attnviz:first-trace", { detail: inView() });
  showMessages();
};
const viewsDrawn = () => {
  root.dataset.views = String(+(root.dataset.views || 0) + 1);
};
/** data-checks counts the Learn step's answers shown (the tests wait on it). */
const checked = () => {
  root.dataset.checks = String(+(root.dataset.checks || 0) + 1);
};
/** A lab's drawing: while Learn shows it, the step is checked again. @param {() => void} hook @param {Lab} lab */
const andCheck = (hook, lab) => () => {
  hook();
  if (app.mode === "learn" && app.learn?.lab() === lab) app.learn.labChanged();
};

/** A link's state of a mode not opened yet (it opens with it), and what a link's toy part is
 * read against. */
const share = {
  /** @type {{toy: import("./core/types.js").ToyState | null, sentence: import("./core/types.js").SentenceState | null}} */
  pending: { toy: null, sentence: null },
  /** @type {import("./core/state.js").ShareContext | null} */ context: null,
};

function writeUrl() {
  // Learn's link is the step open, while the learner works in its lab.
  if (app.mode === "learn") {
    const n = app.learn?.current();
    if (app.learn?.classOpen())
      history.replaceState(null, "", CLASS_HASH); // the operator's class view
    else if (n) {
      const lab = learnLab();
      history.replaceState(null, "", encodeLearnHash(n, lab, lab ? app.learn?.found() : []));
    } else if (!decodeLearnHash(location.hash)) history.replaceState(null, "", LEARN_HASH); // a link's step, still loading
    return;
  }
  // The Train tab's link: the run open (while its server keeps it) and the form's settings.
  if (app.mode === "train") return history.replaceState(null, "", app.train?.link() ?? TRAIN_HASH);
  // Both modes' states travel (each as the reader left it, or as a link gave it).
  const toy = share.pending.toy ?? app.toy?.getState() ?? null;
  const sentence = share.pending.sentence ?? app.sentence?.getState() ?? null;
  if (toy || sentence) history.replaceState(null, "", encodeShare(app.mode, toy, sentence, share.context ?? undefined));
}

/**
 * The lab's state a Learn link carries once the learner has changed it, or once it holds their
 * work of the step (a step's start needs none): the toy table as the toy lab's own link holds
 * it, or the Train link (run, settings, the head and cell chosen, the comparison shown).
 * @returns {import("./modes/learn/progress.js").LearnLab | null}
 */
function learnLab() {
  if (!app.learn?.carries()) return null;
  const lab = app.learn.lab();
  const toy = lab === "toy" ? toyLink() : null;
  if (toy) return { toy };
  if (lab === "train" && app.train) return { train: app.train.link() };
  return null;
}

/** The toy lab's state as a Learn link's `toy=` part carries it (the toy lab's own link's), or null. */
function toyLink() {
  const toy = app.toy?.getState();
  return toy ? encodeShare("toy", toy, null, share.context ?? undefined).slice("#s=".length) : null;
}

/**
 * Show one mode (the other keeps its state); a link's state replaces that mode's.
 * @param {Mode} mode @param {any} [state]
 */
function setMode(mode, state = null) {
  app.mode = mode;
  if (!state && (mode === "toy" || mode === "sentence") && share.pending[mode]) state = share.pending[mode]; // a link's, kept until now
  for (const m of MODES) {
    byId(`mode-${m}`).setAttribute("aria-selected", String(m === mode));
    byId(`${m}-mode`).hidden = m !== mode;
  }
  // One error line, in the active mode's inputs (Learn's: over its guide).
  if (mode === "sentence" || mode === "learn") byId(`${mode}-mode`).prepend(byId("error"));
  else /** @type {HTMLElement} */ (byId(`${mode}-mode`).querySelector(".panel")).prepend(byId("error"));
  root.dataset.mode = mode;
  showMessages();
  const toy = /** @type {ReturnType<typeof createToy>} */ (app.toy);
  const sentence = /** @type {ReturnType<typeof createSentence>} */ (app.sentence);
  const train = /** @type {ReturnType<typeof createTrain>} */ (app.train);
  const learn = /** @type {ReturnType<typeof createLearn>} */ (app.learn);
  if (mode !== "learn") learn.deactivate();
  if (mode !== "toy") toy.deactivate();
  if (mode !== "sentence") sentence.deactivate();
  if (mode !== "train") train.deactivate();
  if (mode === "learn") {
    writeUrl();
    return learn.activate(state); // it shows the step's lab (openLab)
  }
  if (mode === "sentence") {
    if (!state) writeUrl();
    return sentence.activate(state);
  }
  if (mode === "train") {
    if (!state) writeUrl();
    return train.activate(state);
  }
  plotsAhead();
  toy.activate(state);
  writeUrl();
}

/**
 * Show a Learn step's lab beneath the guide, with the step's state (null: as the lab is).
 * @param {Lab} lab @param {any} state a toy state, or a Train link (its form's settings)
 * @returns {Promise<void> | void} the Train tab's: settled once its link's run is open
 */
function openLab(lab, state) {
  if (app.mode !== "learn") return;
  for (const m of /** @type {Mode[]} */ (["toy", "sentence", "train"])) byId(`${m}-mode`).hidden = m !== lab;
  const toy = /** @type {ReturnType<typeof createToy>} */ (app.toy);
  const train = /** @type {ReturnType<typeof createTrain>} */ (app.train);
  if (lab === "toy") {
    train.deactivate();
    if (state) share.pending.toy = null; // the step's state replaces what a link held
    plotsAhead();
    toy.activate(state ?? share.pending.toy);
  } else {
    toy.deactivate();
    const opened = train.activate(state);
    showMessages();
    return opened;
  }
  showMessages();
}

/** The toy lab draws its plots as soon as its trace comes: Plotly's cartesian bundle is asked
 * for now, beside the trace (other modes load it when they first draw a plot). */
function plotsAhead() {
  load2d().catch(() => messages("toy").setError("Plotly.js did not load; the plots cannot be drawn."));
}

/** Open a link's state (or the first preset when there is none). @param {any} link */
function follow(link) {
  if (link?.mode === "learn") return setMode("learn", link.learn);
  if (link?.mode === "train") return setMode("train", link.train);
  // The other mode's state opens when that mode is first shown.
  share.pending = {
    toy: link?.mode === "sentence" ? link.toy : null,
    sentence: link && link.mode !== "sentence" ? link.sentence : null,
  };
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

/**
 * Where a skip link goes: the lab (the mode's panel; in Learn its guide), the views of the lab
 * in view (sentence mode's: its first card after the text), or the toy lab's table (its cell
 * that is the grid's Tab stop). null where there is none.
 * @param {string | undefined} which
 * @returns {HTMLElement | null}
 */
function skipTarget(which) {
  const lab = inView();
  if (which === "lab") return byId(`${app.mode}-mode`);
  if (!lab) return null;
  const panel = byId(`${lab}-mode`);
  if (which === "table") return lab === "toy" ? byId("embeddings").querySelector('[tabindex="0"]') : null;
  if (lab === "sentence") {
    return (
      [
        .../** @type {NodeListOf<HTMLElement>} */ (
          panel.querySelectorAll(":scope > section.card:not(.sentence-input)")
        ),
      ].find((c) => !c.hidden) ?? null
    );
  }
  return panel.querySelector("main.plots");
}

function wire() {
  // Skip links move the focus (and the next Tab) past the header and the inputs; the address
  // bar keeps the page's own link.
  for (const a of /** @type {NodeListOf<HTMLAnchorElement>} */ (document.querySelectorAll(".skip-links a"))) {
    a.addEventListener("click", (event) => {
      event.preventDefault();
      const target = skipTarget(a.dataset.skip);
      if (!target) return;
      if (target.tabIndex < 0 && !target.hasAttribute("tabindex")) target.tabIndex = -1;
      target.focus();
    });
  }
  byId("export-json").addEventListener("click", async () => {
    const mode = inView(); // in Learn: its lab's
    if (!mode) return;
    const say = messages(mode);
    try {
      const out = await { toy: app.toy, sentence: app.sentence, train: app.train }[mode]?.exportJson();
      if (!out) return;
      download(out.text, out.name);
      if (out.note) say.setStatus(out.note);
    } catch (err) {
      say.setError(`The export failed: ${/** @type {Error} */ (err).message}`);
    }
  });
  byId("export-html").addEventListener("click", async () => {
    const mode = inView();
    if (!mode) return;
    const say = messages(mode);
    const body = mode === "toy" ? app.toy?.htmlRequest() : mode === "sentence" ? app.sentence?.htmlRequest() : null;
    const made = mode === "train" ? app.train?.exportHtml() : body ? exportHtml(body) : null;
    if (!made) return;
    exporting = true;
    say.setStatus("making the HTML file…");
    try {
      const { blob, name } = await made;
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
    messages(inView() ?? app.mode).setStatus(copied ? "link copied" : "copy the address bar to share");
  });
  for (const m of MODES) {
    byId(`mode-${m}`).addEventListener("click", () => {
      if (app.mode !== m) setMode(m);
    });
  }
  for (const button of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll("button.png[data-plot]"))) {
    button.addEventListener("click", () =>
      downloadPng(byId(/** @type {string} */ (button.dataset.plot)), `attnviz-${button.dataset.plot}`),
    );
  }
}

async function init() {
  root.dataset.pending = "1";
  watchBusy();
  let presets;
  try {
    presets = await fetchPresets();
  } catch (err) {
    messages("toy").setError(`Could not load the presets: ${/** @type {Error} */ (err).message}`);
    root.dataset.pending = "0";
    return;
  }
  const { limits, config_defaults: defaults } = presets;
  installGlossary(presets.glossary); // every mode's terms, before any view writes one
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
  app.toy = createToy({
    ...messages("toy"),
    traceDrawn: andCheck(traceDrawn, "toy"),
    viewsDrawn: andCheck(viewsDrawn, "toy"),
    unchecked: andCheck(() => {}, "toy"), // a table that cannot be traced: Learn says so
    changed: changed("toy"),
    limits,
    defaults,
    presets: presets.presets,
  });
  app.sentence = createSentence({ ...messages("sentence"), traceDrawn, viewsDrawn, changed: changed("sentence") });
  app.train = createTrain({
    ...messages("train"),
    viewsDrawn: andCheck(viewsDrawn, "train"),
    changed: showMessages,
    linked() {
      if (app.mode === "train") writeUrl();
    },
    compared() {
      // The comparison in its card (started, opened, ended): the Train tab's link carries it,
      // and Learn's step 1 is checked on it at once.
      if (app.mode === "train") writeUrl();
      if (app.mode === "learn" && app.learn?.lab() === "train") app.learn.labChanged();
    },
    renamed() {
      // Its models' names changed: sentence mode's pickers read the list again when shown.
      /** @type {ReturnType<typeof createSentence>} */ (app.sentence).forgetModels();
    },
    openModel(name, text, query) {
      /** @type {ReturnType<typeof createSentence>} */ (app.sentence).forgetModels();
      // The query on the probe's token that shows something (the server's), not the first.
      setMode("sentence", { ...defaultSentence(name, text), query });
    },
  });
  const train = app.train;
  app.learn = createLearn({
    ...messages("learn"),
    checked() {
      // The address bar follows the step's lab as answered (its link carries the lab once tried).
      if (app.mode === "learn") writeUrl();
      checked();
    },
    limits,
    defaults,
    openLab,
    linked() {
      if (app.mode === "learn") writeUrl();
    },
    explore: (lab) => setMode(lab),
    toyState: () => app.toy?.getState() ?? null,
    toyLink, // the toy lab as the learner left it, kept for the step (progress.js labs)
    trainRun: () => train.currentRun(),
    trainView: () => train.view(),
    recurrentId: () => train.recurrentId(), // the comparison shown in its card (step 1)
    openComparison: (id) => train.openComparison(id), // the learner's last (step 1, opened anew)
    markCell: (cell) => train.target(cell), // a cell an answer points at (step 13's)
    narrowed: () => train.shown(), // a step set cards aside: the Train header names what is in view
    labOfLink(lab, link) {
      // A Learn link's lab state, read as the lab's own links are (and checked as they are).
      try {
        if (lab === "toy" && "toy" in link) {
          const read = decodeShare(`#s=${link.toy}`, limits, defaults, presets.presets);
          if (read?.toy) return { state: read.toy };
        }
        if (lab === "train" && "train" in link) {
          const read = decodeTrainLink(link.train);
          if (read) return { state: read };
        }
        return { problem: "This link's lab is not this step's: the step opens as it starts." };
      } catch (err) {
        return {
          problem: `This link's lab could not be read (${/** @type {Error} */ (err).message}); the step opens as it starts.`,
        };
      }
    },
  });
  wire();
  /** @type {any} */
  let link = null;
  try {
    link =
      learnLink(location.hash) ??
      trainLink(location.hash) ??
      modeLink(location.hash) ??
      decodeShare(location.hash, limits, defaults, presets.presets);
  } catch (err) {
    app.toy.setLinkProblem(
      `This link could not be read (${/** @type {Error} */ (err).message}); showing the first preset.`,
    );
  }
  window.addEventListener("hashchange", (event) => {
    // The address navigated to, not location.hash: work of the lab before it (a trace drawn, an
    // answer come) may have rewritten the address bar since, to the link of what was open.
    const hash = new URL(event.newURL).hash;
    try {
      const next =
        learnLink(hash) ?? trainLink(hash) ?? modeLink(hash) ?? decodeShare(hash, limits, defaults, presets.presets);
      if (next) follow(next);
    } catch (err) {
      messages(app.mode).setError(`This link could not be read (${/** @type {Error} */ (err).message}).`);
    }
  });
  follow(link);
}

init();
