// The input card of sentence mode: the model picker and its description, the text, the
// examples, the token options and generation; put from the state (renderSentenceInputs), and
// their events wired once (wireInputs).

import { byId, el, fillOptions } from "../../core/dom.js";
import { setTermText } from "../../core/glossary.js";
import { modelName } from "./showwith.js";

/** @typedef {import("../../core/types.js").SentenceState} SentenceState */
/** @typedef {import("../../core/types.js").ModelList} ModelList */
/** @typedef {import("../../core/types.js").ModelInfo} ModelInfo */

/**
 * Put the models, the sentence state and the examples into the input card.
 * @param {ModelList} models the server's models (fetchModels)
 * @param {SentenceState} s
 * @param {ModelInfo | null} info the chosen model's entry, or null
 * @param {(text: string) => void} onExample
 * @param {(head: import("../../core/types.js").ExampleHead) => void} onPointer *Show this head*
 *   pressed: open the head, on its query's row
 */
export function renderSentenceInputs(models, s, info, onExample, onPointer) {
  const select = /** @type {HTMLSelectElement} */ (byId("s-model"));
  // A trained run's model by what it is and when its run started, never its id.
  // The shipped model by its title (showwith.js modelName).
  const named = modelName;
  fillOptions(
    select,
    models.models.map((m) => [m.name, named(m)]),
    s.model ?? "",
  );
  const through = { transformers: " · through transformers", ndif: " · on NDIF" };
  const bridged = (info?.backend && through[/** @type {"transformers" | "ndif"} */ (info.backend)]) || "";
  const family = info?.run
    ? `trained here (${named(info)})`
    : info?.title
      ? `shipped with attnviz${info.characters ? " · one token per character" : ""}`
      : `${info?.family.toUpperCase()}${bridged}`;
  setTermText(
    byId("s-model-info"),
    info
      ? `${family} · ${info.layers} layers × ` +
          `${info.heads} heads · d_model ${info.d_model} · up to ${info.max_tokens} tokens · ` +
          `${info.backend === "ndif" && info.placement ? info.placement.embed : info.device}`
      : "",
    ["bert", "d-model"],
  );
  const text = /** @type {HTMLTextAreaElement} */ (byId("s-text"));
  if (text.value !== s.text) text.value = s.text;
  text.maxLength = models.max_text_chars;
  /** @type {HTMLInputElement} */ (byId("s-hide-special")).checked = s.hideSpecial;
  /** @type {HTMLInputElement} */ (byId("s-merge-words")).checked = s.mergeWords;
  /** @type {HTMLInputElement} */ (byId("mv-peak")).checked = s.peak;
  /** @type {HTMLSelectElement} */ (byId("mv-aggregate")).value = s.aggregate;
  // Generation: for causal models, with the server's cap on the steps.
  byId("s-gen-row").hidden = !info?.causal;
  // An encoder does not write: say so, and offer the server's models that do, to choose from.
  const causal = models.models.filter((m) => m.causal);
  byId("s-gen-note-box").hidden = !info || info.causal;
  setTermText(
    byId("s-gen-note"),
    !info || info.causal
      ? ""
      : `Generate needs a causal model, one that predicts each ` +
          `next token from the tokens before it; ${named(info)} is an encoder, which reads the whole text at once. ` +
          (causal.length
            ? "Choose one to generate with:"
            : "This server has no causal model: train one in the Train tab, or ask this server's host to add one."),
    ["causal", "encoder"],
  );
  byId("s-gen-causal-box").hidden = !causal.length;
  fillOptions(
    /** @type {HTMLSelectElement} */ (byId("s-gen-causal")),
    [["", "choose…"], ...causal.map((m) => /** @type {[string, string]} */ ([m.name, named(m)]))],
    "",
  );
  const steps = /** @type {HTMLInputElement} */ (byId("s-gen-steps"));
  steps.max = String(models.max_generate);
  if (s.generate) {
    steps.value = String(s.generate.steps);
    /** @type {HTMLInputElement} */ (byId("s-gen-temp")).value = String(s.generate.temperature);
    /** @type {HTMLInputElement} */ (byId("s-gen-seed")).value = String(s.generate.seed);
  }
  byId("s-gen-clear").hidden = !s.generate;
  const none = !models.models.length;
  const install = byId("s-install");
  install.hidden = !none;
  // In words, the server's (a learner never reads the host's command).
  install.textContent = none ? models.install : "";
  for (const id of ["s-text", "s-model", "s-hide-special", "s-merge-words"]) {
    /** @type {HTMLInputElement} */ (byId(id)).disabled = none;
  }
  // The generation card shows itself when a trace has generated tokens.
  for (const card of /** @type {NodeListOf<HTMLElement>} */ (
    document.querySelectorAll("#sentence-mode > section.card:not(.sentence-input):not(#gen-card)")
  )) {
    card.hidden = none;
  }
  const box = byId("s-examples");
  /** @type {string[]} */
  const examples = info?.examples ?? models.examples;
  if (box.dataset.examples !== JSON.stringify(examples)) {
    box.dataset.examples = JSON.stringify(examples);
    box.replaceChildren(
      ...examples.map((example) => {
        const b = el("button", { type: "button", className: "example", textContent: example, disabled: none });
        b.addEventListener("click", () => {
          onExample(example);
          showPointer(models, s.model, example, onPointer);
        });
        return b;
      }),
    );
  }
  text.oninput = () => {
    showPointer(models, s.model, text.value, onPointer);
  };
  showPointer(models, s.model, s.text, onPointer);
}

/**
 * Under the examples: the head the server measured for this model and text, if there is one
 * ("it" -> "animal" in MiniLM), with a button that opens it in the views, on the row it names.
 * @param {ModelList} models the server's models (fetchModels) @param {string | null} model @param {string} text
 * @param {(head: import("../../core/types.js").ExampleHead) => void} onPointer
 */
function showPointer(models, model, text, onPointer) {
  /** @type {import("../../core/types.js").ExampleHead | undefined} */
  const p = (models.example_heads || []).find((e) => e.model === model && e.text === text);
  byId("s-pointer").hidden = !p;
  setTermText(byId("s-pointer-text"), p ? p.note : "", ["previous-token-head"]);
  byId("s-pointer-go").onclick = () => {
    if (p) onPointer(p);
  };
}

/**
 * The index of the token `word` among a trace's tokens (the first one spelled so, whatever
 * the case or a word piece's marks), or -1.
 * @param {string[]} tokens @param {string} word
 */
export function tokenIndex(tokens, word) {
  const bare = (/** @type {string} */ t) =>
    t
      .replace(/^(##|Ġ|▁)/, "")
      .trim()
      .toLowerCase();
  return tokens.findIndex((t) => bare(t) === bare(word));
}

/**
 * Wire the input card's events (once).
 * @param {{app: import("./parts.js").SentenceApp, infoOf: (name: string) => ModelInfo | null,
 *   renderInputs: () => void,
 *   change: ReturnType<typeof import("./change.js").createChange>["change"],
 *   setError: (message: string | null) => void}} ctx change: the state changed (change.js: a
 *   model, text or generation asks for a trace, after the default debounce unless a delay is
 *   given; a token option redraws the views)
 */
export function wireInputs(ctx) {
  const { app, infoOf, renderInputs, change } = ctx;
  /** Generate: read the three inputs (an error names the one out of range), then a new trace. */
  function generate() {
    const num = (
      /** @type {string} */ id,
      /** @type {string} */ name,
      /** @type {boolean} */ int,
      /** @type {number} */ lo,
      /** @type {number} */ hi,
    ) => {
      const v = Number(/** @type {HTMLInputElement} */ (byId(id)).value);
      if (!Number.isFinite(v) || (int && !Number.isInteger(v)) || v < lo || v > hi) {
        throw new Error(`generate.${name}: must be ${int ? "a whole number" : "a number"} from ${lo} to ${hi}`);
      }
      return v;
    };
    let generate;
    try {
      generate = {
        steps: num("s-gen-steps", "steps", true, 1, /** @type {ModelList} */ (app.models).max_generate),
        temperature: num("s-gen-temp", "temperature", false, 0, 2),
        seed: num("s-gen-seed", "seed", true, 0, 2 ** 31 - 1),
      };
    } catch (err) {
      ctx.setError(/** @type {Error} */ (err).message);
      return;
    }
    change({ generate, step: null }, { delay: 0 });
    renderInputs();
  }
  byId("s-gen-go").addEventListener("click", generate);
  byId("s-gen-clear").addEventListener("click", () => {
    change({ generate: null, step: null }, { delay: 0 });
    renderInputs();
  });

  byId("s-text").addEventListener("input", (e) => {
    change({ text: /** @type {HTMLTextAreaElement} */ (e.target).value });
  });
  // A causal model chosen under Generate: the model picker's choice, as if made there.
  byId("s-gen-causal").addEventListener("change", (e) => {
    const name = /** @type {HTMLSelectElement} */ (e.target).value;
    if (!name) return;
    const picker = /** @type {HTMLSelectElement} */ (byId("s-model"));
    picker.value = name;
    picker.dispatchEvent(new Event("change"));
  });
  byId("s-model").addEventListener("change", (e) => {
    const model = /** @type {HTMLSelectElement} */ (e.target).value;
    const info = infoOf(model);
    // Token positions belong to the old model's tokens: the new model opens on its own
    // default query (as a first load does), its winning key and its default trajectories;
    // an encoder does not write.
    change(
      { model, query: null, key: null, picked: null, ...(info?.causal ? {} : { generate: null }) },
      { delay: 0, fit: info ? [info.layers, info.heads] : undefined },
    );
    renderInputs();
  });
  /** @param {string} id @param {"hideSpecial" | "mergeWords"} key */
  const option = (id, key) =>
    byId(id).addEventListener("change", (e) => {
      change({ [key]: /** @type {HTMLInputElement} */ (e.target).checked });
    });
  option("s-hide-special", "hideSpecial");
  option("s-merge-words", "mergeWords");
}
