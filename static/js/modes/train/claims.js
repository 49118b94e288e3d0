// A run's measured claims as a learner reads them: the checks, each a sentence marked as it
// holds or not, then the observations (times: shown, never part of a verdict). Shared by the
// trained models' card (a preset's claims) and the recurrent comparison's card.

import { el } from "../../core/dom.js";
import { readableProse } from "../../core/numbers.js";

/** @typedef {import("../../core/types.js").TrainClaim} TrainClaim */

/** A claim's sentence (a run kept before sentences were: its short form and value). @param {TrainClaim} c */
const said = (c) => c.says || `${c.claim}: ${readableProse(c.value)}`;

/**
 * The claims' parts: an introduction, the checks, and the observations when there are any.
 * @param {string} intro what the checks are (a sentence)
 * @param {TrainClaim[]} claims
 * @returns {HTMLElement[]}
 */
export function claimList(intro, claims) {
  const checks = claims.filter((c) => c.checked !== false);
  const seen = claims.filter((c) => c.checked === false);
  const item = (/** @type {TrainClaim} */ c) =>
    el("li", { className: c.holds ? "holds" : "fails" }, [
      el("span", { role: "img", "aria-label": c.holds ? "Holds:" : "Does not hold:" }, [c.holds ? "✓" : "✗"]),
      ` ${said(c)}`,
    ]);
  return [
    el("p", { className: "hint" }, [intro]),
    el("ul", { dataset: { role: "checks" } }, checks.map(item)),
    ...(seen.length
      ? [
          el("p", { className: "hint" }, [
            "Observed on this machine, not checked (a time depends on how busy the machine is):",
          ]),
          el(
            "ul",
            { dataset: { role: "observed" } },
            seen.map((c) => el("li", { className: "observed" }, [said(c)])),
          ),
        ]
      : []),
  ];
}
