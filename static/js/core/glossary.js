// The glossary in the page: a term of the field marked where a learner meets it (a card's hint,
// its "How to read" text, the words a view writes) opens its plain-language explanation in a
// popover. The terms come from the server, defined once in attnviz/glossary.py (the presets'
// `glossary`, core/api.js fetchPresets; a saved file's config), and installGlossary() makes
// the page's marks live:
//   - a template marks a term as <span class="term" data-term="sink">sink</span>, upgraded here
//     to a button; a view makes one with term(id, text), or termText() / setTermText() to mark
//     the first occurrence of each term named in a sentence it writes;
//   - a term is a button (aria-expanded, aria-describedby: its explanation, so a screen reader
//     reads it on focus) that opens the one popover (the HTML popover attribute: the top layer,
//     so nothing around it moves) on click, Enter or Space, and when the keyboard focuses it;
//     Escape, a click elsewhere and the focus leaving close it;
//   - the header's Glossary button opens every term in a dialog.
// Nothing here fetches: the terms arrive with what the page already reads.

import { el } from "./dom.js";

/**
 * One term, as attnviz/glossary.py defines it.
 * @typedef {{id: string, name: string, words: string[], text: string, see?: string}} Term
 */

/** @type {Map<string, Term>} */
const TERMS = new Map();
const POP = "term-pop";
const DEFS = "term-defs";
const DIALOG = "glossary-dialog";
/** The hidden element holding a term's explanation (its buttons' description). @param {string} id */
const defId = (id) => `term-def-${id}`;

/** The term button whose popover is open. @type {HTMLElement | null} */
let openFor = null;
let wired = false;

/** The terms installed (for the tests and the dialog), in the glossary's order. */
export const terms = () => [...TERMS.values()];

/**
 * Make the page's terms live: keep `list`, write the explanations the buttons are described by,
 * make the popover and the dialog, upgrade every marked span under `root`, and listen (once).
 * Called again (a page's later bootstrap), it replaces the terms.
 * @param {Term[] | null | undefined} list @param {ParentNode} [root]
 */
export function installGlossary(list, root = document) {
  TERMS.clear();
  for (const t of list ?? []) TERMS.set(t.id, t);
  let defs = document.getElementById(DEFS);
  if (!defs) {
    defs = el("div", { id: DEFS, hidden: true });
    document.body.append(defs);
  }
  defs.replaceChildren(...terms().map((t) => el("span", { id: defId(t.id), textContent: `${t.name}: ${t.text}` })));
  popover();
  fillDialog();
  upgrade(root);
  if (!wired) wire();
  wired = true;
}

/**
 * A term's button, `text` its words as the sentence writes them; the text alone where the term
 * is not in the glossary (an error in the console: every term the page marks is defined in
 * attnviz/glossary.py) or none is installed.
 * @param {string} id @param {string} text @returns {Node}
 */
export function term(id, text) {
  if (!TERMS.has(id)) {
    if (TERMS.size) console.error(`attnviz: the glossary has no term ${JSON.stringify(id)}`);
    return document.createTextNode(text);
  }
  return el("button", {
    type: "button",
    className: "term",
    dataset: { term: id },
    "aria-expanded": "false",
    "aria-describedby": defId(id),
    textContent: text,
  });
}

/**
 * Where each term of `ids` first occurs in `text`, by its words (`table`'s): [start, end, id],
 * in order, none overlapping, each term at most once. A word matches whole (no letter or digit
 * either side, nor a hyphen before it: "norm" is not in "pre-norm", "encoder" is in
 * "encoder-decoder"), its case as written. Pure (no DOM).
 * @param {string} text @param {string[]} ids @param {Map<string, Term>} [table]
 * @returns {[number, number, string][]}
 */
export function findTerms(text, ids, table = TERMS) {
  /** @type {[number, number, string][]} */
  const found = [];
  for (const id of ids) {
    const words = table.get(id)?.words ?? [];
    /** @type {[number, number] | null} */
    let best = null;
    for (const w of words) {
      const re = new RegExp(`(?<![\\p{L}\\p{N}-])${w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![\\p{L}\\p{N}])`, "u");
      const m = re.exec(text);
      if (m && (!best || m.index < best[0] || (m.index === best[0] && w.length > best[1] - best[0])))
        best = [m.index, m.index + w.length];
    }
    if (best && !found.some(([s, e]) => best[0] < e && s < best[1])) found.push([best[0], best[1], id]);
  }
  return found.sort((a, b) => a[0] - b[0]);
}

/**
 * `text` as children for el(): the first occurrence of each term of `ids` a term button, the
 * rest plain text.
 * @param {string} text @param {string[]} ids @returns {(Node | string)[]}
 */
export function termText(text, ids) {
  /** @type {(Node | string)[]} */
  const out = [];
  let at = 0;
  for (const [s, e, id] of findTerms(text, ids)) {
    if (s > at) out.push(text.slice(at, s));
    out.push(term(id, text.slice(s, e)));
    at = e;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

/** Set `node`'s text to `text`, its terms of `ids` marked. @param {HTMLElement} node @param {string} text @param {string[]} ids */
export function setTermText(node, text, ids) {
  node.replaceChildren(...termText(text, ids));
}

/** Every marked span under `root` made a term button (a term not in the glossary stays text). @param {ParentNode} root */
function upgrade(root) {
  for (const span of /** @type {NodeListOf<HTMLElement>} */ (root.querySelectorAll("span.term[data-term]"))) {
    const b = term(span.dataset.term ?? "", span.textContent ?? "");
    if (b instanceof HTMLElement) span.replaceWith(b);
  }
}

/** The one popover, made once: the term's name and its explanation. */
function popover() {
  let pop = document.getElementById(POP);
  if (!pop) {
    pop = el("div", { id: POP, className: "term-pop", popover: "manual" }, [
      el("p", { className: "term-pop-name" }),
      el("p", { className: "term-pop-text" }),
    ]);
    document.body.append(pop);
  }
  return pop;
}

/** Open the popover at `button`. @param {HTMLElement} button */
function open(button) {
  const t = TERMS.get(button.dataset.term ?? "");
  if (!t) return;
  if (openFor && openFor !== button) collapse(openFor);
  openFor = button;
  const pop = popover();
  /** @type {HTMLElement} */ (pop.querySelector(".term-pop-name")).textContent = t.name;
  /** @type {HTMLElement} */ (pop.querySelector(".term-pop-text")).textContent = t.text;
  button.setAttribute("aria-expanded", "true");
  button.setAttribute("aria-controls", POP);
  if (!pop.matches(":popover-open")) pop.showPopover();
  place(button, pop);
}

/** @param {HTMLElement} button */
function collapse(button) {
  button.setAttribute("aria-expanded", "false");
  button.removeAttribute("aria-controls");
}

function close() {
  if (openFor) collapse(openFor);
  openFor = null;
  const pop = document.getElementById(POP);
  if (pop?.matches(":popover-open")) pop.hidePopover();
}

/** The popover under the button (above it where there is no room below), inside the window. @param {HTMLElement} button @param {HTMLElement} pop */
function place(button, pop) {
  const r = button.getBoundingClientRect();
  const w = pop.offsetWidth;
  const h = pop.offsetHeight;
  const left = Math.max(8, Math.min(r.left, window.innerWidth - w - 8));
  const below = r.bottom + 6;
  const top = below + h > window.innerHeight - 8 && r.top - 6 - h >= 8 ? r.top - 6 - h : below;
  pop.style.left = `${Math.round(left)}px`;
  pop.style.top = `${Math.round(top)}px`;
}

/** The term button an event is about, if any. @param {Event} e @returns {HTMLElement | null} */
const termOf = (e) => /** @type {HTMLElement | null} */ (/** @type {Element} */ (e.target)?.closest?.("button.term"));

function wire() {
  // Opened by the keyboard's focus, a term's first Enter or Space keeps it open (the reader
  // asked to open it, as the docs say); later ones, and a click, toggle it.
  let byFocus = false;
  document.addEventListener("click", (e) => {
    const b = termOf(e);
    if (!b) return;
    const keyed = /** @type {MouseEvent} */ (e).detail === 0;
    if (openFor === b && !(keyed && byFocus)) close();
    else open(b);
    byFocus = false;
  });
  // A press anywhere but on the popover or its term closes it (its term's own click toggles);
  // a press on the popover (to select its words) keeps it, though the term loses the focus.
  let onPopover = false;
  document.addEventListener(
    "pointerdown",
    (e) => {
      const t = /** @type {Node} */ (e.target);
      onPopover = Boolean(document.getElementById(POP)?.contains(t));
      if (openFor && !openFor.contains(t) && !onPopover) close();
    },
    true,
  );
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && openFor) close();
  });
  // The keyboard reaching a term opens it (a click's focus does not: the click does).
  document.addEventListener("focusin", (e) => {
    const b = termOf(e);
    if (b && b.matches(":focus-visible")) {
      open(b);
      byFocus = true;
    }
  });
  document.addEventListener("focusout", (e) => {
    if (openFor && e.target === openFor && !onPopover) close();
  });
  document.addEventListener("keydown", () => (onPopover = false), true);
  const follow = () => {
    if (!openFor) return;
    if (!openFor.isConnected || !openFor.getClientRects().length) return close(); // redrawn or hidden
    place(openFor, popover());
  };
  window.addEventListener("scroll", follow, { capture: true, passive: true });
  window.addEventListener("resize", follow);
  document.getElementById("glossary-open")?.addEventListener("click", () => {
    const d = /** @type {HTMLDialogElement | null} */ (document.getElementById(DIALOG));
    if (d && !d.open) d.showModal();
  });
}

/** The dialog of every term, made once, filled with the terms installed. */
function fillDialog() {
  let d = /** @type {HTMLDialogElement | null} */ (document.getElementById(DIALOG));
  if (!d) {
    const closeButton = el("button", { type: "button", className: "glossary-close", textContent: "Close" });
    d = /** @type {HTMLDialogElement} */ (
      el("dialog", { id: DIALOG, className: "glossary-dialog", "aria-labelledby": `${DIALOG}-h` }, [
        el("div", { className: "glossary-body" }, [
          el("div", { className: "glossary-head" }, [
            el("h2", { id: `${DIALOG}-h`, textContent: "Glossary" }),
            closeButton,
          ]),
          el("p", {
            className: "hint",
            textContent: "The terms the page marks with a dotted underline, each in a sentence or two.",
          }),
          el("dl", { className: "glossary-list" }),
        ]),
      ])
    );
    const dialog = d;
    closeButton.addEventListener("click", () => dialog.close());
    // A click on the backdrop (the dialog itself: its content fills it) closes it.
    d.addEventListener("click", (e) => {
      if (e.target === dialog) dialog.close();
    });
    document.body.append(d);
  }
  /** @type {HTMLElement} */ (d.querySelector(".glossary-list")).replaceChildren(
    ...terms().flatMap((t) => [
      el("dt", { id: `glossary-${t.id}`, textContent: t.name }),
      el("dd", { textContent: t.text }),
    ]),
  );
}
