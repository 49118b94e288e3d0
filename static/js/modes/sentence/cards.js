// The cards of sentence mode's views, one module each under cards/: each card's chrome (its
// pickers, captions and notes) and the view module that draws into it, from the parts the view
// asks for (parts.js), and the card's own controls (pickers, play, PNG, SVG and CSV downloads).
// Every card module exports draw(ctx), the view's draw (it settles when its view is drawn), and
// may export wire(ctx), its controls, wired once. The Knock-out, Head atlas, How heads compose
// and Many texts cards are their own controllers (cards/knockout.js, cards/atlas.js,
// cards/composition.js, cards/corpus.js).

import * as gen from "./cards/gen.js";
import * as head from "./cards/head.js";
import * as lens from "./cards/lens.js";
import * as model from "./cards/model.js";
import * as picture from "./cards/picture.js";
import * as qk from "./cards/qk.js";
import * as traj from "./cards/traj.js";
import * as why from "./cards/why.js";

/**
 * What a card is given.
 * @typedef {{app: import("./parts.js").SentenceApp, p: ReturnType<typeof import("./parts.js").createParts>,
 *   ticket: (name: string) => () => boolean, chooseHead: (layer: number, head: number) => void,
 *   pickCell?: (layer: number, head: number) => void,
 *   pickQuery: (index: number) => void, pickPair?: (query: number, key: number) => void,
 *   atlas?: () => import("../../core/types.js").Atlas | null,
 *   change: ReturnType<typeof import("./change.js").createChange>["change"],
 *   showCount: (n: number, tv?: import("../../core/types.js").TokenViewMeta) => void,
 *   setError: (message: string | null) => void}} CardContext
 *   ticket(name)(): the draw begun is still the newest of its view and trace; pickCell: a model
 *   view cell clicked (chooseHead by default; the knock-out switch's toggle); pickPair: a cell
 *   of the chosen head's large heatmap picked, its query and key (Why this score explains it;
 *   absent where that card is not drawn); atlas: the head atlas when scored (the heads' roles);
 *   change: the one way a card changes the state (change.js: it redraws what the keys feed);
 *   setError: the error line (a download that failed says why there)
 */

/**
 * A card: its view's draw, and its controls.
 * @typedef {{draw: (ctx: CardContext) => Promise<unknown>, wire?: (ctx: CardContext) => void}} Card
 */

/** The cards by their view's name (SENTENCE_FEEDS'), in the order they are drawn. */
const CARDS = /** @type {const} */ ({ lens, model, picture, why, gen, head, qk, traj });

/**
 * The views' draws by name (each settles when its view is drawn), and the cards' controls.
 * @param {CardContext} ctx
 * @returns {Record<keyof typeof CARDS, () => Promise<unknown>>}
 */
export function createCards(ctx) {
  const views = /** @type {Record<keyof typeof CARDS, () => Promise<unknown>>} */ ({});
  for (const [name, card] of /** @type {[keyof typeof CARDS, Card][]} */ (Object.entries(CARDS))) {
    card.wire?.(ctx);
    views[name] = () => card.draw(ctx);
  }
  return views;
}
