// The embedding editor: token labels, axis names and the n x d values, all editable.
// Every piece of user text goes into input.value or textContent, never into HTML.
//
// The table is one Tab stop, an ARIA grid (a roving tabindex: the cell last in focus is the
// stop). Inside it the arrow keys move between cells, Home and End to a row's ends (with Ctrl
// the grid's first and last cell); a cell reached by them has its text selected, so typing
// replaces it, as in a spreadsheet. Enter or F2 edits the cell (the arrows then move the caret),
// Escape or F2 leaves editing, and Enter while editing moves down a row. A click on a cell whose
// text is not all selected selects it all, as the keyboard does; a click on a cell all selected
// edits it at the caret. A value that is not a number is marked (aria-invalid) and described by
// the note under the table, which names its cell.
// With `readOnly` (a saved file's record of what was traced) the cells are read, never edited.

import { el } from "../../core/dom.js";
import { isBlock, parseBlock, parseNumber } from "./paste.js";
import { dims } from "../../core/state.js";

/** The text a value cell shows: the number, or the text that is not a number yet. */
export const cellText = (v) => (typeof v === "number" ? String(v) : String(v ?? ""));

/** The focusable control of each cell, by grid row and column (null where a cell has none, or
 * its control is disabled or hidden). @param {HTMLTableElement} table */
function gridCells(table) {
  return [...table.rows].map((row) =>
    [...row.cells].map((c) => {
      const e = /** @type {HTMLInputElement | HTMLButtonElement | null} */ (c.querySelector("input, button"));
      return e && !e.disabled && !e.hidden ? e : null;
    }),
  );
}

/**
 * Where a key moves from row r, column c of a grid of cells (null: no control there): the
 * nearest control that way (arrows), a row's first or last (Home, End; with Ctrl the grid's).
 * null for any other key, or when there is none that way.
 * @param {(HTMLElement | null)[][]} cells @param {number} r @param {number} c @param {string} key
 * @param {boolean} ctrl
 * @returns {HTMLElement | null}
 */
export function gridMove(cells, r, c, key, ctrl) {
  const all = cells.flat().filter(Boolean);
  if (key === "Home" && ctrl) return all[0] ?? null;
  if (key === "End" && ctrl) return all[all.length - 1] ?? null;
  if (key === "Home") return cells[r].find(Boolean) ?? null;
  if (key === "End") return [...cells[r]].reverse().find(Boolean) ?? null;
  const step = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] }[key];
  if (!step) return null;
  for (let i = r + step[0], j = c + step[1]; i >= 0 && i < cells.length && j >= 0; i += step[0], j += step[1]) {
    if (step[1] && j >= cells[i].length) break;
    const e = cells[i][j];
    if (e) return e;
  }
  return null;
}

/**
 * A value cell's accessible name, as a learner reads the table: "banana, fruit" (the token's
 * and the dimension's names; the token's position too where two tokens share a name, "the
 * (token 5), grammar"; "token 3" or "dimension 2" for a name left empty).
 * @param {string[]} tokens @param {string[]} axes @param {number} r @param {number} c
 */
export function cellName(tokens, axes, r, c) {
  const token = tokens[r]?.trim() || `token ${r + 1}`;
  const twice = tokens.filter((t) => t.trim() === tokens[r]?.trim()).length > 1;
  return `${twice ? `${token} (token ${r + 1})` : token}, ${axes[c]?.trim() || `dimension ${c + 1}`}`;
}

/**
 * The note on the values that are not numbers: the cell at (r, c) named, its text and the rule,
 * and how many more there are; null when every value is a number.
 * @param {{tokens: string[], axes: string[], embeddings: (number | string)[][]}} state
 * @param {{r: number, c: number} | null} [at] the cell to name first, when it is one of them
 */
export function valueProblem({ tokens, axes, embeddings }, at = null) {
  /** @type {{r: number, c: number}[]} */
  const bad = [];
  embeddings.forEach((row, r) => row.forEach((v, c) => typeof v !== "number" && bad.push({ r, c })));
  if (!bad.length) return null;
  const { r, c } = (at && bad.find((b) => b.r === at.r && b.c === at.c)) ?? bad[0];
  const text = String(embeddings[r][c]).trim();
  const name = `${tokens[r] || `token ${r + 1}`}, ${axes[c] || `dimension ${c + 1}`}`;
  const more = bad.length - 1;
  return (
    `${name}: ${text ? `${text} is not a number` : "empty, not a number"}` +
    (more ? ` (and ${more} more ${more === 1 ? "cell" : "cells"} not a number)` : "")
  );
}

/**
 * createTable(table, {getState, getLimits, onEdit, onNotice, note}). An edit is made on a copy
 * of the table's part of the state and handed whole to onEdit(patch, {structural}), which
 * changes the state (the table never writes it); structural edits (rows or columns added or
 * removed) re-render. note: where the values that are not numbers are named (valueProblem), hidden while
 * there are none. lock(): from then on a record, read only (readOnly cells, no remove buttons).
 * @param {any} table
 * @param {{getState: any, getLimits: any, onEdit: any, onNotice: any, note?: HTMLElement | null}} options
 */
export function createTable(table, { getState, getLimits, onEdit, onNotice, note = null }) {
  table.setAttribute("role", "grid");
  let readOnly = false;
  /** The grid's Tab stop (row, column), kept over a re-render. */
  let stop = { r: 0, c: 1 };
  /** A cell is being edited (its arrows move the caret, not the focus). */
  let editing = false;

  /** A copy of the table's part of the state, to edit and hand to onEdit. */
  function draft() {
    const { tokens, axes, embeddings, config, preset } = getState();
    return structuredClone({ tokens, axes, embeddings, config, preset });
  }

  /** Where a control is in the grid. @param {Element} e */
  function where(e) {
    const cell = /** @type {HTMLTableCellElement | null} */ (e.closest("td, th"));
    const row = /** @type {HTMLTableRowElement | null} */ (cell?.parentElement ?? null);
    return cell && row ? { r: row.rowIndex, c: cell.cellIndex } : null;
  }

  /** Make `e` the grid's one Tab stop. @param {HTMLElement} e */
  function rove(e) {
    for (const x of /** @type {NodeListOf<HTMLElement>} */ (table.querySelectorAll("input, button"))) x.tabIndex = -1;
    e.tabIndex = 0;
    stop = where(e) ?? stop;
  }

  /** The stop after a render: the cell at the old place, else the nearest before it. */
  function restoreStop() {
    const cells = gridCells(table);
    const r = Math.min(stop.r, cells.length - 1);
    const row = cells[r] ?? [];
    const e =
      row[Math.min(stop.c, row.length - 1)] ??
      row.slice(0, stop.c).reverse().find(Boolean) ??
      cells.flat().find(Boolean);
    if (e) rove(e);
    return e ?? null;
  }

  function render() {
    const focused = table.contains(document.activeElement);
    const { tokens, axes, embeddings } = getState();
    const d = dims(getState());
    const limits = getLimits();
    const head = el("thead");
    const names = el("tr", {}, [el("th", { className: "corner", scope: "col", textContent: "token" })]);
    const removers = el("tr", {}, [el("th")]);
    axes.forEach((name, j) => {
      names.append(
        el("th", { scope: "col" }, [
          el("input", {
            type: "text",
            className: "axis",
            value: name,
            maxLength: limits.max_token_chars,
            title: name,
            dataset: { kind: "axis", c: j },
            "aria-label": `Name of dimension ${j + 1}`,
          }),
        ]),
      );
      removers.append(
        el("th", {}, [
          el("button", {
            type: "button",
            className: "remove",
            textContent: "×",
            disabled: d <= 1,
            dataset: { removeCol: j },
            title: "Remove this dimension",
            "aria-label": `Remove dimension ${j + 1}`,
          }),
        ]),
      );
    });
    head.append(names, removers);
    const body = el("tbody");
    tokens.forEach((label, i) => {
      const row = el("tr", {}, [
        el("th", { scope: "row" }, [
          el("input", {
            type: "text",
            className: "label",
            value: label,
            maxLength: limits.max_token_chars,
            dataset: { kind: "label", r: i },
            "aria-label": `Label of token ${i + 1}`,
          }),
        ]),
      ]);
      embeddings[i].forEach((v, j) => {
        row.append(
          el("td", {}, [
            el("input", {
              type: "text",
              inputMode: "decimal",
              className: typeof v === "number" ? "value" : "value invalid",
              value: cellText(v),
              dataset: { kind: "value", r: i, c: j },
              "aria-label": cellName(tokens, axes, i, j),
            }),
          ]),
        );
      });
      row.append(
        el("td", {}, [
          el("button", {
            type: "button",
            className: "remove",
            textContent: "×",
            disabled: tokens.length <= 1,
            dataset: { removeRow: i },
            title: "Remove this token",
            "aria-label": `Remove token ${i + 1}`,
          }),
        ]),
      );
      body.append(row);
    });
    table.replaceChildren(head, body);
    fitNames(axes);
    showProblem();
    if (readOnly) lockCells();
    const e = restoreStop();
    // A removed row or column took the focus with it: it goes to the cell now in its place.
    if (focused && e && !table.contains(document.activeElement)) e.focus();
  }

  /**
   * Each column as wide as its longest dimension name needs (up to 12 characters; the CSS reads
   * --axis-ch, set on the toy lab so that its panel widens too), so a name such as "grammar" is
   * not cut short in its header.
   * @param {string[]} axes
   */
  function fitNames(axes) {
    const longest = Math.min(12, Math.max(1, ...axes.map((a) => a.length)));
    /** @type {HTMLElement} */ (table.closest("#toy-mode") ?? table).style.setProperty("--axis-ch", String(longest));
  }

  /**
   * The value cells' accessible names again, after a token or a dimension is renamed.
   * @param {{tokens: string[], axes: string[]}} s
   */
  function renameCells(s) {
    for (const e of /** @type {NodeListOf<HTMLInputElement>} */ (table.querySelectorAll('input[data-kind="value"]')))
      e.setAttribute("aria-label", cellName(s.tokens, s.axes, +(e.dataset.r ?? 0), +(e.dataset.c ?? 0)));
  }

  /**
   * Mark the values that are not numbers (aria-invalid, described by the note) and say in the
   * note which (the cell `at` first, when it is one); the note hidden when there are none.
   * @param {HTMLInputElement | null} [at]
   */
  function showProblem(at = null) {
    const state = getState();
    for (const e of /** @type {NodeListOf<HTMLInputElement>} */ (table.querySelectorAll('input[data-kind="value"]'))) {
      const bad = typeof state.embeddings[Number(e.dataset.r)]?.[Number(e.dataset.c)] !== "number";
      e.classList.toggle("invalid", bad);
      if (bad) e.setAttribute("aria-invalid", "true");
      else e.removeAttribute("aria-invalid");
      if (bad && note?.id) e.setAttribute("aria-describedby", note.id);
      else e.removeAttribute("aria-describedby");
    }
    if (!note) return;
    const said = valueProblem(state, at ? { r: +(at.dataset.r ?? -1), c: +(at.dataset.c ?? -1) } : null);
    note.textContent = said ?? "";
    note.hidden = !said;
  }

  /** The cells of a record: read only, no remove buttons. */
  function lockCells() {
    table.setAttribute("aria-readonly", "true");
    for (const e of /** @type {NodeListOf<HTMLInputElement>} */ (table.querySelectorAll("input"))) e.readOnly = true;
    for (const b of /** @type {NodeListOf<HTMLButtonElement>} */ (table.querySelectorAll("button.remove"))) {
      b.disabled = true;
      b.hidden = true;
    }
  }

  /** From now on a record: read, never edited. */
  function lock() {
    readOnly = true;
    lockCells();
    restoreStop();
  }

  function addToken() {
    const s = draft();
    if (s.tokens.length >= getLimits().max_tokens) return;
    s.tokens.push(`t${s.tokens.length + 1}`);
    s.embeddings.push(Array(dims(s)).fill(0));
    onEdit(s, { structural: true });
  }

  function addDim() {
    const s = draft();
    if (dims(s) >= getLimits().max_dim) return;
    s.axes.push(`x${dims(s) + 1}`);
    s.embeddings.forEach((row) => row.push(0));
    onEdit(s, { structural: true });
  }

  table.addEventListener("input", (event) => {
    const t = event.target;
    const s = draft();
    const { kind } = t.dataset;
    if (kind === "value") s.embeddings[+t.dataset.r][+t.dataset.c] = parseNumber(t.value) ?? t.value;
    else if (kind === "label") s.tokens[+t.dataset.r] = t.value;
    else if (kind === "axis") s.axes[+t.dataset.c] = t.value;
    else return;
    onEdit(s, { structural: false });
    if (kind === "value") return showProblem(t);
    if (kind === "axis") {
      t.title = t.value; // the whole name, where the column cuts it short
      fitNames(getState().axes);
    }
    renameCells(getState());
  });

  table.addEventListener("click", (event) => {
    const b = event.target.closest("button");
    if (!b) return;
    const s = draft();
    if (b.dataset.removeRow !== undefined && s.tokens.length > 1) {
      const i = +b.dataset.removeRow;
      s.tokens.splice(i, 1);
      s.embeddings.splice(i, 1);
      onEdit(s, { structural: true });
    } else if (b.dataset.removeCol !== undefined && dims(s) > 1) {
      const j = +b.dataset.removeCol;
      s.axes.splice(j, 1);
      s.embeddings.forEach((row) => row.splice(j, 1));
      // Custom d x d matrices lose the same dimension: its row and its column.
      for (const m of Object.values(s.config.weights || {})) {
        m.splice(j, 1);
        m.forEach((row) => row.splice(j, 1));
      }
      onEdit(s, { structural: true });
    }
  });

  /** Go to a cell by keyboard: it becomes the stop, not edited, its text selected. @param {HTMLElement} e */
  function go(e) {
    editing = false;
    rove(e);
    e.focus();
    if (e instanceof HTMLInputElement) e.select();
  }

  /** Edit the cell in focus, the caret at its end. @param {HTMLInputElement} t */
  function edit(t) {
    if (readOnly) return;
    editing = true;
    t.setSelectionRange(t.value.length, t.value.length);
  }

  // A click on a cell whose text is not all selected selects it all, as the keyboard does, so
  // typing replaces it: a click landed the caret before a right-aligned "0" (typing 1 gave "10"),
  // or after the text just typed in the cell in focus (typing 1.5 gave "1.51.2"). A click on a
  // cell all selected edits it, the caret where it lands, as in a spreadsheet.
  /** The cell a click is selecting (its pointer went down on it). @type {HTMLInputElement | null} */
  let entered = null;
  /** @param {HTMLInputElement} t */
  const allSelected = (t) =>
    t === document.activeElement && t.selectionStart === 0 && t.selectionEnd === t.value.length;
  table.addEventListener("pointerdown", (event) => {
    const t = /** @type {HTMLElement} */ (event.target);
    if (!(t instanceof HTMLInputElement)) return;
    entered = allSelected(t) ? null : t;
    editing = !entered && !readOnly;
  });
  table.addEventListener("click", (event) => {
    const t = event.target;
    if (t !== entered || !(t instanceof HTMLInputElement)) return;
    entered = null;
    // After the browser put the caret where the pointer went up (a drag's selection stays).
    if (t.selectionStart === t.selectionEnd) t.select();
  });
  table.addEventListener("focusin", (event) => {
    const t = /** @type {HTMLElement} */ (event.target);
    if (t.matches("input, button")) rove(t);
    // Focus by Tab (or moved here by the page) selects the text too; a click's is selected above.
    if (t instanceof HTMLInputElement && t !== entered) t.select();
  });
  table.addEventListener("focusout", (event) => {
    if (event.target === entered) entered = null; // its click never came (dragged away)
    if (!table.contains(/** @type {Node | null} */ (event.relatedTarget))) editing = false;
  });

  table.addEventListener("keydown", (event) => {
    const t = /** @type {HTMLElement} */ (event.target);
    if (!t.matches("input, button")) return;
    const input = t instanceof HTMLInputElement ? t : null;
    const { key } = event;
    if (editing && input) {
      if (key === "Escape" || key === "F2") {
        event.preventDefault();
        editing = false;
        input.select();
      } else if (key === "Enter") {
        // Enter moves down a row, like a spreadsheet (from a name, to the column's first value).
        event.preventDefault();
        const { kind, r, c } = input.dataset;
        const next =
          kind === "axis"
            ? `[data-kind="value"][data-r="0"][data-c="${c}"]`
            : `[data-kind="${kind}"][data-r="${Number(r) + 1}"]` + (kind === "value" ? `[data-c="${c}"]` : "");
        const target = /** @type {HTMLElement | null} */ (table.querySelector(next));
        if (target) go(target);
        else {
          editing = false;
          input.select();
        }
      }
      return; // the arrows move the caret, typing types
    }
    const at = where(t);
    const next = at && gridMove(gridCells(table), at.r, at.c, key, event.ctrlKey || event.metaKey);
    if (next || ["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "Home", "End"].includes(key)) {
      event.preventDefault();
      if (next) go(next);
      return;
    }
    if (!input) return; // a remove button: Enter and Space press it
    if (key === "Enter" || key === "F2") {
      event.preventDefault();
      edit(input);
    } else if (
      !readOnly &&
      !event.ctrlKey &&
      !event.metaKey &&
      !event.altKey &&
      (key.length === 1 || key === "Backspace" || key === "Delete")
    ) {
      editing = true; // typing replaces the selected text, and goes on editing
    }
  });

  table.addEventListener("paste", (event) => {
    const t = event.target;
    const text = event.clipboardData ? event.clipboardData.getData("text/plain") : "";
    if (!t.dataset.kind || !text || !isBlock(text)) return; // one value: the browser pastes it
    event.preventDefault();
    const { kind } = t.dataset;
    const row0 = kind === "axis" ? 0 : +t.dataset.r;
    const col0 = kind === "label" ? 0 : +t.dataset.c;
    pasteBlock(parseBlock(text), row0, col0);
    const again = table.querySelector(
      `[data-kind="${kind}"]` +
        (kind === "axis" ? `[data-c="${col0}"]` : `[data-r="${row0}"]`) +
        (kind === "value" ? `[data-c="${col0}"]` : ""),
    );
    if (again) again.focus();
  });

  /**
   * Paste a parsed block. A whole table (a header row of names and a first column of tokens)
   * replaces the table; any other block overwrites the cells it covers from (row0, col0),
   * growing the table up to the limits. Either way the status line says what it did.
   */
  function pasteBlock(block, row0, col0) {
    const s = draft();
    const limits = getLimits();
    const cut = (text) => String(text).slice(0, limits.max_token_chars);
    const width = Math.max(block.axes ? block.axes.length : 0, ...block.values.map((r) => r.length), 0);
    const height = block.values.length;
    const whole = Boolean(block.axes && block.labels);
    if (whole) [row0, col0] = [0, 0];
    const n = Math.min(limits.max_tokens, whole ? height : Math.max(s.tokens.length, row0 + height));
    const d = Math.min(limits.max_dim, whole ? width : Math.max(dims(s), col0 + width));
    const clipped = row0 + height > n || col0 + width > d;
    const grew = !whole && (n > s.tokens.length || d > dims(s));
    if (whole) {
      s.preset = null; // your own table now
      s.tokens.length = 0;
      s.axes.length = 0;
      s.embeddings.length = 0;
    }
    while (s.axes.length < d) s.axes.push(`x${s.axes.length + 1}`);
    s.embeddings.forEach((row) => {
      while (row.length < d) row.push(0);
    });
    while (s.tokens.length < n) {
      s.tokens.push(`t${s.tokens.length + 1}`);
      s.embeddings.push(Array(d).fill(0));
    }
    (block.axes || []).forEach((name, j) => {
      if (col0 + j < d) s.axes[col0 + j] = cut(name);
    });
    block.values.forEach((vals, i) => {
      if (row0 + i >= n) return;
      if (block.labels) s.tokens[row0 + i] = cut(block.labels[i]);
      vals.forEach((v, j) => {
        if (col0 + j < d) s.embeddings[row0 + i][col0 + j] = v;
      });
    });
    // What was pasted: rows x columns of numbers, as they landed in the table.
    const rows = Math.min(height, n - row0);
    const cols = Math.min(width, d - col0);
    let said = whole
      ? `pasted ${rows} x ${cols} with names: it replaces the table`
      : !height
        ? `pasted ${cols} dimension names from dimension ${col0 + 1}`
        : !width
          ? `pasted ${rows} token names from token ${row0 + 1}`
          : `pasted ${rows} x ${cols} at token ${row0 + 1}, dimension ${col0 + 1}` +
            (block.axes ? " with dimension names" : block.labels ? " with token names" : "");
    if (grew) said += `; the table grew to ${n} x ${d}`;
    if (clipped) said += `; clipped to ${limits.max_tokens} tokens x ${limits.max_dim} dimensions`;
    onNotice(said);
    onEdit(s, { structural: true });
  }

  return { render, addToken, addDim, pasteBlock, lock };
}
