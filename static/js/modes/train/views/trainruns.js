// The caller's runs a server keeps (its own, those it opened by their link, those the operator
// shared), listed under the Train tab's trained models, each with a button that opens it.
// render(container, data, sel, callbacks).

import { runName } from "../../../core/runname.js";
import { el } from "../../../core/dom.js";
import { readable } from "../../../core/numbers.js";
import { inLine } from "../../../core/trainrun.js";

/**
 * The runs this server keeps (fetchRuns in core/api.js), newest first: each one's task, state, and its
 * variants' steps and held-out loss, with a button to open it; the run open is marked. A preset is
 * named by its title (the training options' presets), never by its id.
 * @param {HTMLElement} container
 * @param {{runs: import("../../../core/types.js").TrainRunSummary[] | null,
 *   presets?: {id: string, title: string}[]}} data runs null: not read (yet); presets: the
 *   training options' (none yet: a preset is "an ablation preset")
 * @param {{open: string | null}} sel the id of the run open
 * @param {{onOpen: (id: string) => void}} callbacks
 */
export function render(container, data, sel, callbacks) {
  const runs = data.runs;
  if (!runs) {
    container.replaceChildren();
    return;
  }
  const item = (/** @type {import("../../../core/types.js").TrainRunSummary} */ r) => {
    // A preset's run is named by its title already (the server's); renamed, the title is said here.
    const preset = r.preset ? (data.presets ?? []).find((p) => p.id === r.preset) : undefined;
    const what = r.preset
      ? r.named && preset
        ? `ablation “${preset.title}”`
        : "ablation"
      : r.compare
        ? `${r.task}, compare ${r.compare}`
        : r.task;
    const figures = r.variants.map(
      (v) =>
        `${v.label ? `${v.label}: ` : ""}${v.steps.toLocaleString("en")} / ` +
        `${r.steps.toLocaleString("en")} steps${v.heldout === null ? "" : `, held-out ${readable(v.heldout)}`}`,
    );
    const whose = r.yours ? "yours" : r.shared ? "shared" : r.can_cancel ? "" : "opened by link";
    const open = r.id === sel.open;
    const button = open
      ? el("span", { className: "dim", textContent: "shown above" })
      : el("button", {
          type: "button",
          textContent: "Open",
          "aria-label": `Open: ${runName(r.title, r.created, r.named)}`,
        });
    if (!open) button.addEventListener("click", () => callbacks.onOpen(r.id));
    return el("li", { className: `t-run-item${open ? " open" : ""}`, dataset: { run: r.id, state: r.state } }, [
      el("span", { className: "t-model-name", textContent: runName(r.title, r.created, r.named) }),
      el("span", {
        className: "dim",
        textContent:
          `${whose ? `${whose} · ` : ""}${what} · ` +
          `${r.state === "queued" ? `queued, ${inLine(r.place, null)}` : r.state} · ${figures.join(" · ")}`,
      }),
      button,
    ]);
  };
  container.replaceChildren(
    el("h3", { textContent: "Runs on this server" }),
    runs.length
      ? el("ul", {}, runs.map(item))
      : el("p", {
          className: "hint",
          textContent:
            "None yet. A run you train, or open by its link, is listed here while the server keeps it; " +
            "no one else's.",
        }),
  );
}
