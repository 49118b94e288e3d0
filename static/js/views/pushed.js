// The Predictions card's "What pushed this": the direct logit attribution of one token at the
// query (the server's fields=logit_attribution), a bar per component of the residual stream,
// diverging around zero (up: it raises the logit; down: it lowers it), heads grouped by layer:
// a row per layer (its heads, its attention output bias, its MLP) under a row of what the
// stream starts with (the embedding, the positions, BERT's token type, and every norm's and
// projection's bias together). The bars sum to the logit (before any final soft-cap), with the
// final norm's scale frozen. The reader picks the token: the true next one, the top
// prediction, or the difference between them. The server computes every number; this draws
// them. render(container, data, selection, callbacks).

import { el } from "../core/dom.js";
import { termText } from "../core/glossary.js";
import { exact, readable, readableProse, readableSigned } from "../core/numbers.js";
import { quotedToken, spokenToken } from "../core/tokens.js";
import { describe, keyCursor, matrixTable } from "./access.js";
import { labelKeyNodes, shortName } from "./why.js";

/** @typedef {import("../core/types.js").Compact} Compact */
/** @typedef {import("../core/types.js").Pushed} Pushed */

/**
 * One component of the residual stream, as the wire names it (0-based layer and head).
 * @typedef {import("./why.js").Component} Component
 */

/**
 * A logit attribution: `values[i]` is component i's direct contribution; they sum to `logit`
 * (logit[token] - logit[versus] with versus).
 * @typedef {{position: number, token: number, versus: number | null, components: Component[],
 *   values: number[], dtype?: string, logit: number}} Attribution dtype: the values' ("F32"), as
 *   the numbers table spells them exactly
 */

/**
 * A token the reader can attribute: its id and label.
 * @typedef {{id: number, label: string}} Choice
 */

/**
 * What the panel draws.
 * @typedef {object} PushedData
 * @property {string[]} tokens the text's tokens (labels), by position
 * @property {"next" | "masked"} [predicts] masked: an encoder's masked-LM head (the text's token)
 * @property {{next: Choice | null, top: Choice}} choices the true next token (the text's token
 *   for an encoder; null at the last position or at a mask) and the top prediction
 * @property {Attribution | null} attribution null while it is asked for
 */

/** The choices in the order the radio group offers them (state.js's PUSHED, a test checks). */
export const PUSHED_CHOICES = /** @type {Pushed[]} */ (["next", "top", "diff"]);

/** The bars' colours: up (raises the logit) and down; each over 4.5:1 on white. */
export const UP = "#1f5fa0";
export const DOWN = "#b3261e";

/**
 * The attribution of a part asked with fields=logit_attribution, as a plain object.
 * @param {Compact} part @returns {Attribution}
 */
export function attributionOf(part) {
  const m = /** @type {any} */ (part.meta).logit_attribution;
  const values = part.arrays["logit_attribution.values"];
  if (!m || !values) throw new Error("the part has no logit_attribution");
  return {
    position: m.position,
    token: m.token,
    versus: m.versus ?? null,
    components: m.components.map((/** @type {Component} */ c) => ({ ...c })),
    values: Array.from(values.data, Number),
    dtype: values.dtype,
    logit: m.logit,
  };
}

/**
 * The components grouped as the chart draws them: `lead`, the row of what the stream starts
 * with (embedding, position, token type, the biases together, in the wire's order), and a row
 * per layer, its heads by index, its attention output bias and its MLP (indices into the
 * attribution's components; -1 where the layer has none).
 * @param {Attribution} a
 * @returns {{lead: number[], layers: {layer: number, heads: number[], attnBias: number, mlp: number}[], heads: number}}
 */
export function groupsOf(a) {
  /** @type {number[]} */
  const lead = [];
  /** @type {Map<number, {layer: number, heads: number[], attnBias: number, mlp: number}>} */
  const rows = new Map();
  let heads = 0;
  const row = (/** @type {number} */ l) => {
    let r = rows.get(l);
    if (!r) rows.set(l, (r = { layer: l, heads: [], attnBias: -1, mlp: -1 }));
    return r;
  };
  a.components.forEach((c, i) => {
    if (c.kind === "head" && c.layer !== null && c.head !== null) {
      row(c.layer).heads[c.head] = i;
      heads = Math.max(heads, c.head + 1);
    } else if (c.kind === "attn_bias" && c.layer !== null) row(c.layer).attnBias = i;
    else if (c.kind === "mlp" && c.layer !== null) row(c.layer).mlp = i;
    else lead.push(i);
  });
  const layers = [...rows.values()].sort((x, y) => x.layer - y.layer);
  for (const r of layers) r.heads = Array.from({ length: heads }, (_, h) => r.heads[h] ?? -1);
  return { lead, layers, heads };
}

/** A contribution signed as a sentence says it (numbers.js readableSigned with readableProse):
 * "+3.2", "−1.5" (a true minus), "−0.00312", "about +0.00008", "0". @param {number} v */
export const signed = (v) => readableSigned(v, readableProse);

/**
 * The choice the panel can draw: `next` needs a next token; `diff` a next token that is not
 * the top prediction; otherwise the top prediction.
 * @param {Pushed} choice @param {PushedData["choices"]} choices @returns {Pushed}
 */
export function resolveChoice(choice, choices) {
  if (!choices.next) return "top";
  if (choice === "diff" && choices.next.id === choices.top.id) return "top";
  return choice;
}

/**
 * The token and versus the server is asked for a choice (resolveChoice's).
 * @param {Pushed} choice @param {PushedData["choices"]} choices
 * @returns {{token: number, versus?: number}}
 */
export function targetOf(choice, choices) {
  const c = resolveChoice(choice, choices);
  const next = /** @type {Choice} */ (choices.next);
  if (c === "next") return { token: next.id };
  if (c === "diff") return { token: next.id, versus: choices.top.id };
  return { token: choices.top.id };
}

/**
 * What is attributed, in words: "the logit of “ the”", "the logit of “ the” minus that of “ a”".
 * @param {PushedData["choices"]} choices @param {Pushed} choice
 * @param {(s: string) => string} [quote]
 */
export function whatText(choices, choice, quote = quotedToken) {
  const c = resolveChoice(choice, choices);
  const top = quote(choices.top.label);
  if (c === "top") return `the logit of ${top}`;
  const next = quote(/** @type {Choice} */ (choices.next).label);
  return c === "next" ? `the logit of ${next}` : `the logit of ${next} minus that of ${top}`;
}

/**
 * The top few components for and against, in words, by numbers.js's rules (3 significant
 * digits, never an exponent): "Up: L9 H6 +3.2, L11 MLP +2; down: L3 H2 −1.5; of a logit of
 * 14.1."
 * @param {Attribution} a @param {number} [count] how many each way
 * @param {boolean} [difference] the attribution is of a logit difference
 */
export function pushWords(a, count = 3, difference = a.versus !== null) {
  const order = a.values.map((v, i) => i);
  /** @param {number[]} ids */
  const said = (ids) => ids.map((i) => `${shortName(a.components[i])} ${signed(a.values[i])}`).join(", ");
  const up = order.filter((i) => a.values[i] > 0).sort((i, j) => a.values[j] - a.values[i]);
  const down = order.filter((i) => a.values[i] < 0).sort((i, j) => a.values[i] - a.values[j]);
  const parts = [
    `up: ${up.length ? said(up.slice(0, count)) : "nothing"}`,
    `down: ${down.length ? said(down.slice(0, count)) : "nothing"}`,
  ];
  const total = difference ? "a logit difference" : "a logit";
  const line = `${parts.join("; ")}; of ${total} of ${readableProse(a.logit)}.`;
  return line[0].toUpperCase() + line.slice(1);
}

/** @param {string} name @param {Record<string, string | number>} attrs @param {string} [text] */
function svgEl(name, attrs, text) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

const COL_MAX = 56; // the widest column
const LABEL_W = 44; // the layer labels' column
const ROW_H = 38; // a layer's row; its zero line in the middle
const HEAD_H = 16; // the layers' column labels
const LEAD_TOP = 14; // the first row's names over its bars

/**
 * Draw the panel: the choice of token, then (once the attribution has come) the bars, the
 * top components in words, and the numbers.
 * @param {HTMLElement} container
 * @param {PushedData} data
 * @param {{query: number, choice: Pushed}} selection
 * @param {{onChoose?: (choice: Pushed) => void}} [callbacks]
 */
export function render(container, data, selection, callbacks = {}) {
  const { tokens, choices, attribution: a } = data;
  const masked = data.predicts === "masked";
  const choice = resolveChoice(selection.choice, choices);
  const q = selection.query;
  // Focus stays where it was across a redraw (a radio chosen, the chart under the cursor).
  const active = /** @type {HTMLElement | null} */ (document.activeElement);
  const had = active && container.contains(active) ? active : null;
  const hadRadio = had instanceof HTMLInputElement ? had.value : null;
  const hadChart = had?.classList.contains("pushed-chart") ?? false;
  const holder = /** @type {HTMLElement & {__pushedCursor?: {i: number, j: number}}} */ (container);

  const group = `pushed-choice-${Math.random().toString(36).slice(2, 8)}`;
  const nextWord = masked ? "the text's token" : "the true next token";
  /** @param {Pushed} value @param {string} text */
  const radio = (value, text) =>
    el("label", { className: "pushed-radio" }, [
      el("input", { type: "radio", name: group, value, checked: value === choice }),
      ` ${text}`,
    ]);
  const options = [];
  if (choices.next) options.push(radio("next", `${nextWord} ${quotedToken(choices.next.label)}`));
  options.push(radio("top", `the top prediction ${quotedToken(choices.top.label)}`));
  if (choices.next && choices.next.id !== choices.top.id) {
    const diff = `the difference ${quotedToken(choices.next.label)} − ${quotedToken(choices.top.label)}`;
    options.push(radio("diff", diff));
  }
  const radios = el("div", { className: "pushed-choices", role: "radiogroup", "aria-label": "What pushed" }, options);
  radios.onchange = (e) => {
    const v = /** @type {HTMLInputElement} */ (e.target).value;
    if (PUSHED_CHOICES.includes(/** @type {Pushed} */ (v))) callbacks.onChoose?.(/** @type {Pushed} */ (v));
  };
  /** @type {string[]} */
  const notes = [];
  if (!choices.next) {
    notes.push(
      masked
        ? "A mask: the text does not say what is here, so only the top prediction is attributed."
        : "The text ends here: no next token, so only the top prediction is attributed.",
    );
  } else if (choices.next.id === choices.top.id) {
    notes.push(`${masked ? "The text's token" : "The true next token"} is the top prediction: the same token.`);
  }
  const where = `${masked ? "at" : "after"} ${quotedToken(tokens[q])} (token ${q + 1})`;
  const head = [
    el("h3", { className: "lens-sub", textContent: "What pushed this" }),
    el(
      "p",
      { className: "hint pushed-about" },
      termText(
        `Each bar is one part of the model's direct contribution to ${whatText(choices, choice)} ${where}: ` +
          "up (blue) raises it, down (red) lowers it; together they sum to it.",
        ["attribution", "logit"],
      ),
    ),
    radios,
    ...notes.map((t) => el("p", { className: "hint pushed-note", textContent: t })),
  ];
  if (!a) {
    container.replaceChildren(...head, el("p", { className: "hint pushed-asking", textContent: "Attributing…" }));
    refocus();
    return;
  }

  const { lead, layers, heads } = groupsOf(a);
  const cols = Math.max(heads + 2, lead.length, 1);
  const room = Math.max(280, container.clientWidth || 640);
  const colW = Math.min(COL_MAX, (room - LABEL_W - 4) / cols); // a few heads: narrow bars still
  const width = LABEL_W + 4 + cols * colW;
  const span = Math.max(1, Math.min(3, Math.floor(cols / Math.max(1, lead.length))));
  // Top to bottom: the lead row's names and its bars, the column labels, a row per layer.
  const layerZero = (/** @type {number} */ k) => LEAD_TOP + ROW_H + HEAD_H + k * ROW_H + ROW_H / 2;
  const height = LEAD_TOP + ROW_H + HEAD_H + layers.length * ROW_H + 4;
  const biggest = Math.max(1e-12, ...a.values.map(Math.abs));
  const half = ROW_H / 2 - 3;
  const svg = svgEl("svg", {
    class: "pushed-svg",
    viewBox: `0 0 ${width} ${height}`,
    width: Math.round(width),
    "aria-hidden": "true",
  });
  /** Where component i's bar sits: its x centre, width and zero line. */
  /** @type {{x: number, w: number, zero: number}[]} */
  const place = [];
  const w = Math.max(2, colW - 4);
  const leadZero = LEAD_TOP + ROW_H / 2;
  lead.forEach((i, k) => {
    const x = LABEL_W + (k * span + span / 2) * colW;
    place[i] = { x, w, zero: leadZero };
    const name = LEAD_SHORT[a.components[i].kind] ?? a.components[i].name;
    svg.append(svgEl("text", { x, y: LEAD_TOP - 3, "text-anchor": "middle", class: "pushed-axis" }, name));
  });
  svg.append(svgEl("text", { x: 2, y: leadZero + 4, class: "pushed-axis" }, "input"));
  const leadEnd = LABEL_W + lead.length * span * colW;
  svg.append(svgEl("line", { x1: LABEL_W, x2: leadEnd, y1: leadZero, y2: leadZero, class: "pushed-zero" }));
  const every = Math.max(1, Math.ceil(22 / colW)); // label every nth column where they are narrow
  for (let j = 0; j < heads + 2; j++) {
    if (j < heads && j % every !== 0) continue;
    const label = j < heads ? `H${j + 1}` : j === heads ? "bias" : "MLP";
    const x = LABEL_W + (j + 0.5) * colW;
    const y = LEAD_TOP + ROW_H + HEAD_H - 4;
    svg.append(svgEl("text", { x, y, "text-anchor": "middle", class: "pushed-axis" }, label));
  }
  layers.forEach((r, k) => {
    const zero = layerZero(k);
    svg.append(svgEl("text", { x: 2, y: zero + 4, class: "pushed-axis" }, `L${r.layer + 1}`));
    svg.append(svgEl("line", { x1: LABEL_W, x2: width - 2, y1: zero, y2: zero, class: "pushed-zero" }));
    [...r.heads, r.attnBias, r.mlp].forEach((i, j) => {
      if (i >= 0) place[i] = { x: LABEL_W + (j + 0.5) * colW, w, zero };
    });
  });
  // The bars (data-value: the server's number exactly).
  a.values.forEach((v, i) => {
    const p = place[i];
    if (!p) return;
    const h = (Math.abs(v) / biggest) * half;
    svg.append(
      svgEl("rect", {
        x: p.x - p.w / 2,
        y: v >= 0 ? p.zero - h : p.zero,
        width: p.w,
        height: h,
        fill: v >= 0 ? UP : DOWN,
        class: "pushed-bar",
        "data-index": i,
        "data-name": a.components[i].name,
        "data-value": String(v),
      }),
    );
  });
  const cursor = svgEl("rect", { class: "pushed-cursor", visibility: "hidden" });
  svg.append(cursor);

  /** The keyboard grid: row 0 the lead components, then a row per layer. */
  const grid = [lead, ...layers.map((r) => [...r.heads, r.attnBias, r.mlp])];
  /** The component at a cursor place (the lead row's last past its end; -1: none). */
  const at = (/** @type {number} */ r, /** @type {number} */ c) => {
    const line = grid[r] ?? [];
    return line[Math.min(c, line.length - 1)] ?? -1;
  };
  const what = whatText(choices, choice, (s) => `“${spokenToken(s)}”`);
  /** @param {number} i @param {(s: string) => string} [quote] */
  const barText = (i, quote) =>
    i < 0
      ? "no component here"
      : `${shortName(a.components[i])}: ${readable(a.values[i])} of ${
          quote ? whatText(choices, choice, quote) : what
        }, ${readable(a.logit)}`;
  const hover = el("p", { className: "hint pushed-hover", dataset: { role: "pushed-hover" } });
  const chart = el("div", {
    className: "pushed-chart",
    dataset: { logit: String(a.logit), token: String(a.token), versus: String(a.versus ?? "") },
  });
  chart.append(svg);
  svg.addEventListener("mouseover", (e) => {
    const t = /** @type {Element} */ (e.target);
    if (t.classList?.contains("pushed-bar"))
      hover.textContent = barText(Number(t.getAttribute("data-index")), quotedToken);
  });

  const words = pushWords(a, 3, choice === "diff");
  const labels = el("p", { className: "hint pushed-labels" }, labelKeyNodes(a.components));
  container.replaceChildren(...head, labels, el("div", { className: "pushed-scroll" }, [chart]), hover);

  // Text alternative: the words, and every component's value in the table (a row per layer;
  // the lead components each a row of their own).
  const summary = `${a.values.length} components ${where} sum to ${whatText(choices, choice)}, ${readableProse(a.logit)}. ${words}`;
  const rowNames = [...lead.map((i) => shortName(a.components[i])), ...layers.map((r) => `L${r.layer + 1}`)];
  const colNames = [...Array.from({ length: heads }, (_, h) => `H${h + 1}`), "attn bias", "MLP"];
  const table = matrixTable(
    `What pushed ${whatText(choices, choice)} ${where}: each component's direct contribution`,
    "component",
    rowNames,
    colNames,
    (r, c) => {
      if (r < lead.length) return c === 0 ? exact(a.values[lead[r]], a.dtype) : "";
      const line = grid[r - lead.length + 1];
      const i = line[c] ?? -1;
      return i < 0 ? "" : exact(a.values[i], a.dtype);
    },
  );
  const text = describe(chart, { summary, table });
  text.summary.classList.add("pushed-words");
  if (holder.__pushedCursor) /** @type {any} */ (chart).__cursor = holder.__pushedCursor;
  keyCursor(chart, text.live, {
    rows: grid.length,
    cols,
    label: "What pushed this: arrow keys move over the components, a row per layer",
    describedBy: text.summary.id,
    text: (r, c) => barText(at(r, c)),
    show: (r, c) => {
      holder.__pushedCursor = /** @type {any} */ (chart).__cursor;
      const i = at(r, c);
      const p = place[i];
      if (!p) return cursor.setAttribute("visibility", "hidden");
      cursor.setAttribute("x", String(p.x - p.w / 2 - 2));
      cursor.setAttribute("y", String(p.zero - half - 2));
      cursor.setAttribute("width", String(p.w + 4));
      cursor.setAttribute("height", String(2 * half + 4));
      cursor.setAttribute("visibility", "visible");
      hover.textContent = barText(i, quotedToken);
    },
    hide: () => cursor.setAttribute("visibility", "hidden"),
  });
  refocus();

  function refocus() {
    if (hadRadio !== null) {
      const r = /** @type {HTMLInputElement | null} */ (container.querySelector(`input[value="${hadRadio}"]`));
      r?.focus();
    } else if (hadChart) {
      /** @type {HTMLElement | null} */ (container.querySelector(".pushed-chart"))?.focus();
    }
  }
}

/** The lead row's names under its bars. */
const LEAD_SHORT = /** @type {Record<string, string>} */ ({
  embed: "embed",
  pos: "pos",
  type: "type",
  bias: "biases",
});

/**
 * The panel when nothing can be attributed: why (the server's words).
 * @param {HTMLElement} container @param {string} reason
 */
export function renderUnavailable(container, reason) {
  container.replaceChildren(
    el("h3", { className: "lens-sub", textContent: "What pushed this" }),
    el(
      "p",
      { className: "hint pushed-unavailable", role: "note" },
      termText(
        `Nothing to attribute here: ${reason.replace(/^(fields: )?(logit_attribution: )?/, "").replace(/\.$/, "")}.`,
        ["unembedding"],
      ),
    ),
  );
}
