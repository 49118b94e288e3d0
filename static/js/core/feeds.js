// Which piece of state feeds which view: a change of a key redraws exactly the views listed for
// it, in every mode. Pure: the Node tests check that every state key feeds a view and that
// every view named here exists in its controller.

/** The toy lab: keys of state.view (ToyView) -> views of modes/toy/index.js. */
export const TOY_FEEDS = {
  attention: ["layer", "head", "measure"],
  vectors: ["vlayer", "trails"],
  beforeAfter: ["vlayer"],
  distances: ["a", "b", "vlayer"],
};

/** Sentence mode: keys of the sentence state (SentenceState) -> views of modes/sentence/ (cards.js, cards/). The
 * model and the text feed every view through a new trace. */
export const SENTENCE_FEEDS = {
  // the large heatmap frames the query's row and marks the key's cell
  model: ["layer", "head", "query", "key", "hideSpecial", "mergeWords", "peak", "aggregate", "measure", "foldImages"],
  picture: ["layer", "head", "query"], // Attention on the picture: the query's row over an image's tokens
  why: ["layer", "head", "query", "key"], // Why this score: the head's score of the key at the query
  gen: ["layer", "head", "step"],
  head: ["layer", "heads", "query", "hideSpecial", "mergeWords", "measure", "foldImages"],
  qk: ["layer", "head", "query", "allKeys", "hideSpecial", "mergeWords"],
  traj: ["picked", "dims", "hideSpecial", "mergeWords", "query"], // a long text starts at the query
  lens: ["query", "pushed"], // the predictions after the query, the logit lens around it, what pushed one
  knock: ["diffLayer", "diffHead"], // ablate, ablateMode, ablateSource: a new trace
};

/** Sentence mode's keys that feed every view through a new trace (modes/sentence/change.js
 * asks for one when any of them changes). The state's other keys feed the views above, but for
 * `more` (which cards More views opens), which only the link carries. */
export const SENTENCE_TRACE = ["model", "text", "images", "generate", "ablate", "ablateMode", "ablateSource"];

/** Sentence mode's cards behind "More views" (the others are where a newcomer starts), in the
 * order the page shows them: a view's name (SENTENCE_FEEDS') or a card that is its own
 * controller, and its card's id. Links and this browser remember which are open
 * (SentenceState.more). */
export const SENTENCE_MORE = /** @type {const} */ ([
  ["qk", "qk-card"],
  ["knock", "knock-card"],
  ["traj", "traj-card"],
  ["atlas", "atlas-card"],
  ["comp", "comp-card"],
  ["corpus", "corpus-card"],
]);

/** Sentence mode's "Many texts" card: keys of its state (modes/sentence/cards/corpus.js
 * defaultCorpusState) -> its views, the 2-D map of one head's queries and keys (views/corpus.js)
 * and the heads' clusters (views/headclusters.js). A change of head, layer, projection or
 * clusters asks the server again at once; a new set (source, upload, max_tokens, seed) waits for
 * the card's button. */
export const CORPUS_FEEDS = {
  corpus: ["source", "upload", "max_tokens", "seed", "layer", "head", "projection"],
  headclusters: ["source", "upload", "max_tokens", "seed", "layer", "head", "clusters"], // the head shown is marked
};

/** The "Many texts" card's keys that make a new set: a change puts the card's button back. */
export const CORPUS_SET = ["source", "upload", "max_tokens", "seed"];

/** Train mode: keys of the view state (TrainView) -> views of modes/train/index.js, and "title"
 * (the run renamed: the views that name it). A run's events (its steps, checkpoints, end) redraw
 * the views they change. */
export const TRAIN_FEEDS = {
  progress: ["title"],
  loss: ["variant"],
  grads: ["variant"],
  heads: ["variant", "layer", "head", "checkpoint", "attention", "query"],
  why: ["variant", "layer", "head", "checkpoint", "query", "key"],
  models: ["title"],
  decoded: ["layer", "head", "attention"],
};

/** Learn mode: the guide's state (modes/learn/index.js) -> what its change redraws or keeps:
 * "keep" the progress in this browser (localStorage), "guide" the guide drawn again
 * (guide.render reads every key listed for it), "outline" the lab's cards the step is about
 * marked. The controller's own bookkeeping (which question is in flight, the timers, what each
 * run was first seen in) is read by no view and is not listed. */
export const LEARN_FEEDS = {
  keep: ["progress"],
  guide: ["steps", "progress", "n", "answer", "problem", "carried", "tried"],
  outline: ["steps", "n", "active"],
};

/**
 * The views fed by any of `keys`, in the table's order.
 * @param {Record<string, string[]>} feeds
 * @param {string[]} keys
 * @returns {string[]}
 */
export function viewsFed(feeds, keys) {
  return Object.keys(feeds).filter((view) => feeds[view].some((k) => keys.includes(k)));
}
