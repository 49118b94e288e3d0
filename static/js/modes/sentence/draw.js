// Sentence mode's views drawn from the trace shown: a first response drawn into every view
// (show), a change of the state (change.js, which the cards are given) redrawing the views it
// feeds (viewChanged, SENTENCE_FEEDS), each view's
// draw current only while no newer one of it (or newer trace) has started, and the parts the
// views will ask for asked for first (prefetch). The cards are cards.js's and the Knock-out
// card's (cards/knockout.js).

import { drawViews, viewNotes } from "../../core/controller.js";
import { byId } from "../../core/dom.js";
import { SENTENCE_FEEDS, viewsFed } from "../../core/feeds.js";
import * as modelview from "../../views/modelview.js";
import { createCards } from "./cards.js";
import { createChange } from "./change.js";
import { createKnockCard } from "./cards/knockout.js";
import * as picture from "./cards/picture.js";

/** @typedef {import("../../core/types.js").Compact} Compact */
/** @typedef {import("../../core/api.js").Params} Params */
/** @typedef {import("./parts.js").Parts} Parts */
/** @typedef {import("./parts.js").SentenceApp} SentenceApp */

/** Each view's card, by the view's name. */
const CARDS = /** @type {Record<string, string>} */ ({
  model: "model-view-card",
  picture: "picture-card",
  why: "why-card",
  gen: "gen-card",
  head: "head-view-card",
  qk: "qk-card",
  traj: "traj-card",
  lens: "lens-card",
  knock: "knock-card",
});

/**
 * The views' draws, and what draws them.
 * @param {{app: SentenceApp, p: ReturnType<typeof import("./parts.js").createParts>,
 *   hooks: {setError: (m: string | null) => void, traceDrawn: () => void, viewsDrawn: () => void,
 *   changed: () => void}, status: ReturnType<typeof import("../../core/controller.js").createStatus>,
 *   shown: string[], fixed: boolean, openParts: (body: object) => Parts,
 *   modelInfo: () => import("../../core/types.js").ModelInfo | null,
 *   edited: (delay?: number | "link") => void, headChanged: () => void,
 *   atlas: () => import("../../core/types.js").Atlas | null, isOpen: (name: string) => boolean}} ctx
 *   shown: the views this page draws; isOpen: a view's card is open (More views); fixed: no
 *   server (no Knock-out card); edited: an input changed (a new trace);
 *   headChanged: the chosen head changed (the Many texts card follows it); atlas: the head
 *   atlas when scored (Why this score names the heads' roles)
 */
export function createDrawing(ctx) {
  const { app, p, hooks, status, shown, fixed, openParts, modelInfo, edited } = ctx;

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
    change({}, { fit: [meta.layers, meta.heads, meta.n], quiet: true }); // (drawn below)
    showCount(meta.n);
    const specials = [...new Set(meta.tokens.filter((_, i) => meta.special?.[i]))];
    byId("s-special-names").textContent = specials.length ? `(${specials.join(", ")})` : "(none in this text)";
    status.set(`${meta.n} tokens · ${meta.layers} layers × ${meta.heads} heads`);
    hooks.changed();
    prefetch(app, p, shown.filter(ctx.isOpen));
    status.drawing(drawAll(), () => {
      hooks.traceDrawn();
      entropyTitles(); // last: the grid's tooltips wait for every view
    });
  }

  /**
   * Open a head in every view, and focus its cell in the model view (unless `focus` is false: a
   * head picked elsewhere, such as the atlas, keeps the page where the reader is).
   * @param {number} layer @param {number} head
   * @param {Partial<import("../../core/types.js").SentenceState>} [also] other keys changed with it (the query)
   * @param {{focus?: boolean}} [how]
   */
  function chooseHead(layer, head, also = {}, { focus = true } = {}) {
    change({ layer, head, heads: [head], ...also });
    if (!focus) return;
    /** @type {HTMLElement | null} */ (
      byId("mv-grid").querySelector(`button.mv-cell[data-layer="${layer}"][data-head="${head}"]`)
    )?.focus();
  }

  /** @param {number} index an original token index */
  function pickQuery(index) {
    change({ query: index });
  }

  /** A cell of the chosen head's large heatmap picked: its query and its key, which Why this
   * score explains. @param {number} query @param {number} key original token indices */
  function pickPair(query, key) {
    change({ query, key });
  }

  /** @type {Record<string, number>} */
  const tickets = {};
  /** A view's draw is current while no newer draw of it (or newer trace) has started. @param {string} name */
  function ticket(name) {
    const mine = (tickets[name] = (tickets[name] || 0) + 1);
    const generation = app.generation;
    return () => mine === tickets[name] && generation === app.generation && app.active;
  }

  /** The token count in the input card: the text box's tokens against the cap, what the model
   * wrote after them (Generate leaves the box as it is: the views show both), and the rows the
   * views show when the token options change them.
   * @param {number} n the trace's tokens @param {import("../../core/types.js").TokenViewMeta} [tv] */
  function showCount(n, tv) {
    // Over the cap of the model whose trace the views show (the picker may hold another, one
    // that cannot read the text: unreadable.js).
    const drawn = /** @type {{model?: string} | undefined} */ (app.parts?.body)?.model;
    const info = app.models?.models.find((m) => m.name === drawn) ?? modelInfo();
    const generated = app.first?.meta.generated;
    const boxed = generated ? generated.start : n; // the box's tokens (the text and its pictures)
    const wrote = generated ? ` + ${generated.steps} written by the model` : "";
    const cap = `${boxed} / ${info?.max_tokens ?? "?"} tokens${wrote}`;
    const rows = tv?.labels.length ?? n;
    const what = app.s.mergeWords ? "words" : "tokens";
    byId("s-count").textContent = rows === n && !app.s.mergeWords ? cap : `${rows} ${what} shown · ${cap}`;
  }

  // The Knock-out card needs the server (the clean run beside the knocked-out one).
  const { change, replace } = createChange({ app, edited, viewChanged, changed: hooks.changed });
  const knockCard = fixed ? null : createKnockCard({ app, ticket, change, setError: hooks.setError });
  /** A head's cell clicked in the model view: knocked out (or put back) while the switch is on,
   * else opened. @param {number} layer @param {number} head */
  const pickCell = (layer, head) => (knockCard?.knocking() ? knockCard.toggle(layer, head) : chooseHead(layer, head));
  const drawn = createCards({
    app,
    p,
    ticket,
    chooseHead,
    pickCell,
    pickQuery,
    pickPair: shown.includes("why") ? pickPair : undefined, // (a card the page always opens)
    atlas: ctx.atlas,
    change,
    showCount,
    setError: hooks.setError,
  });
  const cards = {
    ...drawn,
    async model() {
      await drawn.model();
      knockCard?.mark();
    },
    knock: async () => knockCard?.draw(),
  };
  /** The views drawn (the others are never drawn). */
  const VIEWS = /** @type {typeof cards} */ (
    Object.fromEntries(Object.entries(cards).filter(([name]) => shown.includes(name)))
  );
  /** The cards of the views not drawn: hidden (after the input card shows the others). */
  function hideOthers() {
    for (const [name, id] of Object.entries(CARDS)) if (!shown.includes(name)) byId(id).hidden = true;
  }
  /** What a view draws now, in words (a refused part's note says it still shows it). @param {string} name */
  function showing(name) {
    const { layer, head, aggregate, query } = app.s;
    if (name === "traj") return "the trajectories";
    if (name === "lens") return `the predictions around token ${p.queryIndex() + 1}`;
    const what =
      name === "model" && aggregate !== "head"
        ? `the ${aggregate.replace(/_/g, " ")} of layer ${layer + 1}`
        : `layer ${layer + 1}, head ${head + 1}`;
    return ["qk", "why"].includes(name) && query !== null ? `${what}, token ${p.queryIndex() + 1}` : what;
  }
  const notes = viewNotes((name) => (CARDS[name] ? byId(CARDS[name]) : null), showing);
  /** A view is drawn when this page draws it and its card is open (More views, more.js). */
  const drawable = (/** @type {string} */ name) => name in VIEWS && ctx.isOpen(name);

  /** Each head's mean entropy into the grid's tooltips. */
  function entropyTitles() {
    const generation = app.generation;
    status.waiting("entropy", true); // the page is busy until its titles are in
    p.entropyPart()
      .finally(() => status.waiting("entropy", false))
      .then(
        (part) => {
          if (generation !== app.generation) return;
          app.entropy = part.arrays.entropy_mean;
          modelview.titles(byId("mv-grid"), app.entropy);
        },
        () => {},
      );
  }

  /**
   * Draw the named views (all by default); settles when all are drawn.
   * @param {string[]} [which]
   */
  function drawAll(which = Object.keys(VIEWS)) {
    if (!app.first || !app.active) return Promise.resolve();
    return drawViews(VIEWS, which.filter(drawable), hooks.setError, notes);
  }

  /**
   * After a view choice: redraw the views the changed keys feed, write the URL, no new trace.
   * @param {string[]} keys keys of the sentence state that changed
   */
  function viewChanged(keys) {
    hooks.changed();
    const which = viewsFed(SENTENCE_FEEDS, keys);
    if (keys.includes("layer") || keys.includes("head")) ctx.headChanged();
    if (app.first) prefetch(app, p, shown.filter(ctx.isOpen), which);
    status.drawing(drawAll(which), hooks.viewsDrawn);
  }

  /** A card opened under More views: its parts asked for, then drawn. @param {string} name */
  function opened(name) {
    if (!app.first || !(name in VIEWS)) return;
    prefetch(app, p, [name]);
    status.drawing(drawAll([name]), hooks.viewsDrawn);
  }

  return { show, chooseHead, change, replace, drawAll, hideOthers, knockCard, opened };
}

/** The parts the views `which` will ask for, asked for now, in the order the server should
 * serve them (it serves them in turn): a text with pictures, the picture's overlay (what its
 * reader came for); the head view's (a long text's chosen query rows, else
 * its layer: the slowest first), the chosen head, its query, the trajectories. The grid's
 * titles (each head's entropy) come after every view is drawn; a long text's whole layer
 * (every token's lines) when the pointer comes to the head view.
 * @param {SentenceApp} app @param {ReturnType<typeof import("./parts.js").createParts>} p
 * @param {string[]} shown the views drawn @param {string[]} [which] */
function prefetch(app, p, shown, which = shown) {
  const asks = {
    picture: app.first?.meta.images?.length ? [() => picture.asked(p)] : [], // a picture: its overlay first
    head: [p.readsRows() ? p.rowsPart : p.layerPart],
    model: [p.headPart],
    traj: [p.projectionPart],
    qk: app.first?.meta.unavailable?.queries ? [] : [p.queryPart], // none without q and k
    gen: app.first?.meta.generated ? [p.genPart] : [],
    lens: app.first?.meta.unavailable?.lens ? [] : [p.lensPart], // none for an encoder
  };
  for (const name of ["picture", "head", "model", "gen", "qk", "traj", "lens"]) {
    if (!which.includes(name) || !shown.includes(name)) continue;
    for (const ask of asks[/** @type {keyof asks} */ (name)]) {
      /** @type {() => Promise<unknown>} */ (ask)().catch(() => {}); // a failure is reported by the view that draws the part
    }
  }
}
