// The Predictions card's view: what a causal model predicts after the token in focus (its top-k
// next tokens, with probability bars) and the logit lens (every hidden state through the final
// norm and the unembedding: a layer x position grid of the top token, coloured by its
// probability, with the rank of the token that actually comes next on hover, in the live region
// and in the numbers table). The server computes every number (fields top_k and lens); this
// draws a window of positions around the query. Selecting a cell makes its position the query.

import { el } from "../core/dom.js";
import { exact } from "../core/numbers.js";
import { termText } from "../core/glossary.js";
import { WEIGHT_LUT } from "../core/theme.js";
import { quotedToken, shownToken, spokenToken } from "../core/tokens.js";
import { describe, keyCursor, matrixTable } from "./access.js";
import { inkOn } from "./describe.js";

/** @typedef {import("../core/types.js").NDArray} NDArray */

/**
 * @typedef {object} LensData
 * @property {string[]} tokens the text's tokens (their labels), by position
 * @property {number} start the first position the arrays hold (they hold m: a window)
 * @property {"next" | "masked"} [predicts] next: a causal model's next token (the default);
 *   masked: an encoder's masked-language-model head, the token at each position (targets: the
 *   text's own token, -1 at a mask)
 * @property {{k: number, ids: NDArray, probs: NDArray, vocab: Record<string, string>}} top
 *   [m][k] the most probable next tokens at each position, most probable first
 * @property {{rows: number, ids: NDArray, probs: NDArray, targets: NDArray, target_ranks: NDArray,
 *   target_probs: NDArray, vocab: Record<string, string>}} lens [rows][m] the top token of each
 *   hidden state (row 0: the embeddings; the last: the output), targets [m] the next token's
 *   id (-1 at the last position), its rank (1: the top; 0: none) and probability
 */

/** How many positions the lens draws in a card `width` pixels wide (3 to 16).
 * @param {number} width */
export const columnsFor = (width) => Math.max(3, Math.min(16, Math.floor(((width || 800) - 90) / 76)));

/**
 * A probability as a percentage: one decimal, two below 1%, "<0.01%" below that; never a value
 * it is not (numbers.js's rule for a share): "100.0%" only when it is all of it (0.9996 reads
 * "over 99.9%"), "0%" only when it is none.
 * @param {number} p
 */
export function percent(p) {
  if (p >= 0.01) {
    const s = (p * 100).toFixed(1);
    return s === "100.0" && p < 1 ? "over 99.9%" : `${s}%`;
  }
  if (p >= 0.0001) return `${(p * 100).toFixed(2)}%`;
  return p > 0 ? "<0.01%" : "0%";
}

/** A token's label as the page quotes it (spaces, newlines and bytes shown). */
export const quoted = quotedToken;
/** A token's label as the live region reads it. @param {string} s */
const spoken = (s) => `“${spokenToken(s)}”`;

/** A row of the lens in words: "embeddings", "layer 3", the last "layer 12 (output)".
 * @param {number} row @param {number} rows */
export function rowName(row, rows) {
  if (row === 0) return "embeddings";
  return row === rows - 1 ? `layer ${row} (output)` : `layer ${row}`;
}

/**
 * What one cell of the lens says (the live region's words, and the hover line's).
 * @param {LensData} data @param {number} row @param {number} pos
 * @param {(s: string) => string} [quote] how a token is written (the live region: named)
 * @returns {string}
 */
export function cellText(data, row, pos, quote = quoted) {
  const { lens, tokens } = data;
  const m = lens.targets.data.length;
  const j = pos - data.start;
  const at = row * m + j;
  const top = lens.vocab[String(lens.ids.data[at])] ?? "?";
  const where = data.predicts === "masked" ? "at" : "after";
  const head =
    `${rowName(row, lens.rows)}, ${where} ${quote(tokens[pos])} (token ${pos + 1}): ` +
    `top ${quote(top)} ${percent(lens.probs.data[at])}`;
  const target = lens.targets.data[j];
  const masked = data.predicts === "masked";
  if (target < 0) return masked ? `${head}; a mask: the text does not say` : `${head}; the text ends here`;
  const next = lens.vocab[String(target)] ?? "?";
  return (
    `${head}; ${masked ? "the text's token" : "the next token"} ${quote(next)} is rank ` +
    `${lens.target_ranks.data[at]}, ${percent(lens.target_probs.data[at])}`
  );
}

/**
 * The grid's numbers table (behind "Show the numbers"): a row per layer, a column per position
 * the arrays hold, each cell the top token, its probability exactly as the API sent it (exact():
 * a float32 in the fewest digits that read back as it, never a rounded percentage) and the next
 * token's rank.
 * @param {LensData} data
 * @returns {import("./access.js").NumbersTable}
 */
export function numbersTable(data) {
  const { lens, tokens, start } = data;
  const m = lens.targets.data.length;
  const masked = data.predicts === "masked";
  const shown = Array.from({ length: m }, (_, i) => start + i);
  return matrixTable(
    `Logit lens: each row's top token and its probability, exact; ${masked ? "the text's token's" : "the next token's"} rank`,
    "layer",
    Array.from({ length: lens.rows }, (_, r) => rowName(r, lens.rows)),
    shown.map((pos) => `${pos + 1}. ${shownToken(tokens[pos])}`),
    (r, c) => {
      const at = r * m + c;
      const rank = lens.targets.data[c] < 0 ? "" : `; ${masked ? "text's" : "next"} rank ${lens.target_ranks.data[at]}`;
      const top = shownToken(lens.vocab[String(lens.ids.data[at])] ?? "?");
      return `${top} ${exact(lens.probs.data[at], lens.probs.dtype)}${rank}`;
    },
  );
}

/** The positions drawn: `cols` of them around the query, within the text. @param {number} n
 * @param {number} query @param {number} cols */
export function windowOf(n, query, cols) {
  const count = Math.min(n, cols);
  const start = Math.max(0, Math.min(n - count, query - Math.floor(count / 2)));
  return Array.from({ length: count }, (_, i) => start + i);
}

/** The first row at which the next token is the top one (from there on the grid "knows" it),
 * or -1. @param {LensData} data @param {number} pos */
export function firstKnown(data, pos) {
  const { lens } = data;
  const m = lens.targets.data.length;
  let known = -1;
  for (let r = lens.rows - 1; r >= 0; r--) {
    if (lens.target_ranks.data[r * m + pos - data.start] !== 1) break;
    known = r;
  }
  return known;
}

/**
 * Draw the card: the top-k after the query and the lens around it (the positions `data`
 * holds, a window that takes in the query: windowOf).
 * @param {HTMLElement} container
 * @param {LensData} data
 * @param {{query: number}} selection the position in focus (an original token index)
 * @param {{onPick?: (pos: number) => void}} [callbacks] onPick: a cell chosen (click, Enter)
 */
export function render(container, data, selection, callbacks = {}) {
  const { tokens, top, lens, start } = data;
  const n = tokens.length;
  const m = lens.targets.data.length;
  const shown = Array.from({ length: m }, (_, i) => start + i);
  const q = Math.max(start, Math.min(start + m - 1, selection.query));
  const qj = q - start;
  const masked = data.predicts === "masked";
  // The top-k list: bars as wide as each probability, the numbers written beside them.
  const items = [];
  for (let j = 0; j < top.k; j++) {
    const id = top.ids.data[qj * top.k + j];
    const p = top.probs.data[qj * top.k + j];
    const isNext = id === lens.targets.data[qj];
    items.push(
      el("li", { className: isNext ? "lens-top-row next" : "lens-top-row" }, [
        el("span", { className: "lens-top-token", textContent: quoted(top.vocab[String(id)] ?? "?") }),
        el("span", { className: "lens-bar", "aria-hidden": "true" }, [
          el("span", { className: "lens-bar-fill", style: `width: ${Math.max(0.5, p * 100)}%` }),
        ]),
        el("span", {
          className: "lens-top-p",
          textContent: percent(p) + (isNext ? (masked ? " (the text's)" : " (the next token)") : ""),
        }),
      ]),
    );
  }
  const out = (lens.rows - 1) * m + qj;
  const target = lens.targets.data[qj];
  const said = quoted(lens.vocab[String(target)] ?? "?");
  const ranked =
    `the output ranks it ${lens.target_ranks.data[out]} of the vocabulary, ` +
    `${percent(lens.target_probs.data[out])}.`;
  const nextLine = masked
    ? target < 0
      ? "A mask: the text does not say what is here; the model fills it in."
      : `The text has ${said} here: ${ranked}`
    : target < 0
      ? "The text ends here: nothing follows to rank."
      : `The text continues with ${said}: ${ranked}`;

  const grid = el("div", {
    className: "lens-grid",
    style: `grid-template-columns: 5.5em repeat(${shown.length}, minmax(0, 1fr))`,
  });
  const hover = el("p", { className: "hint lens-hover", dataset: { role: "lens-hover" } });
  grid.append(el("span", { className: "lens-corner", textContent: "layer" }));
  for (const pos of shown) {
    grid.append(
      el("span", {
        className: pos === q ? "lens-col query" : "lens-col",
        title: `token ${pos + 1}: ${spokenToken(tokens[pos])}`,
        textContent: `${pos + 1}. ${shownToken(tokens[pos])}`,
      }),
    );
  }
  /** @type {HTMLElement[][]} */
  const cells = [];
  for (let r = 0; r < lens.rows; r++) {
    grid.append(
      el("span", {
        className: "lens-row",
        textContent: r === 0 ? "embed" : r === lens.rows - 1 ? `${r} out` : String(r),
      }),
    );
    const line = [];
    for (const pos of shown) {
      const at = r * m + pos - start;
      const p = lens.probs.data[at];
      const i = Math.round(Math.max(0, Math.min(1, p)) * 255);
      const rgb = /** @type {[number, number, number]} */ ([
        WEIGHT_LUT[i * 3],
        WEIGHT_LUT[i * 3 + 1],
        WEIGHT_LUT[i * 3 + 2],
      ]);
      const hit = lens.target_ranks.data[at] === 1;
      const cell = el("span", {
        className: `lens-cell${hit ? " hit" : ""}${pos === q ? " query" : ""}`,
        dataset: { row: String(r), pos: String(pos) },
        style: `background: rgb(${rgb.join(",")}); color: ${inkOn(rgb)}`,
        textContent: shownToken(lens.vocab[String(lens.ids.data[at])] ?? "?"),
      });
      line.push(cell);
      grid.append(cell);
    }
    cells.push(line);
  }
  grid.onmouseover = (e) => {
    const c = /** @type {HTMLElement} */ (e.target).closest?.(".lens-cell");
    if (c instanceof HTMLElement) hover.textContent = cellText(data, Number(c.dataset.row), Number(c.dataset.pos));
  };
  grid.onclick = (e) => {
    const c = /** @type {HTMLElement} */ (e.target).closest?.(".lens-cell");
    if (c instanceof HTMLElement) callbacks.onPick?.(Number(c.dataset.pos));
  };

  container.replaceChildren(
    el("div", { className: "lens-top" }, [
      el("h3", {
        className: "lens-sub",
        textContent: `${masked ? "At" : "Next after"} ${quoted(tokens[q])} (token ${q + 1}): the top ${top.k}`,
      }),
      el("ol", { className: "lens-top-list" }, items),
      el("p", { className: "hint lens-next", textContent: nextLine }),
    ]),
    el("h3", {
      className: "lens-sub",
      textContent: `Logit lens, tokens ${shown[0] + 1}–${shown[shown.length - 1] + 1} of ${n}`,
    }),
    el("div", { className: "lens-scroll" }, [grid]),
    hover,
  );

  // Text alternative: what the grid shows in a line, every cell in the numbers table, and the
  // keyboard cursor over the cells (Enter makes the column's token the query).
  const known = firstKnown(data, q);
  const summary =
    target < 0
      ? `Logit lens of ${lens.rows} rows (the embeddings and ${lens.rows - 1} layers) over tokens ` +
        `${shown[0] + 1}–${shown[shown.length - 1] + 1}; ${masked ? "the query is a mask" : "the text ends at the query"}.`
      : `Logit lens of ${lens.rows} rows (the embeddings and ${lens.rows - 1} layers): ` +
        `${masked ? "at" : "after"} ${quoted(tokens[q])} ${masked ? "the text's token" : "the next token"} ${said} is ` +
        (known < 0 ? "never the top prediction." : `the top prediction from ${rowName(known, lens.rows)} on.`);
  const text = describe(grid, { summary, table: numbersTable(data) });
  /** @type {HTMLElement | null} */
  let marked = null;
  keyCursor(grid, text.live, {
    rows: lens.rows,
    cols: shown.length,
    label: "Logit lens: arrow keys move over layers and tokens; Enter makes the token the query",
    describedBy: text.summary.id,
    text: (r, c) => cellText(data, r, shown[c], spoken),
    show: (r, c) => {
      marked?.classList.remove("cursor");
      marked = cells[r][c];
      marked.classList.add("cursor");
      hover.textContent = cellText(data, r, shown[c]);
    },
    hide: () => marked?.classList.remove("cursor"),
    pick: (_r, c) => callbacks.onPick?.(shown[c]),
  });
}

/**
 * The card without predictions: why (an encoder, a model without an unembedding).
 * @param {HTMLElement} container @param {string} reason the server's words
 */
export function renderUnavailable(container, reason) {
  container.replaceChildren(
    el(
      "p",
      { className: "hint lens-unavailable", role: "note" },
      termText(
        `No predictions here: ${reason.replace(/^(top_k|lens): /, "")}. ` +
          "A causal model (GPT-2, a Llama-style folder, a trained run) shows them, and an encoder " +
          "saved with its masked-language-model head.",
        ["mlm-head"],
      ),
    ),
  );
}
