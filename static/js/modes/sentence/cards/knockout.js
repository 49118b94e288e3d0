// The Knock-out card of sentence mode, and the model view's "knock out" switch. With the switch
// on, a click on a head's cell (or Enter on it) adds the head to the heads knocked out, or takes
// it off; the card picks how (zero, mean, patch with a source text) and lists them. Any change
// asks for a new trace with the request's ``ablate`` (every view then shows the knocked-out
// model), and the card draws it beside the clean run: the trace of the same text without
// ``ablate``, whose parts it asks for itself (the server keeps both, keyed on ``ablate``).

import { TraceParts } from "../../../core/api.js";
import { byId, el, fillIndexSelect, fillOptions } from "../../../core/dom.js";
import { ABLATE_MODES, ablateKey } from "../../../core/state.js";
import * as knockview from "../../../views/knockout.js";
import { showWith } from "../showwith.js";

/** @typedef {import("../../../core/types.js").Compact} Compact */
/** @typedef {import("../../../core/types.js").NDArray} NDArray */
/** @typedef {import("../../../core/types.js").Ablated} Ablated */
/** @typedef {import("../parts.js").SentenceApp} SentenceApp */

/**
 * @param {{app: import("../parts.js").SentenceApp, ticket: (name: string) => () => boolean,
 *   change: ReturnType<typeof import("../change.js").createChange>["change"],
 *   setError: (message: string | null) => void}} ctx change: the one way the card changes the
 *   state (the heads knocked out and how: a new trace)
 * @returns {{draw: () => Promise<void>, knocking: () => boolean, mark: () => void,
 *   toggle: (layer: number, head: number) => void, sync: () => void, close: () => void}} close:
 *   the card was closed (More views): the switch goes off and every head back
 */
export function createKnockCard(ctx) {
  const { app, ticket, change, setError } = ctx;
  const knock = /** @type {HTMLInputElement} */ (byId("mv-knock"));
  const mode = /** @type {HTMLSelectElement} */ (byId("ko-mode"));
  const source = /** @type {HTMLInputElement} */ (byId("ko-source"));
  const sourceBox = byId("ko-source-box");
  const heads = byId("ko-heads");
  const diffLayer = /** @type {HTMLSelectElement} */ (byId("ko-diff-layer"));
  const diffHead = /** @type {HTMLSelectElement} */ (byId("ko-diff-head"));
  const note = byId("ko-note");
  const view = byId("ko-view");
  /** @type {{key: string, parts: TraceParts} | null} */
  let clean = null;

  /** The clean run's parts: the trace of the same request without ``ablate``. */
  function cleanParts() {
    const body = /** @type {{ablate?: unknown}} */ ({ .../** @type {import("../parts.js").Parts} */ (app.parts).body });
    delete body.ablate;
    const key = JSON.stringify(body);
    if (clean?.key !== key) clean = { key, parts: new TraceParts(body, 8) };
    return clean.parts;
  }

  /** The controls as the state says. */
  function sync() {
    const why = blocked(app);
    knock.disabled = why !== null;
    if (why !== null && knock.checked) {
      knock.checked = false;
      byId("mv-grid").classList.remove("knocking");
      byId("mv-knock-hint").hidden = true;
    }
    byId("mv-knock-label").title = why ?? "While on, a click on a head (or Enter on it) knocks it out, or puts it back";
    mode.value = app.s.ablateMode;
    source.value = app.s.ablateSource;
    if (app.models) source.maxLength = app.models.max_text_chars; // the server's cap, as the text's
    sourceBox.hidden = app.s.ablateMode !== "patch";
    heads.replaceChildren(...app.s.ablate.map(headChip));
    byId("ko-clear").hidden = !app.s.ablate.length;
    const meta = app.first?.meta;
    const c = meta ? compared(app) : null;
    // Only a later layer's attention can change: the layers after the first knocked out.
    byId("ko-diff-layer-box").hidden = byId("ko-diff-head-box").hidden = !c;
    if (meta && c) {
      const later = Array.from({ length: meta.layers - c.after - 1 }, (_, i) => c.after + 1 + i);
      fillOptions(
        diffLayer,
        later.map((l) => /** @type {[number, string]} */ ([l, `layer ${l + 1}`])),
        c.layer,
      );
      fillIndexSelect(diffHead, meta.heads, "head", c.head);
    }
  }

  /** Mark the knocked-out heads' cells in the model view (after it is drawn): a class, and
   * their names say so. */
  function mark() {
    const out = new Set(blocked(app) === null ? app.s.ablate.map(ablateKey) : []);
    for (const b of /** @type {NodeListOf<HTMLElement>} */ (byId("mv-grid").querySelectorAll("button.mv-cell"))) {
      const on = out.has(`${b.dataset.layer}:${b.dataset.head}`);
      b.classList.toggle("knocked", on);
      const name = (b.getAttribute("aria-label") ?? "").replace(/, knocked out$/, "");
      b.setAttribute("aria-label", on ? `${name}, knocked out` : name);
    }
  }

  /** Knock the head out, or put it back; a new trace. @param {number} layer @param {number} head */
  function toggle(layer, head) {
    const key = ablateKey({ layer, head });
    const max = app.models?.max_ablate ?? Infinity;
    let ablate;
    if (app.s.ablate.some((a) => ablateKey(a) === key)) {
      ablate = app.s.ablate.filter((a) => ablateKey(a) !== key);
    } else if (app.s.ablate.length >= max) {
      setError(`ablate: at most ${max} heads can be knocked out at once`);
      return;
    } else {
      ablate = [...app.s.ablate, { layer, head }].sort((a, b) => a.layer - b.layer || a.head - b.head);
    }
    change({ ablate }, { delay: 0 });
    sync();
    mark();
  }

  knock.addEventListener("change", () => {
    byId("mv-grid").classList.toggle("knocking", knock.checked);
    byId("mv-knock-hint").hidden = !knock.checked;
  });
  for (const m of ABLATE_MODES)
    if (![...mode.options].some((o) => o.value === m)) throw new Error(`ko-mode lacks ${m}`);
  mode.addEventListener("change", () => {
    change({ ablateMode: /** @type {import("../../../core/types.js").AblateMode} */ (mode.value) }, { delay: 0 });
    sync();
  });
  // The source recomputes as it is typed, as the text does (the same debounce), not on Enter.
  source.addEventListener("input", () => {
    change({ ablateSource: source.value });
  });
  heads.addEventListener("click", (e) => {
    const b = /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (e.target).closest("button.ko-chip"));
    if (b) toggle(Number(b.dataset.layer), Number(b.dataset.head));
  });
  byId("ko-clear").addEventListener("click", () => {
    change({ ablate: [] }, { delay: 0 });
    sync();
  });
  /** The card closed: no head stays knocked out where nothing says so. */
  function close() {
    if (knock.checked) {
      knock.checked = false;
      knock.dispatchEvent(new Event("change"));
    }
    if (!app.s.ablate.length) return;
    change({ ablate: [] }, { delay: 0 });
    sync();
  }
  diffLayer.addEventListener("change", () => {
    change({ diffLayer: Number(diffLayer.value) });
  });
  diffHead.addEventListener("change", () => {
    change({ diffHead: Number(diffHead.value) });
  });

  /** Draw the card for the trace shown. */
  async function draw() {
    const current = ticket("knock");
    const first = /** @type {Compact} */ (app.first);
    const meta = first.meta;
    sync();
    const ablated = meta.ablated ?? [];
    const why = blocked(app);
    if (why !== null) {
      note.textContent = `No knock-out here: ${why}.`;
      view.replaceChildren();
      return;
    }
    note.textContent = knockNote(app.s, ablated, meta.n);
    if (!ablated.length) {
      view.replaceChildren();
      return;
    }
    const c = compared(app);
    const cleanRun = cleanParts();
    const knockedRun = /** @type {import("../parts.js").Parts} */ (app.parts);
    const att = c ? { fields: "attentions", layer: c.layer, head: c.head } : null;
    const predicts = !meta.unavailable?.top_k;
    const top = { fields: "top_k", k: 1, pos_start: 0, pos_count: meta.n };
    // The output (the last hidden states): what a knock-out in any layer can change.
    const out = { fields: "hidden_states" };
    const [ca, ka, cp, kp, co, ko] = await Promise.all([
      att ? cleanRun.get(att) : null,
      att ? knockedRun.get(att) : null,
      predicts ? cleanRun.get(top) : null,
      predicts ? knockedRun.get(top) : null,
      cleanRun.get(out),
      knockedRun.get(out),
    ]);
    if (!current()) return;
    const last = Math.max(...ablated.map((a) => a.layer));
    knockview.render(view, {
      tokens: meta.tokens,
      what: knockview.knockedWords(ablated, ablated[0].mode, ablated[0].source),
      predictions: cp && kp ? { clean: predictions(cp), knocked: predictions(kp) } : null,
      noPredictions: meta.unavailable?.top_k?.replace(/^top_k: /, ""),
      diff: c && ca && ka ? { layer: c.layer, head: c.head, clean: square(ca), knocked: square(ka) } : null,
      noDiff: c
        ? null
        : `Layer ${last + 1} is the model's last: a head's attention is computed from what comes into its ` +
          "layer, so knocking out a head there changes no attention map; it changes only the output.",
      moved: moved(co, ko),
    });
    // No losses (an encoder): one click to a model that predicts, the text kept.
    const offer = predicts ? null : showWith(app.models, app.s.model, app.s.text, "ko-h");
    if (offer) view.querySelector(".ko-no-losses")?.after(offer);
  }

  return { draw, knocking: () => knock.checked, mark, toggle, sync, close };
}

/**
 * The head compared, in a layer whose attention the knock-out can change (after the first
 * layer knocked out, `after`): the chosen one, else the chosen head's index in the next layer;
 * null when the first layer knocked out is the last (no attention comes after it).
 * @param {SentenceApp} app
 */
function compared(app) {
  const meta = /** @type {Compact} */ (app.first).meta;
  const after = Math.min(...app.s.ablate.map((a) => a.layer), meta.layers - 1);
  if (after >= meta.layers - 1) return null;
  const layer = Math.min(meta.layers - 1, Math.max(after + 1, app.s.diffLayer ?? after + 1));
  return { after, layer, head: app.s.diffHead ?? app.s.head };
}

/**
 * How far each token's output (its last hidden state) moved with the heads knocked out, as a
 * share of its clean length: |h' - h| / |h|.
 * @param {Compact} clean @param {Compact} knocked
 */
function moved(clean, knocked) {
  const a = clean.arrays.hidden_states;
  const b = knocked.arrays.hidden_states;
  const [layers, n, d] = a.shape;
  const base = (layers - 1) * n * d; // the last layer's rows
  return Array.from({ length: n }, (_, t) => {
    let diff = 0;
    let norm = 0;
    for (let x = 0; x < d; x++) {
      const c = a.data[base + t * d + x];
      diff += (b.data[base + t * d + x] - c) ** 2;
      norm += c ** 2;
    }
    return norm > 0 ? Math.sqrt(diff / norm) : 0;
  });
}

/** Why heads cannot be knocked out now (null: they can): the server's reason for the model
 * (the model list's ablate_refused: a model served through transformers whose attention does not
 * go through its AttentionInterface), or a generation (a knock-out traces the text alone).
 * @param {SentenceApp} app */
function blocked(app) {
  const info = app.models?.models.find((m) => m.name === app.s.model);
  if (info?.ablate_refused) return info.ablate_refused;
  if (app.s.generate) return "a knock-out traces the text alone: clear the generation first";
  return null;
}

/** A knocked-out head's chip in the card: a click puts it back. @param {{layer: number, head: number}} a */
function headChip(a) {
  return el(
    "button",
    {
      type: "button",
      className: "token-chip ko-chip",
      dataset: { layer: String(a.layer), head: String(a.head) },
    },
    [
      `L${a.layer + 1} H${a.head + 1} `,
      el("span", { "aria-hidden": "true", textContent: "×" }),
      el("span", { className: "sr-only", textContent: `: put layer ${a.layer + 1} head ${a.head + 1} back` }),
    ],
  );
}

/**
 * What the card says above its view: why nothing is knocked out, or what was.
 * @param {import("../../../core/types.js").SentenceState} s @param {Ablated[]} ablated the trace's
 * @param {number} n the text's tokens
 */
function knockNote(s, ablated, n) {
  if (!ablated.length) {
    return s.ablateMode === "patch" && s.ablate.length && !s.ablateSource.trim()
      ? "Type a source text to patch from: its head outputs replace the knocked-out heads'."
      : "No head is knocked out. Turn on “knock out” in the model view and click heads (or focus one and press Enter).";
  }
  return ablated.some((a) => a.mode === "patch" && a.patched < n)
    ? `The source text has ${ablated[0].patched} tokens: the first ${ablated[0].patched} positions take its head outputs, the rest keep their own.`
    : "Every view above shows the model with these heads knocked out; this card sets it beside the clean run.";
}

/** A part's attention as one square matrix [n][n]. @param {Compact} part */
function square(part) {
  const a = part.arrays.attentions;
  const n = a.shape[a.shape.length - 1];
  return /** @type {NDArray} */ ({ dtype: a.dtype, shape: [n, n], data: a.data });
}

/** A part's top-k predictions as the view draws them. @param {Compact} part */
function predictions(part) {
  const m = /** @type {NonNullable<Compact["meta"]["top_k"]>} */ (part.meta.top_k);
  return {
    target: part.arrays["top_k.target_probs"],
    ids: part.arrays["top_k.ids"],
    probs: part.arrays["top_k.probs"],
    k: m.k,
    vocab: m.vocab,
  };
}
