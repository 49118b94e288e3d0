// The class view (`#learn/class`, templates/modes/learn.html's #learn-class): the operator's
// table of every learner on this server, asked for again every poll_s seconds (the server
// says how often) while it is open; and the learner's nickname, a small form under the path's
// steps, shown where the server has an operator (and this tab is not the operator's). The
// operator's token is asked for once, kept by this tab (sessionStorage) and sent as the bearer
// of the class's requests and of this tab's checks (index.js), which the server then keeps for
// no learner: the teacher browsing the steps is not one of the class.

import { ApiError, fetchClass, setNickname } from "../../core/api.js";
import { el } from "../../core/dom.js";
import {
  CLASS_IDLE,
  CLASS_ORDER,
  classCaption,
  classSummary,
  doneText,
  onText,
  rowText,
  seenAgo,
  stuckLines,
  stuckRule,
  TOKEN_KEY,
} from "./classroom.js";

/** @typedef {import("../../core/types.js").LearnClass} LearnClass */
/** @typedef {import("../../core/types.js").LearnKept} LearnKept */

/** The operator's token this tab holds, or null. */
export function heldToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || null;
  } catch {
    return null;
  }
}

/** @param {string | null} token */
function holdToken(token) {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // storage refused: the token lives in this page only
  }
}

/** @param {HTMLElement} root @param {string} role */
const part = (root, role) => /** @type {HTMLElement} */ (root.querySelector(`[data-role="${role}"]`));

/**
 * A learner's row: the learner (a row header) and the step they are on, the steps done (or that
 * they have tried nothing yet: such a row is marked, `data-started="false"`), where stuck (each
 * step and its tasks, with their tries), when last seen.
 * @param {import("../../core/types.js").ClassLearner} learner @param {number} steps
 */
function row(learner, steps) {
  const stuck = stuckLines(learner);
  const tr = { dataset: { label: learner.label, started: String(learner.started) } };
  return el("tr", learner.started ? tr : { ...tr, className: "class-idle" }, [
    el("th", { scope: "row" }, [
      el("span", { className: learner.named ? "class-name" : "class-name anonymous" }, [learner.label]),
      el("span", { className: "class-on" }, [onText(learner)]),
    ]),
    el("td", { dataset: { col: "done" } }, [doneText(learner, steps)]),
    el(
      "td",
      { dataset: { col: "stuck" } },
      stuck.length
        ? [
            el(
              "ul",
              { className: "class-stuck" },
              stuck.map((s) =>
                el("li", {}, [
                  el("strong", {}, [s.step]),
                  ...s.tasks.map((t) =>
                    el("span", { className: "class-task" }, [
                      t.prompt,
                      " ",
                      el("span", { className: "class-tries" }, [`(${t.tries})`]),
                    ]),
                  ),
                ]),
              ),
            ),
          ]
        : ["nowhere"],
    ),
    el("td", { dataset: { col: "seen" } }, [seenAgo(learner.seen_s)]),
  ]);
}

/**
 * @param {HTMLElement} section #learn-class
 */
export function createClassView(section) {
  const form = /** @type {HTMLFormElement} */ (part(section, "class-token"));
  const input = /** @type {HTMLInputElement} */ (form.querySelector("input"));
  const said = part(section, "class-said");
  const summary = part(section, "class-summary");
  const tbody = part(section, "class-rows");
  const table = /** @type {HTMLElement} */ (tbody.closest("table"));
  const caption = /** @type {HTMLElement} */ (table.querySelector("caption"));
  const empty = part(section, "class-empty");
  const forget = part(section, "class-forget");
  const state = {
    open: false,
    /** @type {ReturnType<typeof setTimeout> | undefined} */ timer: undefined,
    /** @type {AbortController | null} */ asking: null,
    key: "", // the rows as text, as drawn: redrawn only when that changes
  };

  /** @param {string} text */
  const say = (text) => {
    if (said.textContent !== text) said.textContent = text;
    said.hidden = !text;
  };

  /** @param {LearnClass} data */
  function render(data) {
    // Redrawn when what it says changed (a screen reader reading the table keeps its place).
    const key = JSON.stringify(data.learners.map((l) => rowText(l, data.steps)));
    if (key !== state.key) tbody.replaceChildren(...data.learners.map((l) => row(l, data.steps)));
    state.key = key;
    table.hidden = !data.learners.length;
    empty.hidden = data.learners.length > 0;
    const text = classSummary(data);
    if (summary.textContent !== text) summary.textContent = text;
    if (caption.textContent !== classCaption(data))
      caption.replaceChildren(
        CLASS_ORDER,
        " ",
        el("span", { className: "class-rule" }, [`Stuck: ${stuckRule(data)}. ${CLASS_IDLE}`]),
      );
    say(data.note ?? "");
    section.dataset.learners = String(data.learners.length);
    section.dataset.polls = String(+(section.dataset.polls || 0) + 1);
  }

  /** Ask the server, then again after poll_s while the view is open. @param {string} token */
  async function ask(token) {
    clearTimeout(state.timer);
    state.asking?.abort();
    const asking = (state.asking = new AbortController());
    let wait;
    try {
      const data = await fetchClass(token, asking.signal);
      if (asking.signal.aborted || !state.open) return;
      holdToken(token);
      locked(false);
      render(data);
      wait = data.poll_s;
    } catch (err) {
      if (asking.signal.aborted || !state.open) return;
      if (err instanceof ApiError && err.status === 403) {
        holdToken(null);
        locked(true);
        say("That is not this server's operator token: only the operator sees the class.");
        return;
      }
      say(`The class could not be read just now (${/** @type {Error} */ (err).message}); trying again.`);
      wait = 5;
    }
    state.timer = setTimeout(() => ask(token), 1000 * wait);
  }

  /** Show the token's form (no class in view), or the class. @param {boolean} on */
  function locked(on) {
    form.hidden = !on;
    forget.hidden = on;
    if (on) {
      tbody.replaceChildren();
      state.key = "";
      table.hidden = true;
      empty.hidden = true;
      summary.textContent = "";
      delete section.dataset.learners;
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const token = input.value.trim();
    if (!token) {
      say("Enter the token this server's operator set, to see the class.");
      input.focus();
      return;
    }
    input.value = "";
    say("");
    ask(token);
  });
  forget.addEventListener("click", () => {
    stop();
    holdToken(null);
    locked(true);
    say("This tab no longer holds the operator's token.");
    input.focus();
  });

  function stop() {
    clearTimeout(state.timer);
    state.asking?.abort();
    state.asking = null;
  }

  return {
    /** Open the view: the class, asked for at once, or the token's form. @param {boolean} focus */
    show(focus) {
      state.open = true;
      section.hidden = false;
      const token = heldToken();
      locked(!token);
      say("");
      if (token) ask(token);
      if (focus) /** @type {HTMLElement} */ (section.querySelector("h2")).focus({ preventScroll: true });
    },
    hide() {
      state.open = false;
      stop();
      section.hidden = true;
    },
    /** Whether the view is open. */
    open: () => state.open,
  };
}

/**
 * The learner's nickname form in the guide: shown where the server has an operator, filled
 * with the name the server keeps; Save sends it (an empty field: none).
 * @param {HTMLFormElement} form @param {number} cap the longest nickname (LIMITS.max_nickname_chars)
 */
export function createNickname(form, cap) {
  const input = /** @type {HTMLInputElement} */ (form.querySelector("input"));
  const said = part(form, "name-said");
  input.maxLength = cap;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = /** @type {HTMLButtonElement} */ (form.querySelector("button"));
    button.disabled = true;
    try {
      const kept = await setNickname(input.value.trim() || null);
      input.value = kept.nickname ?? "";
      input.removeAttribute("aria-invalid");
      said.textContent = kept.note
        ? kept.note
        : kept.nickname
          ? `Saved: the class sees you as ${kept.nickname}.`
          : "Saved: the class sees you without a name, as a numbered learner.";
    } catch (err) {
      input.setAttribute("aria-invalid", "true");
      said.textContent = `Not saved: ${/** @type {Error} */ (err).message}`;
    } finally {
      button.disabled = false;
    }
  });
  return {
    /** What the server keeps of the learner (a tab that holds the operator's token is no
     * learner: no name to give). @param {LearnKept} kept */
    load(kept) {
      form.hidden = !kept.watched || heldToken() !== null;
      if (document.activeElement !== input) input.value = kept.nickname ?? "";
    },
  };
}
