// The trajectories card: the picked tokens' hidden states through the layers, projected to 2-D
// or 3-D (views/trajectories.js), with its token chips and dimension switch.

import { byId, el } from "../../../core/dom.js";
import { shownToken, spokenToken } from "../../../core/tokens.js";
import * as trajectories from "../../../views/trajectories.js";

/** @typedef {import("../cards.js").CardContext} CardContext */
/** @typedef {import("../../../core/types.js").Compact} Compact */

/**
 * Toggle buttons for the tokens `shown` (original indices); `picked` null = all on.
 * @param {HTMLElement} box @param {string[]} tokens @param {number[]} shown
 * @param {number[] | null} picked
 * @param {(picked: number[] | null) => void} onChange picked list, or null when all are on
 */
function fillTokenChips(box, tokens, shown, picked, onChange) {
  const key = shown.map((i) => `${i}:${tokens[i]}`).join("\u0000");
  if (box.dataset.key !== key) {
    box.dataset.key = key;
    box.replaceChildren(
      ...shown.map((i) =>
        el("button", {
          type: "button",
          className: "token-chip",
          dataset: { index: String(i) },
          textContent: shownToken(tokens[i]),
          "aria-label": spokenToken(tokens[i]),
        }),
      ),
    );
  }
  box.onclick = (e) => {
    const b = /** @type {Element} */ (e.target).closest("button.token-chip");
    if (!b) return;
    b.setAttribute("aria-pressed", b.getAttribute("aria-pressed") === "true" ? "false" : "true");
    const on = [...box.querySelectorAll('button.token-chip[aria-pressed="true"]')].map((c) =>
      Number(/** @type {HTMLElement} */ (c).dataset.index),
    );
    onChange(on.length === shown.length ? null : on);
  };
  for (const b of /** @type {NodeListOf<HTMLElement>} */ (box.querySelectorAll("button.token-chip"))) {
    const on = !picked || picked.includes(Number(b.dataset.index));
    b.setAttribute("aria-pressed", on ? "true" : "false");
  }
}

/** Draw the card. @param {CardContext} ctx */
export async function draw({ app, p, ticket, pickQuery, change }) {
  const current = ticket("traj");
  const meta = /** @type {Compact} */ (app.first).meta;
  const s = app.s;
  /** @type {HTMLInputElement} */ (byId(s.dims === 2 ? "traj-2d" : "traj-3d")).checked = true;
  const part = await p.projectionPart();
  if (!current()) return;
  // The rows under the token options (the server's): special tokens left out, a word's
  // point the mean of its pieces'. A row stands for its first token (its original index).
  const tv = part.meta.token_view;
  const groups = tv ? tv.groups : meta.tokens.map((_, i) => [i]);
  const labels = tv ? tv.labels : meta.tokens;
  const heads = groups.map((g) => g[0]);
  const rows = trajectories.defaultRows(groups, s.picked, p.queryIndex());
  /** @type {string[]} */
  const chipLabels = [];
  heads.forEach((i, r) => {
    chipLabels[i] = labels[r];
  });
  fillTokenChips(
    byId("traj-tokens"),
    chipLabels,
    heads,
    rows.map((r) => heads[r]),
    (picked) => {
      change({ picked: picked ?? "all" });
    },
  );
  const proj = part.meta.projection;
  const projection = proj
    ? {
        components: proj.components,
        coords: part.arrays["projection.coords"],
        ratio: Array.from(part.arrays["projection.explained_variance_ratio"].data),
      }
    : null;
  return trajectories.render(
    byId("traj-view"),
    {
      tokens: labels,
      positions: heads,
      projection,
      unit: s.mergeWords ? "words" : "tokens",
      defaulted: s.picked === null,
    },
    { tokens: rows, dims: s.dims },
    { onPick: (r) => pickQuery(heads[r]) },
  );
}

/** The card's controls, wired once. @param {CardContext} ctx */
export function wire({ change }) {
  for (const input of /** @type {NodeListOf<HTMLInputElement>} */ (
    document.querySelectorAll('input[name="traj-dims"]')
  )) {
    input.addEventListener("change", () => {
      change({ dims: Number(input.value) === 2 ? 2 : 3 });
    });
  }
  byId("traj-all").addEventListener("click", () => {
    change({ picked: "all" });
  });
  byId("traj-none").addEventListener("click", () => {
    change({ picked: [] });
  });
}
