// The generation card: a causal model's written tokens, one step's attention row at a time
// (views/genview.js), with its layer and head pickers, the step slider and play.

import { sub } from "../../../core/compact.js";
import { byId, fillIndexSelect } from "../../../core/dom.js";
import { shownToken } from "../../../core/tokens.js";
import * as genview from "../../../views/genview.js";

/** @typedef {import("../cards.js").CardContext} CardContext */
/** @typedef {import("../../../core/types.js").Compact} Compact */

/** Draw the card (hidden for a trace that wrote nothing). @param {CardContext} ctx */
export async function draw({ app, p, ticket }) {
  const current = ticket("gen");
  const meta = /** @type {Compact} */ (app.first).meta;
  const g = meta.generated;
  const card = byId("gen-card");
  card.hidden = !g;
  // What it wrote, under the text where the learner pressed Generate; the card, one click away.
  // Drawn as its tokens are (the server's text keeps a byte of no whole character as "<0x90>",
  // never "�"; here spaces at its ends, newlines and control bytes are made visible).
  byId("s-gen-wrote").hidden = !g;
  byId("s-gen-wrote-text").textContent = g
    ? `The model wrote: “${shownToken(g.text)}”${g.stopped ? " (then its end-of-text token)" : ""}.`
    : "";
  if (!g) return;
  fillIndexSelect(/** @type {HTMLSelectElement} */ (byId("gen-layer")), meta.layers, "layer", app.s.layer);
  fillIndexSelect(/** @type {HTMLSelectElement} */ (byId("gen-head")), meta.heads, "head", app.s.head);
  const step = p.genStep();
  const slider = /** @type {HTMLInputElement} */ (byId("gen-step"));
  slider.max = String(g.steps);
  slider.value = String(step);
  byId("gen-step-out").textContent =
    `step ${step} / ${g.steps}` + (g.stopped ? " · then it wrote its end-of-text token and stopped" : "");
  const part = await p.genPart();
  if (!current()) return;
  const row = sub(part.arrays.attentions, 0, 0, 0); // [n]: the row, keys after it masked (0)
  genview.render(
    byId("gen-view"),
    { tokens: meta.tokens, start: g.start, row },
    { layer: app.s.layer, head: app.s.head, step },
  );
}

/** The card's controls, wired once. @param {CardContext} ctx */
export function wire({ app, p, change }) {
  byId("s-gen-wrote-go").addEventListener("click", () => {
    const card = byId("gen-card");
    card.scrollIntoView({ block: "start" });
    const h = /** @type {HTMLElement} */ (card.querySelector("h2"));
    if (!h.hasAttribute("tabindex")) h.tabIndex = -1;
    h.focus({ preventScroll: true });
  });
  byId("gen-step").addEventListener("input", (e) => {
    change({ step: Number(/** @type {HTMLInputElement} */ (e.target).value) });
  });
  for (const [id, key] of /** @type {const} */ ([
    ["gen-layer", "layer"],
    ["gen-head", "head"],
  ])) {
    byId(id).addEventListener("change", (e) => {
      change({ [key]: Number(/** @type {HTMLSelectElement} */ (e.target).value) });
    });
  }
  /** @type {ReturnType<typeof setInterval> | undefined} */
  let player;
  /** Play the generation steps from the first (or on from the one shown), one every 700 ms. */
  function playGeneration() {
    const button = byId("gen-play");
    const stop = () => {
      clearInterval(player);
      player = undefined;
      button.setAttribute("aria-pressed", "false");
      button.textContent = "▶ play";
    };
    if (player) return stop();
    const g = app.first?.meta.generated;
    if (!g) return;
    if (p.genStep() >= g.steps) change({ step: 1 });
    button.setAttribute("aria-pressed", "true");
    button.textContent = "❚❚ pause";
    player = setInterval(() => {
      const now = app.first?.meta.generated;
      if (!now || p.genStep() >= now.steps) return stop();
      change({ step: p.genStep() + 1 });
    }, 700);
  }
  byId("gen-play").addEventListener("click", () => playGeneration());
}
