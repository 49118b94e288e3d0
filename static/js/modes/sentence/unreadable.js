// When the chosen model cannot read the text (a character model, the shipped one or a trained
// run, has no token for some of its characters): one sentence by the text box says so, and which
// characters, and offers a text it reads (its own example) or the model the views still show.
// The trace is then not asked for (the server would refuse it with a 422), and Generate waits
// for a text the model reads.

import { byId, el } from "../../core/dom.js";
import { chooseModel, listed, modelName, unreadable } from "./showwith.js";

/** @typedef {import("../../core/types.js").ModelList} ModelList */
/** @typedef {import("../../core/types.js").ModelInfo} ModelInfo */

/**
 * Say (or stop saying) that the chosen model cannot read the text.
 * @param {{models: ModelList, info: ModelInfo | null, text: string, shown: string | null,
 *   useText: (text: string) => void}} at models: the server's; info: the chosen model's entry;
 *   text: the reader's; shown: the model whose views the page shows (null before any);
 *   useText: put a text in the box and ask for its trace
 * @returns {boolean} whether the model cannot read the text (then ask for no trace)
 */
export function sayUnreadable({ models, info, text, shown, useText }) {
  const box = byId("s-unreadable");
  const lacking = info ? unreadable(info, text) : [];
  const generate = /** @type {HTMLButtonElement} */ (byId("s-gen-go"));
  generate.disabled = lacking.length > 0;
  generate.title = lacking.length ? "The chosen model cannot read this text: see the line under it" : "";
  if (!info || !lacking.length) {
    box.hidden = true;
    box.replaceChildren();
    return false;
  }
  const reads = (/** @type {string} */ t) => t.trim() !== "" && !unreadable(info, t).length;
  const example = [...(info.examples ?? []), ...models.examples].find(reads);
  const back = shown && shown !== info.name ? models.models.find((m) => m.name === shown) : null;
  const still = back ? `; the views still show ${modelName(back)}` : "";
  /** @type {(string | HTMLElement)[]} */
  const parts = [
    el("span", {
      className: "unreadable-text",
      textContent:
        `${modelName(info)} cannot read ${listed(lacking)} in this text: it knows only the characters ` +
        `it was trained on${still}.`,
    }),
  ];
  const toText = () => /** @type {HTMLElement} */ (byId("s-text")).focus();
  if (example) {
    const b = el("button", {
      type: "button",
      className: "unreadable-example",
      textContent: `Use its example: ${example}`,
    });
    b.addEventListener("click", () => {
      toText();
      useText(example);
    });
    parts.push(b);
  }
  if (back) {
    const b = el("button", { type: "button", className: "unreadable-back", textContent: `Keep ${modelName(back)}` });
    b.addEventListener("click", () => {
      toText();
      chooseModel(back.name);
    });
    parts.push(b);
  }
  box.replaceChildren(...parts);
  box.hidden = false;
  return true;
}
