// The Train tab's trained models: a preset's claims as measured, and each variant with its
// figures, its best induction (or aligned cross-attention) head, and what can be done with it:
// open it in sentence mode, download its folder (an encoder-decoder is asked in its own card);
// in a saved file (no folder URL) a line says these need the live page.
// render(card, data, sel, callbacks): the card holds [data-role=claims] and [data-role=models].

import { runName } from "../../../core/runname.js";
import { el } from "../../../core/dom.js";
import { readable, readableAgainst, readableCount, readableWeight } from "../../../core/numbers.js";
import { claimList } from "../claims.js";
import { variantFigures } from "../../../core/trainrun.js";

/** @typedef {import("../../../core/types.js").TrainRun} TrainRun */

/**
 * A variant's best head, named by the run's marks (the server's, those Learn's checks use): an
 * induction (or aligned cross-attention) head when its score reaches the mark, else none, the
 * best's score and the mark said. An induction head is looked for from the first layer one can
 * be in (`marks.induction_from`, the layer the positions preset's claims measure, so the card
 * and a claim name the same head); an earlier layer's head that scores more is named too, and
 * why it is none. A file saved before the marks were sent: the best's score. A head is named in
 * words, "layer 2, head 1" (issue 41: "L6 H2" said nothing to a newcomer).
 * @param {TrainRun["variants"][number]} v @param {TrainRun["marks"]} marks
 */
export function bestHead(v, marks) {
  const scores = v.alignment ?? v.induction ?? null;
  if (!scores) return "";
  const H = v.arch.heads;
  /** The best head of layers `from` on (0-based): its score and its name. @param {number} from */
  const top = (from) => {
    const rest = scores.slice(from).flat();
    const score = Math.max(...rest);
    const k = rest.indexOf(score) + from * H;
    return { score, head: `layer ${Math.floor(k / H) + 1}, head ${(k % H) + 1}` };
  };
  const kind = v.alignment ? "aligned cross-attention head" : "induction head";
  const score = v.alignment ? "cross-attention alignment" : "induction score";
  const mark = marks ? (v.alignment ? marks.alignment : marks.induction) : null;
  const all = top(0);
  if (mark === null) return ` · highest ${score}: ${readableWeight(all.score)} (${all.head})`;
  const from = v.alignment ? 0 : (marks?.induction_from ?? 0);
  const early = from === 1 ? "layer 1" : `layers 1 to ${from}`;
  const none = `a head of ${early} cannot be one (it needs an earlier layer's head to mark the letter before each position)`;
  if (from >= scores.length)
    return ` · no ${kind}: ${none}, and this model has ${scores.length} layer${scores.length > 1 ? "s" : ""}`;
  const best = top(from);
  const which =
    from === 0
      ? "the best"
      : `the best ${scores.length === from + 1 ? `layer-${from + 1} head` : `head of layers ${from + 1} to ${scores.length}`}`;
  const said =
    best.score >= mark
      ? ` · ${kind} (${best.head}): ${readableWeight(best.score)}`
      : ` · no ${kind}: ${which} (${best.head}) scores ${readableAgainst(best.score, mark, readableWeight)}, under the ${readable(mark)} mark`;
  if (all.score <= best.score) return said;
  return `${said}; another head (${all.head}) scores more, ${readableWeight(all.score)}, but ${none}`;
}

/**
 * @param {HTMLElement} card
 * @param {{run: TrainRun, folder: ((variant: number) => string) | null}} data folder: the URL
 *   of a finished variant's model folder (zipped); null in a saved file, which holds no model
 * @param {{}} sel
 * @param {{onOpen: (model: string, text: string, query: number) => void}} callbacks onOpen:
 *   show a trained model in sentence mode on a text, the query on a token: the probe's (the
 *   server's: one whose row shows what the task teaches, not the first token)
 */
export function render(card, data, sel, callbacks) {
  const r = data.run;
  const claims = /** @type {HTMLElement} */ (card.querySelector("[data-role=claims]"));
  claims.hidden = !r.claims;
  // A run made shorter than its preset (a server capped below its steps) says so first.
  const shorter =
    r.preset_steps && r.steps < r.preset_steps
      ? `These models trained ${readableCount(r.steps)} steps each, fewer than the preset's ` +
        `${readableCount(r.preset_steps)} (this server's cap), and a claim may not hold on a shorter run. `
      : "";
  claims.replaceChildren(
    ...(r.claims
      ? claimList(
          `${shorter}The preset's claims, measured on these models (each found to hold on seeds 0 to 4):`,
          r.claims,
        )
      : []),
  );
  const seq2seq = Boolean(r.probe.source);
  const folder = data.folder;
  /** @type {HTMLElement} */ (card.querySelector("[data-role=models]")).replaceChildren(
    ...r.variants.map((v, i) => {
      const where = bestHead(v, r.marks);
      // Named by what it is (the run's words, its variant's label) and when its run started;
      // its name in sentence mode (an id), never shown, is the row's data.
      const named = runName(r.title, r.created, r.named);
      const name = el("span", {
        className: "t-model-name",
        dataset: { model: v.model ?? "" },
        textContent: v.label ? `${named}, ${v.label}` : named,
      });
      const figures = el("span", {
        className: "dim",
        textContent:
          ` ${v.label ? `${v.label} · ` : ""}` +
          (v.model_step != null ? `interrupted · its model as of step ${v.model_step} · ` : `${v.state} · `) +
          `${variantFigures(v)} · ${readableCount(v.params)} parameters${where}`,
      });
      if (!folder) {
        return el("div", { className: "t-model" }, [
          name,
          figures,
          el("span", {
            className: "hint t-model-why",
            textContent:
              `${seq2seq ? "Asking it" : "Opening it in sentence mode or downloading its folder"} takes ` +
              "the live page: this file holds the run, not the model.",
          }),
        ]);
      }
      const open = el("button", { type: "button", textContent: "Open in sentence mode", disabled: !v.model });
      open.addEventListener("click", () => v.model && callbacks.onOpen(v.model, r.probe.text, r.probe.query));
      const save = el("a", {
        className: "button",
        textContent: "Download folder",
        title:
          "config.json, model.safetensors and tokenizer.json, zipped: a model folder attnviz can serve (see the Models page of its documentation)",
        href: folder(i),
        download: "",
      });
      save.hidden = !v.model;
      // Where an encoder-decoder's buttons would be, why it has none.
      const why = el("span", {
        className: "hint t-model-why",
        textContent:
          "Not opened in sentence mode " +
          "nor saved as a folder: both take a model that reads one text, and an encoder-decoder reads " +
          "a source and writes its answer. Ask it above.",
      });
      return el("div", { className: "t-model" }, [name, figures, ...(seq2seq ? [why] : [open, save])]);
    }),
  );
}
