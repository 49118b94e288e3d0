// The "Many texts" card of sentence mode: one head's queries and keys of every token of a set of
// texts (the model's examples, Python's documentation, or a file the reader picks), projected
// together into 2-D with the reader's sentence among them (views/corpus.js), and every head
// clustered by the similarity of its patterns on the set (views/headclusters.js). Nothing is
// asked of the server until "Place this sentence among many texts" (it takes seconds); after
// the first answer a change of head, layer, projection or clusters asks again at once (the
// server keeps the set's run), and the views that change (core/feeds.js CORPUS_FEEDS) are
// redrawn. A new model, or a new set (its source, file, budget or seed), puts the button back.
// The sentence is whatever the input card holds when the request goes.

import { fetchCorpus } from "../../../core/api.js";
import { byId, fillIndexSelect, fillOptions } from "../../../core/dom.js";
import { CORPUS_FEEDS, CORPUS_SET, viewsFed } from "../../../core/feeds.js";
import { readable, readableCount, readableProse } from "../../../core/numbers.js";
import * as corpusview from "../../../views/corpus.js";
import * as clusterview from "../../../views/headclusters.js";

/** @typedef {import("../../../core/types.js").Corpus} Corpus */
/** @typedef {import("../../../core/types.js").CorpusLimits} CorpusLimits */
/** @typedef {import("../../../core/types.js").CorpusRequest} CorpusRequest */
/** @typedef {import("../../../core/types.js").CorpusSource} CorpusSource */

/** The sets, as the source select names them. */
export const SOURCES = /** @type {const} */ ({
  examples: "the model's examples",
  docs: "Python's documentation",
  upload: "a file",
});

/** The card's state: the keys of CORPUS_FEEDS. */
export function defaultCorpusState() {
  return {
    source: /** @type {CorpusSource} */ ("docs"),
    upload: /** @type {string | null} */ (null),
    max_tokens: 0,
    seed: 0,
    projection: "pca",
    clusters: 6,
    layer: 0,
    head: 0,
  };
}

/**
 * Code points in a text (as the server counts characters).
 * @param {string} text
 */
export function charCount(text) {
  return [...text].length;
}

/**
 * The request's body for the card's state and the sentence.
 * @param {ReturnType<typeof defaultCorpusState>} s @param {string} text
 * @returns {CorpusRequest}
 */
export function corpusBody(s, text) {
  return {
    source: s.source,
    ...(s.source === "upload" ? { upload: s.upload } : {}),
    ...(text.trim() ? { text } : {}),
    layer: s.layer,
    head: s.head,
    projection: s.projection,
    seed: s.seed,
    max_tokens: s.max_tokens,
    clusters: s.clusters,
  };
}

/**
 * Wire the card (once).
 * @param {{model: () => string | null, info: () => any, models: () => any, text: () => string,
 *   selection: () => {layer: number, head: number}, openHead: (text: string, layer: number, head: number) => void,
 *   setError: (message: string | null) => void}} ctx model: the model chosen now; info: its
 *   ModelInfo (layers, heads); models: the ModelList (its `corpus` limits); text: the sentence in
 *   the input card; selection: the head the sentence views show; openHead: put a text into the
 *   input card and open that head in the views
 * @returns {{sync: () => void}} sync: after the model or the inputs may have changed
 */
export function createCorpusCard(ctx) {
  const card = byId("corpus-card");
  const go = /** @type {HTMLButtonElement} */ (byId("corpus-go"));
  const source = /** @type {HTMLSelectElement} */ (byId("corpus-source"));
  const fileBox = byId("corpus-file-box");
  const file = /** @type {HTMLInputElement} */ (byId("corpus-file"));
  const budget = /** @type {HTMLInputElement} */ (byId("corpus-budget"));
  const projection = /** @type {HTMLSelectElement} */ (byId("corpus-projection"));
  const clusters = /** @type {HTMLInputElement} */ (byId("corpus-clusters"));
  const seed = /** @type {HTMLInputElement} */ (byId("corpus-seed"));
  const layer = /** @type {HTMLSelectElement} */ (byId("corpus-layer"));
  const head = /** @type {HTMLSelectElement} */ (byId("corpus-head"));
  const status = byId("corpus-status");
  const note = byId("corpus-note");
  const view = byId("corpus-view");
  const heads = byId("corpus-heads");
  const headsBox = byId("corpus-heads-box");
  const s = defaultCorpusState();
  /** @type {{model: string, answer: Corpus} | null} */
  let shown = null;
  /** @type {string | null} */
  let model = null; // the model the card is set up for
  let touched = false; // the reader chose the card's head: it no longer follows the views'
  let asked = 0; // the newest request: an older answer is dropped
  let answers = 0;
  /** @type {AbortController | null} */
  let running = null;

  /**
   * The card's state changes here alone: `patch` merged in, then what its keys feed: a key of
   * the set (CORPUS_SET) puts the button back (a new set is asked for when it is pressed), a
   * view's key asks the server again while a map is shown (CORPUS_FEEDS). `quiet`: the state
   * alone (the controls fitted to a model, the views' head followed).
   * @param {Partial<ReturnType<typeof defaultCorpusState>>} patch @param {{quiet?: boolean}} [how]
   */
  function change(patch, { quiet = false } = {}) {
    Object.assign(s, patch);
    const keys = Object.keys(patch);
    if (quiet) return;
    if (keys.some((k) => CORPUS_SET.includes(k))) newSet();
    else if (shown) ask(keys);
  }

  /** The server's limits for the set, or null when it places no texts. @returns {CorpusLimits | null} */
  const limits = () => ctx.models()?.corpus ?? null;

  /** The views fed by `keys` drawn from the answer shown. @param {string[]} keys */
  function draw(keys = Object.values(CORPUS_FEEDS).flat()) {
    if (!shown) return;
    const a = shown.answer;
    const which = viewsFed(CORPUS_FEEDS, keys);
    if (which.includes("corpus")) {
      corpusview.render(
        view,
        a,
        { layer: a.layer, head: a.head },
        {
          onPick: (t) => ctx.openHead(a.texts[t].text, a.layer, a.head),
        },
      );
    }
    if (which.includes("headclusters")) {
      headsBox.hidden = false;
      clusterview.render(
        heads,
        a.clusters,
        { layer: a.layer, head: a.head },
        {
          onPick(l, h) {
            touched = true;
            layer.value = String(l);
            head.value = String(h);
            change({ layer: l, head: h });
          },
        },
      );
    }
  }

  /** Back to the button: no answer shown (a new model, or a new set). */
  function reset() {
    shown = null;
    asked++;
    running?.abort();
    running = null;
    card.removeAttribute("aria-busy");
    go.hidden = false;
    status.textContent = "";
    note.textContent = "";
    view.replaceChildren();
    delete view.dataset.points;
    heads.replaceChildren();
    headsBox.hidden = true;
    ready();
  }

  /** Whether the button can ask now, and why not (nothing said before the server's limits are
   * in: every server places texts, within them). */
  function ready() {
    const lim = limits();
    const why = lim && s.source === "upload" && s.upload === null ? "Pick a file first: one text per line." : "";
    go.disabled = Boolean(why) || !lim || !ctx.model();
    if (!shown) status.textContent = why;
  }

  /** What the status line says of an answer. @param {Corpus} a */
  function said(a) {
    const t = a.seconds;
    return (
      `${readableCount(a.tokens)} tokens from ${readableCount(a.texts.length)} texts` +
      `${a.cut ? " (cut at the budget)" : ""}: run in ${readableProse(t.run)} s${a.cached ? " (the set's run was kept)" : ""}, ` +
      `projected in ${readableProse(t.project)} s, heads clustered in ${readableProse(t.cluster)} s. ` +
      "Hover or focus a point; click one (or press Enter) to open its text above."
    );
  }

  /**
   * Ask for the map of the card's state; `keys`: what changed (the views they feed are redrawn).
   * @param {string[]} keys
   */
  async function ask(keys) {
    const name = ctx.model();
    if (!name) return;
    const mine = ++asked;
    running?.abort();
    const controller = new AbortController();
    running = controller;
    go.disabled = true;
    card.setAttribute("aria-busy", "true");
    status.textContent =
      `Placing your sentence among up to ${s.max_tokens.toLocaleString("en-US")} tokens of ` +
      `${SOURCES[s.source]} at layer ${s.layer + 1} head ${s.head + 1}…`;
    try {
      const answer = await fetchCorpus(name, corpusBody(s, ctx.text()), controller.signal);
      if (mine !== asked) return;
      shown = { model: name, answer };
      go.hidden = true;
      status.textContent = said(answer);
      const tr = answer.transform;
      note.textContent = tr
        ? `How the keys were moved before projecting: ${tr.note} Here the shift's norm is ${readable(tr.key_shift)}, s = ${readable(tr.scale)}.`
        : "";
      draw(keys);
      card.dataset.answers = String(++answers);
    } catch (err) {
      if (mine !== asked || /** @type {Error} */ (err).name === "AbortError") return;
      status.textContent = "";
      ctx.setError(`corpus: ${/** @type {Error} */ (err).message}`);
    } finally {
      if (mine === asked) {
        running = null;
        card.removeAttribute("aria-busy");
        ready();
      }
    }
  }

  /** The controls for the model and the server's limits (a new model puts the button back). */
  function sync() {
    const name = ctx.model();
    const info = ctx.info();
    const lim = limits();
    if (name !== model) {
      model = name;
      touched = false;
      reset();
    }
    if (lim) {
      budget.min = "16";
      budget.max = String(lim.max_tokens);
      if (!s.max_tokens) change({ max_tokens: lim.default_tokens }, { quiet: true });
      budget.value = String(s.max_tokens);
      if (lim.max_clusters) clusters.max = String(lim.max_clusters);
      fillOptions(
        projection,
        lim.projections.map((p) => [p, p.toUpperCase()]),
        s.projection,
      );
      change({ projection: projection.value }, { quiet: true });
      file.title = `At most ${lim.max_chars.toLocaleString("en-US")} characters, one text per line`;
    }
    if (info) {
      if (!touched && !shown) change(ctx.selection(), { quiet: true }); // a map shown keeps its head
      change({ layer: Math.min(s.layer, info.layers - 1), head: Math.min(s.head, info.heads - 1) }, { quiet: true });
      fillIndexSelect(layer, info.layers, "layer", s.layer);
      fillIndexSelect(head, info.heads, "head", s.head);
    }
    ready();
  }

  /** A control of the set changed: the button comes back. */
  function newSet() {
    reset();
  }

  source.addEventListener("change", () => {
    change({ source: /** @type {CorpusSource} */ (source.value) });
    fileBox.hidden = s.source !== "upload";
  });
  file.addEventListener("change", () => {
    const picked = file.files?.[0];
    const lim = limits();
    change({ upload: null });
    if (!picked || !lim) return;
    if (picked.size > 4 * lim.max_chars) {
      // more bytes than any text of max_chars characters
      ctx.setError(
        `upload: the file has ${picked.size.toLocaleString("en-US")} bytes; at most ${lim.max_chars.toLocaleString("en-US")} characters`,
      );
      return;
    }
    const reader = new FileReader();
    reader.onload = () => {
      const text = String(reader.result ?? "");
      const n = charCount(text);
      if (n > lim.max_chars) {
        ctx.setError(
          `upload: the file has ${n.toLocaleString("en-US")} characters; at most ${lim.max_chars.toLocaleString("en-US")}`,
        );
        return;
      }
      change({ upload: text });
      const lines = text.split(/\r?\n/).filter((l) => l.trim()).length;
      ready();
      status.textContent = `${picked.name}: ${readableCount(lines)} text${lines === 1 ? "" : "s"} (one per non-empty line), ${readableCount(n)} characters.`;
    };
    reader.onerror = () => ctx.setError(`upload: could not read ${picked.name}`);
    reader.readAsText(picked);
  });
  budget.addEventListener("change", () => {
    change({ max_tokens: Math.round(Number(budget.value)) });
  });
  seed.addEventListener("change", () => {
    change({ seed: Math.round(Number(seed.value)) });
  });
  projection.addEventListener("change", () => {
    change({ projection: projection.value });
  });
  clusters.addEventListener("change", () => {
    change({ clusters: Math.round(Number(clusters.value)) });
  });
  for (const [select, key] of /** @type {[HTMLSelectElement, "layer" | "head"][]} */ ([
    [layer, "layer"],
    [head, "head"],
  ])) {
    select.addEventListener("change", () => {
      touched = true;
      change({ [key]: Number(select.value) });
    });
  }
  go.addEventListener("click", () => {
    if (!touched) {
      change(ctx.selection(), { quiet: true });
      layer.value = String(s.layer);
      head.value = String(s.head);
    }
    ask(Object.values(CORPUS_FEEDS).flat());
  });
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let resizeTimer;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => draw(), 200);
  });
  fileBox.hidden = true;
  source.value = s.source;
  seed.value = String(s.seed);
  clusters.value = String(s.clusters);
  reset();

  return { sync };
}
