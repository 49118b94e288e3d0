// The Train tab's trained models: a preset's claims as measured, and each variant with its
// figures, its best induction (or aligned cross-attention) head, and what can be done with it:
// open it in sentence mode, download its folder (an encoder-decoder is asked in its own card);
// in a saved file (no folder URL) a line says these need the live page.
// render(card, data, sel, callbacks): the card holds [data-role=claims] and [data-role=models].

import { runName } from "../../../core/runname.js";
import { el } from "../../../core/dom.js";
import { readable, readableCount } from "../../../core/numbers.js";
import { claimList } from "../claims.js";
import { variantFigures } from "../../../core/trainrun.js";

/** @typedef {import("../../../core/types.js").TrainRun} TrainRun */

/**
 * A variant's best head, named by the run's marks (the server's, those Learn's checks use): an
 * induction (or aligned cross-attention) head when its score reaches the mark, else none, the
 * best's score and the mark said. A file saved before the marks were sent: the best's score.
 * @param {TrainRun["variants"][number]} v @param {TrainRun["marks"]} marks
 */
export function bestHead(v, marks) {
  const scores = v.alignment ?? v.induction ?? null;
  if (!scores) return "";
  const best = Math.max(...scores.flat());
  const k = scores.flat().indexOf(best);
  const head = `L${Math.floor(k / v.arch.heads) + 1} H${(k % v.arch.heads) + 1}`;
  const kind = v.alignment ? "aligned cross-attention head" : "induction head";
  const score = v.alignment ? "cross-attention alignment" : "induction score";
  const mark = marks ? (v.alignment ? marks.alignment : marks.induction) : null;
  if (mark === null) return ` · highest ${score}: ${head}, ${readable(best)}`;
  if (best >= mark) return ` · ${kind} ${head}: ${readable(best)}`;
  return ` · no ${kind}: the best, ${head}, scores ${readable(best)}, under the ${readable(mark)} mark`;
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
  claims.replaceChildren(
    ...(r.claims
      ? claimList("The preset's claims, measured on these models (each found to hold on seeds 0 to 4):", r.claims)
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
        title: "config.json, model.safetensors and tokenizer.json, zipped: attnviz serve --model FOLDER serves it",
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
