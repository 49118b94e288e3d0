// Where the chosen model gives no predictions (an encoder, which predicts no next token): one
// button that shows the same text with the model the server offers for them (ModelList's
// predicting: the character model that ships with attnviz), and, when the text has characters
// that model cannot read, which ones, in words. The Predictions card, What pushed this and the
// Knock-out's losses offer it (Generate has its own chooser of the causal models, inputs.js: one
// button on the first screen, where the reader asks for predictions).

import { byId, el } from "../../core/dom.js";
import { runName } from "../../core/runname.js";

/** @typedef {import("../../core/types.js").ModelList} ModelList */
/** @typedef {import("../../core/types.js").ModelInfo} ModelInfo */

/**
 * A model as the page names it: a trained run's by what it is and when it started, or the name
 * its owner gave it (never its id; core/runname.js), one with a title (the shipped model) by its
 * title, any other by its name.
 * @param {ModelInfo} m
 */
export function modelName(m) {
  return m.run ? runName(m.title, m.created, m.named) : m.title || m.name;
}

/**
 * The characters of `text` a character model cannot read, each once, in order of first use
 * ([] for a model of any other tokenizer: the server tells those).
 * @param {ModelInfo} m @param {string} text
 */
export function unreadable(m, text) {
  const have = m.characters;
  return have ? [...new Set(text)].filter((c) => !have.includes(c)) : [];
}

/**
 * Characters as a sentence lists them: “’”, “é” and a line break.
 * @param {string[]} chars
 */
export function listed(chars) {
  const one = (/** @type {string} */ c) => (c === "\n" ? "a line break" : c === " " ? "a space" : `“${c}”`);
  const words = chars.map(one);
  return words.length < 2 ? words.join("") : `${words.slice(0, -1).join(", ")} and ${words[words.length - 1]}`;
}

/**
 * The model offered, or null: none predicts, or it is the one chosen.
 * @param {ModelList | null} models @param {string | null} chosen
 * @returns {ModelInfo | null}
 */
export function offered(models, chosen) {
  const name = models?.predicting;
  if (!name || name === chosen) return null;
  return models?.models.find((m) => m.name === name) ?? null;
}

/**
 * The offer: a button “Show with <model>” that chooses that model in the picker (as a choice
 * made there: the text stays, every view is asked for again), and a sentence when the text has
 * characters it cannot read. null when there is no model to offer.
 * @param {ModelList | null} models @param {string | null} chosen the model in the picker
 * @param {string} text the learner's text
 * @param {string} [focusAfter] the id of the element that takes the focus once the button is
 *   pressed (the card's heading: the button goes when the card is drawn again)
 * @returns {HTMLElement | null}
 */
export function showWith(models, chosen, text, focusAfter) {
  const m = offered(models, chosen);
  if (!m) return null;
  const button = el("button", { type: "button", className: "show-with", textContent: `Show with ${modelName(m)}` });
  button.addEventListener("click", () => {
    if (focusAfter) {
      const to = byId(focusAfter);
      to.tabIndex = -1;
      to.focus({ preventScroll: true });
    }
    chooseModel(m.name);
  });
  const lacking = unreadable(m, text);
  const note = lacking.length
    ? el("span", {
        className: "show-with-lacks",
        textContent:
          ` It cannot read ${listed(lacking)} in this text: it knows only the characters it was trained on, ` +
          "so change those to see its predictions.",
      })
    : el("span", {
        className: "show-with-why",
        textContent: ` It predicts each next ${m.characters ? "character" : "token"} of the same text.`,
      });
  return el("p", { className: "show-with-row" }, [button, note]);
}

/**
 * Choose `name` in the model picker, as if the reader had.
 * @param {string} name
 */
export function chooseModel(name) {
  const picker = /** @type {HTMLSelectElement} */ (byId("s-model"));
  picker.value = name;
  picker.dispatchEvent(new Event("change"));
}
