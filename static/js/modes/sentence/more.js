// "More views": sentence mode opens with the cards a newcomer starts with (the predictions, the
// model view, why this score, the head view); the others (core/feeds.js SENTENCE_MORE) wait
// behind one button each. Which are open is the state's `more`: a link carries it, and this
// browser remembers it (localStorage) for the next visit without a link. A card behind the bar
// is never drawn, nor its parts asked for, while it is closed.

import { byId, el } from "../../core/dom.js";
import { SENTENCE_FEEDS, SENTENCE_MORE } from "../../core/feeds.js";
import { MORE_VIEWS, moreViews } from "../../core/state.js";

/** Where this browser keeps the cards open (localStorage). */
export const MORE_KEY = "attnviz.sentence.more";

/** The cards this browser keeps open (none at a first visit). @returns {string[]} */
export function remembered() {
  try {
    return moreViews(JSON.parse(localStorage.getItem(MORE_KEY) ?? "null")) ?? [];
  } catch {
    return []; // storage refused, or not a list: the first screen
  }
}

/** @param {string[]} names */
function remember(names) {
  try {
    localStorage.setItem(MORE_KEY, JSON.stringify(names));
  } catch {
    // storage refused (a private window's quota): the link still carries them
  }
}

/**
 * The bar and its cards.
 * @param {{app: import("./parts.js").SentenceApp, fixed: boolean, shown: string[],
 *   change: ReturnType<typeof import("./change.js").createChange>["change"],
 *   opened: (name: string) => void, closed: (name: string) => void}} ctx
 *   fixed: a page without a server (a one-file export shows every view it holds, no bar);
 *   shown: the views drawn; change: the state's one writer (change.js: `more` writes the
 *   link); opened, closed: a card
 *   was opened (draw it) or closed by its button
 */
export function createMore(ctx) {
  const { app, fixed, shown } = ctx;
  const bar = byId("more-card");
  const list = byId("more-list");
  /** The cards this page has: a view not drawn here (an export without it) has none. */
  const cards = SENTENCE_MORE.filter(
    ([name, id]) => document.getElementById(id) && (!(name in SENTENCE_FEEDS) || shown.includes(name)),
  );
  if (fixed || !cards.length) bar.hidden = true;
  // One button a card, named as the card is titled (none without a server: no bar).
  list.replaceChildren(
    ...(fixed ? [] : cards).map(([name, id]) =>
      el("button", {
        type: "button",
        className: "more-toggle",
        dataset: { view: name },
        "aria-pressed": "false",
        "aria-controls": id,
        textContent: byId(id).querySelector("h2")?.textContent?.trim() ?? name,
        onclick: () => toggle(name),
      }),
    ),
  );

  /** A card open: a card not behind the bar, every card of a page without a server, else as
   * the state says. @param {string} name */
  const isOpen = (name) => fixed || !MORE_VIEWS.includes(name) || Boolean(app.s.more?.includes(name));

  /** The state's `more` made whole: this browser's when a link said nothing; the Knock-out
   * card whenever heads are knocked out (it says what changed). */
  function resolve() {
    const more = [...(app.s.more ?? remembered())];
    if (app.s.ablate.length && !more.includes("knock")) more.push("knock");
    ctx.change({ more: moreViews(more) }, { quiet: true });
  }

  /** The cards hidden or shown as the state says, and the bar's buttons. */
  function apply() {
    for (const [name, id] of SENTENCE_MORE) {
      const card = document.getElementById(id);
      if (card) card.hidden = !isOpen(name) || !cards.some(([n]) => n === name);
    }
    const knock = document.getElementById("mv-knock-label");
    if (knock && !fixed) knock.hidden = !isOpen("knock"); // the switch is the card's
    for (const b of /** @type {NodeListOf<HTMLElement>} */ (list.querySelectorAll("button.more-toggle")))
      b.setAttribute("aria-pressed", isOpen(b.dataset.view ?? "") ? "true" : "false");
  }

  /** Open or close a card by its button (the focus stays on it). @param {string} name */
  function toggle(name) {
    const open = !isOpen(name);
    const now = new Set(app.s.more ?? []);
    if (open) now.add(name);
    else now.delete(name);
    ctx.change({ more: MORE_VIEWS.filter((n) => now.has(n)) }); // (the link)
    remember(app.s.more ?? []);
    apply();
    if (open) ctx.opened(name);
    else ctx.closed(name);
  }

  return { resolve, apply, isOpen };
}
