// The Learn mode's guide: render(container, data, selection, callbacks), its parts marked by
// data-role in templates/modes/learn.html. The step's text, formula and article tables are
// drawn when the step changes; the progress list and the tasks' answers every time, each
// answer's text replaced only when it changed (each is a polite live region: a screen reader
// hears what changed, not the whole list again).

import { el } from "../../core/dom.js";
import { findTerms, term, terms } from "../../core/glossary.js";
import { importMath } from "./mathml.js";
import { meets, placeNote } from "./notespot.js";
import { articleRows, encodeLearnHash, stepDone, stepLabel, stepsDone, taskLines } from "./progress.js";

/** @typedef {import("../../core/types.js").LearnStep} LearnStep */
/** @typedef {import("../../core/types.js").LearnAnswer} LearnAnswer */
/** @typedef {import("./progress.js").Progress} Progress */

/**
 * @typedef {object} GuideData
 * @property {LearnStep[]} steps
 * @property {Progress} progress
 * @property {LearnAnswer | null} answer the latest check of the step open (null: none yet)
 * @property {string | null} problem why there is no answer (no run yet, a table to fix, an error)
 * @property {{id: string, name: string}[]} looks the cards the step is about, to go to
 * @property {boolean} tried the learner has changed the lab since the step opened: until then
 *   a task shows its question only (no "Not yet", whose reason would give the answer away)
 */

/** @param {HTMLElement} container @param {string} role */
const part = (container, role) => /** @type {HTMLElement} */ (container.querySelector(`[data-role="${role}"]`));

/**
 * Where an article table's engine numbers come from: the step's start (before the first
 * check), the learner's table as it is now (live), or the article's table because the
 * learner's no longer is its case (kept).
 * @typedef {"start" | "live" | "kept"} ArticleSource
 */

/** The engine rows' header, by source. @type {Record<ArticleSource, string>} */
const ENGINE_ROW = { start: "engine", live: "your table", kept: "engine" };

/**
 * What an article table's caption says under it, by source and whether every number agrees.
 * @param {ArticleSource} source @param {boolean} agree @param {number} decimals
 */
export function articleNote(source, agree, decimals) {
  if (source === "kept") {
    return (
      "These are the article's case: the engine's numbers for the article's table as the step " +
      "starts. Your table's tokens, dimensions or layers are no longer the article's, so they " +
      "are not recomputed from it."
    );
  }
  const whose =
    source === "live" ? "Your table's numbers (recomputed from its trace as you edit it)" : "The engine's numbers";
  return agree
    ? `${whose}, rounded to ${decimals} decimals as the article prints them, are the article's.`
    : source === "live"
      ? "Where a number is marked, your table's (recomputed from its trace as you edit it) differs from the article's at its rounding."
      : "Where a number is marked, the engine's differs from the article's at its rounding.";
}

/**
 * An article table: the article's numbers beside the engine's, at the article's rounding.
 * @param {import("../../core/types.js").ArticleTable} table @param {ArticleSource} source
 */
function articleTable(table, source) {
  const rows = articleRows(table);
  const head = el("tr", {}, [
    el("th", { scope: "col" }, [""]),
    el("th", { scope: "col" }, ["source"]),
    ...table.columns.map((c) => el("th", { scope: "col" }, [c])),
  ]);
  const body = rows.flatMap((r) => {
    const differs = r.cells.some((c) => !c.agrees);
    return [
      el("tr", { className: "article-row" }, [
        el("th", { scope: "row", rowSpan: 2, className: "token" }, [r.label]),
        el("th", { scope: "row", className: "source" }, ["article"]),
        ...r.cells.map((c) => el("td", {}, [c.article])),
      ]),
      el("tr", { className: differs ? "engine-row differs" : "engine-row" }, [
        el("th", { scope: "row", className: "source" }, [ENGINE_ROW[source]]),
        ...r.cells.map((c) =>
          el("td", { className: c.agrees ? "" : "differs" }, [
            c.engine,
            ...(c.agrees ? [] : [el("span", { className: "sr-only" }, [" (differs)"])]),
          ]),
        ),
      ]),
    ];
  });
  const agree = rows.every((r) => r.cells.every((c) => c.agrees));
  const caption = source === "live" ? table.caption.replace(/the engine's$/, "your table's") : table.caption;
  return el("figure", { className: "learn-table", dataset: { source } }, [
    el("div", { className: "table-scroll", tabIndex: 0, role: "region", "aria-label": caption }, [
      el("table", { className: "data-table" }, [
        el("caption", {}, [caption]),
        el("thead", {}, [head]),
        el("tbody", {}, body),
      ]),
    ]),
    el("figcaption", { className: "hint" }, [articleNote(source, agree, table.decimals)]),
  ]);
}

/**
 * The step's article tables: the answer's (read from the learner's table) once a check of this
 * step has come back, else the step's own; drawn again only when what they show changes.
 * @param {HTMLElement} box @param {LearnStep} step @param {LearnAnswer | null} answer
 */
function drawArticle(box, step, answer) {
  const mine = answer && answer.step === step.id && answer.article !== undefined ? answer : null;
  /** @type {ArticleSource} */
  const source = !mine ? "start" : mine.article ? "live" : "kept";
  const tables = mine?.article ?? step.article;
  const key = JSON.stringify([step.id, source, tables]);
  if (box.dataset.drawn === key) return;
  box.dataset.drawn = key;
  box.replaceChildren(...tables.map((t) => articleTable(t, source)));
}

/**
 * Draw the step open (selection.n) and its answers.
 * @param {HTMLElement} container the guide (templates/modes/learn.html's #learn-guide)
 * @param {GuideData} data
 * @param {{n: number}} selection
 * @param {{onReset: () => void, onExplore: () => void, onLook: (id: string) => void}} callbacks
 */
export function render(container, data, selection, callbacks) {
  const { steps, progress } = data;
  const step = steps[selection.n - 1];
  part(container, "loading").hidden = true;
  part(container, "count").textContent = `(${stepsDone(steps, progress)} of ${steps.length} done)`;
  drawProgress(part(container, "steps"), steps, progress, selection.n);
  if (container.dataset.step !== step.id) {
    container.dataset.step = step.id;
    drawStep(container, step, steps.length, callbacks);
  }
  drawLooks(part(container, "look"), data.looks, callbacks);
  const lines = drawTasks(part(container, "tasks"), step, data.answer, progress, data.tried);
  // Someone else's work (a shared link's lab as it came, another visitor's run): whose it is,
  // that its answers count for no one, and what makes it the learner's (the server's words).
  const seen = part(container, "seen");
  const whose = data.answer?.seen ?? "";
  if (seen.textContent !== whose) seen.textContent = whose;
  seen.hidden = !whose;
  drawVerdict(container, lines, data.tried, whose);
  drawArticle(part(container, "article"), step, data.answer);
  const problem = part(container, "problem");
  if (problem.textContent !== (data.problem ?? "")) problem.textContent = data.problem ?? "";
  problem.hidden = !data.problem;
}

/** The progress list: every step a link, the open one aria-current, the done ones marked. */
function drawProgress(
  /** @type {HTMLElement} */ list,
  /** @type {LearnStep[]} */ steps,
  /** @type {Progress} */ progress,
  /** @type {number} */ n,
) {
  if (list.children.length !== steps.length) {
    // The link's name is its text: "4. Title, done" (the dot and ", done" for a screen reader,
    // the number and a tick for the eye; on narrow screens the title is read, not shown).
    list.replaceChildren(
      ...steps.map((s) =>
        el("li", {}, [
          el("a", { href: encodeLearnHash(s.n), dataset: { n: String(s.n) } }, [
            el("span", { className: "learn-num" }, [String(s.n), el("span", { className: "sr-only" }, ["."])]),
            el("span", { className: "learn-name" }, [
              s.title,
              el("span", { className: "sr-only", dataset: { role: "done" } }, [""]),
            ]),
            el("span", { className: "learn-tick", "aria-hidden": "true" }, ["✓"]),
          ]),
        ]),
      ),
    );
  }
  for (const [i, s] of steps.entries()) {
    const a = /** @type {HTMLAnchorElement} */ (list.children[i].firstElementChild);
    const done = stepDone(progress, s);
    a.title = stepLabel(s, progress);
    part(a, "done").textContent = done ? ", done" : "";
    a.dataset.done = String(done);
    if (s.n === n) a.setAttribute("aria-current", "step");
    else a.removeAttribute("aria-current");
  }
}

/** The step's parts that change only with the step: title, text, formula, article, links. */
function drawStep(
  /** @type {HTMLElement} */ container,
  /** @type {LearnStep} */ step,
  /** @type {number} */ count,
  /** @type {{onReset: () => void, onExplore: () => void}} */ callbacks,
) {
  const lab = step.lab === "toy" ? "the toy lab" : "the Train tab";
  part(container, "where").textContent = `Step ${step.n} of ${count} · in ${lab}, below`;
  part(container, "title").textContent = step.title;
  const mark = stepMarker();
  part(container, "text").replaceChildren(...step.text.map((text) => el("p", {}, mark(text))));
  const box = part(container, "formula-box");
  const math = part(container, "formula");
  // The formula's plain text too (step 16's Var(q · k)): MathML holds no button, its caption can.
  part(container, "formula-text").replaceChildren(...mark(step.formula_text));
  try {
    math.replaceChildren(importMath(step.formula));
    math.hidden = false;
    fitFormula(box);
  } catch (err) {
    // Not allow-listed MathML: the plain text alone (the figure's caption) stands for it.
    console.warn(`attnviz: step ${step.id}'s formula is not drawn: ${/** @type {Error} */ (err).message}`);
    math.replaceChildren();
    math.hidden = true;
  }
  box.hidden = !step.formula && !step.formula_text;
  fitFormula(box);
  const prev = /** @type {HTMLAnchorElement} */ (part(container, "prev"));
  const next = /** @type {HTMLAnchorElement} */ (part(container, "next"));
  prev.hidden = step.n <= 1;
  next.hidden = step.n >= count;
  prev.href = encodeLearnHash(Math.max(1, step.n - 1));
  next.href = encodeLearnHash(Math.min(count, step.n + 1));
  prev.setAttribute("aria-label", `Previous: step ${step.n - 1}`);
  next.setAttribute("aria-label", `Next: step ${step.n + 1}`);
  const reset = part(container, "reset");
  const explore = part(container, "explore");
  reset.onclick = () => callbacks.onReset();
  explore.onclick = () => callbacks.onExplore();
  explore.textContent = `Explore freely in ${step.lab === "toy" ? "the toy lab" : "Train"}`;
}

/** The formula's largest size (rem), and the smallest it is shrunk to before it scrolls. */
const MATH_REM = [1.2, 0.7];
/** @type {WeakMap<HTMLElement, ResizeObserver>} */
const fitting = new WeakMap();

/**
 * Shrink a formula wider than its box (MathML does not wrap) down to MATH_REM[1]; past that its
 * box scrolls (it takes the focus, for the keyboard). Again whenever the box is resized.
 * @param {HTMLElement} box
 */
function fitFormula(box) {
  if (!fitting.has(box) && typeof ResizeObserver !== "undefined") {
    let width = 0;
    const observer = new ResizeObserver(() => {
      if (box.clientWidth !== width) fitFormula(box);
      width = box.clientWidth;
    });
    observer.observe(box);
    fitting.set(box, observer);
  }
  const math = /** @type {HTMLElement | null} */ (box.querySelector("math"));
  if (!math || box.hidden) return;
  const [most, least] = MATH_REM;
  math.style.fontSize = `${most}rem`;
  const pad = box.scrollWidth - box.clientWidth;
  if (pad <= 0) return;
  const room = box.clientWidth - 32; // less the box's padding
  math.style.fontSize = `${Math.max(least, (most * room) / (room + pad)).toFixed(3)}rem`;
}

/** Buttons to the cards the step is about. */
function drawLooks(
  /** @type {HTMLElement} */ box,
  /** @type {{id: string, name: string}[]} */ looks,
  /** @type {{onLook: (id: string) => void}} */ callbacks,
) {
  const key = JSON.stringify(looks);
  if (box.dataset.key === key) return;
  box.dataset.key = key;
  box.hidden = !looks.length;
  box.replaceChildren(
    ...(looks.length ? [el("span", {}, ["Look at: "])] : []),
    ...looks.map((l) => {
      const b = el("button", { type: "button", className: "learn-look-go" }, [l.name]);
      b.addEventListener("click", () => callbacks.onLook(l.id));
      return b;
    }),
  );
}

/**
 * A task's badge: done now, found earlier, done before; passed on someone else's work, "Shown"
 * (it counts for no one: not "Done"); else "Not yet" once the learner has tried that task
 * (before, none: its answer says it is not tried yet, or the question only).
 * @param {ReturnType<typeof taskLines>[number]} t @param {boolean} answered @param {boolean} tried
 */
function badgeOf(t, answered, tried) {
  if (t.done) return "Done";
  if (t.shown) return "Shown";
  if (t.found) return "Done: found earlier";
  if (t.before) return "Done before, not now";
  return answered && tried && t.tried ? "Not yet" : "";
}

/**
 * The tasks: prompt, hint, and the check's answer (its text replaced only when it changed).
 * Returns the tasks' lines, each with the badge drawn.
 */
function drawTasks(
  /** @type {HTMLElement} */ list,
  /** @type {LearnStep} */ step,
  /** @type {LearnAnswer | null} */ answer,
  /** @type {Progress} */ progress,
  /** @type {boolean} */ tried,
) {
  const lines = taskLines(step, answer, progress);
  if (list.dataset.step !== step.id) {
    list.dataset.step = step.id;
    list.replaceChildren(
      ...lines.map((t) =>
        el("li", { className: "learn-task", dataset: { task: t.id, state: "unchecked" } }, [
          el("p", { className: "learn-prompt" }, [t.prompt]),
          ...(t.action ? actionButton(t.action) : []),
          ...(t.hint
            ? [el("details", { className: "learn-hint" }, [el("summary", {}, ["Hint"]), el("p", {}, [t.hint])])]
            : []),
          el("p", { className: "learn-answer", "aria-live": "polite" }, [
            el("span", { className: "learn-badge", dataset: { role: "badge" } }, [""]),
            el("span", { dataset: { role: "says" } }, [""]),
          ]),
        ]),
      ),
    );
  }
  const drawn = [];
  for (const [i, t] of lines.entries()) {
    const li = /** @type {HTMLElement} */ (list.children[i]);
    const state = !answer ? "unchecked" : t.done || t.found ? "done" : t.shown ? "shown" : "todo";
    li.dataset.state = state;
    li.dataset.before = String(t.before);
    const badge = badgeOf(t, Boolean(answer), tried);
    const says = answerText(t, tried);
    const b = part(li, "badge");
    const s = part(li, "says");
    if (b.textContent !== badge) b.textContent = badge;
    b.hidden = !badge;
    if (s.textContent !== says) s.textContent = says;
    drawn.push({ n: i + 1, id: t.id, done: t.done || t.found, shown: t.shown, badge, says: says.trim() });
  }
  return drawn;
}

/**
 * What a task's answer says after its badge: the check's words once the learner has tried (or
 * it is done); before, the question alone (what is true of the starting state would tell). A
 * task done earlier and not now says so first, in words, the lab's answer after it.
 * @param {ReturnType<typeof taskLines>[number]} t @param {boolean} tried
 */
export function answerText(t, tried) {
  const now = t.says && (tried || t.done || t.shown) ? t.says : "";
  if (t.found && !t.done)
    return ` You found one earlier, so this task stays done.${now ? ` About the lab now: ${now}` : ""}`;
  if (t.before) return ` You did this task before; what the lab shows now does not pass it${now ? `: ${now}` : "."}`;
  return now ? ` ${now}` : "";
}

/** What mirrors the lab's button the task's action presses (one at a time). @type {MutationObserver | null} */
let watching = null;

/**
 * The task's action: a button named as the lab's button `id` that presses it, enabled while
 * that one is (the task's one action in view beside its question, however far below the lab is),
 * and beside it the lab's reason while it is greyed.
 * @param {string} id @returns {HTMLElement[]}
 */
function actionButton(id) {
  const target = /** @type {HTMLButtonElement | null} */ (document.getElementById(id));
  const name = (target?.textContent ?? "").trim();
  const b = /** @type {HTMLButtonElement} */ (
    el("button", { type: "button", className: "primary learn-do", dataset: { target: id } }, [name])
  );
  b.hidden = !target;
  // Greyed, the lab's reason beside its button (`<id>-why`, as Start training's) is said here too.
  const why = document.getElementById(`${id}-why`);
  const note = el("span", { className: "hint learn-do-why", id: `learn-${id}-why` }, [""]);
  b.setAttribute("aria-describedby", note.id);
  const mirror = () => {
    b.disabled = !target || target.disabled;
    note.textContent = b.disabled && why ? (why.textContent ?? "") : "";
    note.hidden = !note.textContent;
  };
  mirror();
  watching?.disconnect(); // the step's previous action button is gone
  watching = target ? new MutationObserver(mirror) : null;
  watching?.observe(/** @type {HTMLButtonElement} */ (target), { attributes: true, attributeFilter: ["disabled"] });
  b.addEventListener("click", () => target?.click());
  return [b, note];
}

/**
 * The verdict note's state: the task it speaks of (the one the learner's latest change answered)
 * and that task's answer element, each task's answer as last drawn (to see which changed),
 * whether each answer is in the window, and the text last dismissed.
 */
const verdict = {
  /** @type {IntersectionObserver | null} */ observer: null,
  /** @type {WeakMap<Element, boolean>} */ visible: new WeakMap(),
  /** @type {Map<string, {done: boolean, text: string}>} */ seen: new Map(),
  step: "",
  /** @type {string | null} */ task: null,
  /** @type {Element | null} */ answer: null,
  dismissed: "",
  text: "",
};

/**
 * The task a new answer is about: one whose verdict changed (done now, or no longer), else one
 * whose words changed (the first not done), else the one the note spoke of.
 * @template {{id: string, done: boolean, badge: string, says: string}} L
 * @param {L[]} lines @returns {L | null}
 */
function answeredTask(lines) {
  const said = (/** @type {typeof lines[number]} */ l) => `${l.badge} ${l.says}`;
  const changed = lines.filter((l) => l.badge && verdict.seen.get(l.id)?.text !== said(l));
  const flipped = changed.filter((l) => verdict.seen.has(l.id) && verdict.seen.get(l.id)?.done !== l.done);
  const pick = flipped[0] ?? changed.find((l) => !l.done) ?? changed[0];
  verdict.seen = new Map(lines.map((l) => [l.id, { done: l.done, text: said(l) }]));
  if (pick) verdict.task = pick.id;
  return lines.find((l) => l.id === verdict.task) ?? null;
}

/**
 * What the note says of the task `line`: its number, its answer's words, and where the step
 * stands (all done; or the tasks still to do when this one is done); of a task shown on someone
 * else's work, whose work it is (`seen`, the server's words) instead.
 * @param {{n: number, done: boolean, shown?: boolean, says: string}} line
 * @param {{n: number, done: boolean}[]} lines @param {string} [seen]
 */
export function verdictWords(line, lines, seen = "") {
  const which = `Task ${line.n}${lines.length > 1 ? ` of ${lines.length}` : ""}: `;
  if (line.shown) return `${which}${line.says} ${seen}`.trim();
  const open = lines.filter((l) => !l.done);
  const then = !open.length
    ? lines.length === 1
      ? " The task is done: on to the next step when you are ready."
      : ` ${lines.length === 2 ? "Both tasks are" : `All ${lines.length} tasks are`} done: on to the next step when you are ready.`
    : line.done
      ? ` Task ${open.map((l) => l.n).join(" and ")} ${open.length > 1 ? "are" : "is"} not done yet.`
      : "";
  return `${which}${line.says}${then}`.trim();
}

/**
 * The verdict note: once the learner has tried, the answer to the task their latest change
 * answered (with where the step stands), at the bottom of the window while that answer is out
 * of it, until dismissed (a new answer shows it again). Not a live region: the task's own
 * answer is announced, once.
 * @param {HTMLElement} container
 * @param {{n: number, id: string, done: boolean, shown: boolean, badge: string, says: string}[]} lines
 * @param {boolean} tried @param {string} whose whose work the answer is of, when not the learner's
 */
function drawVerdict(container, lines, tried, whose) {
  const note = /** @type {HTMLElement | null} */ (
    container.parentElement?.querySelector("[data-role=verdict]") ?? null
  );
  if (!note) return;
  const list = part(container, "tasks");
  const tasks = /** @type {HTMLElement} */ (list.closest("section"));
  if (!verdict.observer && typeof IntersectionObserver !== "undefined") {
    verdict.observer = new IntersectionObserver(
      (seen) => {
        for (const e of seen) verdict.visible.set(e.target, e.isIntersecting && e.intersectionRatio > 0.99);
        showVerdict(note);
      },
      { threshold: [0, 1] },
    );
    // Its size followed: new words, a window made narrower (docked) or wider, the Learn mode
    // left (no box at all): the room kept below the lab follows it.
    if (typeof ResizeObserver !== "undefined") new ResizeObserver(() => keepRoom(note)).observe(note);
    // Its place found again (notespot.js) as the page scrolls, the window is resized or the
    // focus moves: once a frame, the room following it (the page not scrolled for it here).
    let queued = false;
    const again = () => {
      if (queued || note.hidden) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        placeNote(note);
        setRoom(note);
      });
    };
    addEventListener("scroll", again, { passive: true });
    addEventListener("resize", again);
    document.addEventListener("focusin", again);
    part(note, "verdict-close").addEventListener("click", () => {
      verdict.dismissed = verdict.text;
      showVerdict(note);
    });
    part(note, "verdict-go").addEventListener("click", () => {
      (verdict.answer?.closest("li") ?? tasks).scrollIntoView({ block: "center" });
      const h = /** @type {HTMLElement} */ (tasks.querySelector("h3"));
      if (!h.hasAttribute("tabindex")) h.tabIndex = -1;
      h.focus({ preventScroll: true });
    });
  }
  if (verdict.step !== list.dataset.step) {
    // Another step: its tasks' answers watched, none answered yet.
    verdict.step = list.dataset.step ?? "";
    verdict.seen = new Map();
    verdict.task = null;
    verdict.observer?.disconnect();
    for (const a of list.querySelectorAll(".learn-answer")) verdict.observer?.observe(a);
  }
  const line = answeredTask(lines);
  verdict.answer = line ? list.querySelector(`[data-task="${line.id}"] .learn-answer`) : null;
  const badge = line?.badge ?? "";
  const says = line && badge ? verdictWords(line, lines, whose) : "";
  verdict.text = tried && badge ? `${badge} ${says}` : "";
  note.dataset.state = line?.done ? "done" : line?.shown ? "shown" : "todo";
  part(note, "verdict-badge").textContent = badge;
  part(note, "verdict-says").textContent = says;
  showVerdict(note);
}

/** @param {HTMLElement} note */
function showVerdict(note) {
  const inView = verdict.answer ? (verdict.visible.get(verdict.answer) ?? true) : true;
  const was = !note.hidden;
  note.hidden = !verdict.text || inView || verdict.dismissed === verdict.text;
  const clear = placeNote(note);
  keepRoom(note);
  if (!note.hidden && !was && !clear) uncover(note);
}

/**
 * How far a box reaches under the note (px, from the note's top; 0: the note covers none of it).
 * @param {DOMRect} r @param {DOMRect} n the note's
 */
export function underNote(r, n) {
  if (r.right <= n.left || r.left >= n.right || r.bottom <= n.top || r.top >= n.bottom) return 0;
  return Math.min(r.bottom, n.bottom) - n.top;
}

/**
 * The room the page keeps for the note shown: below the lab, as tall as the note reaches from
 * its edge of the window (--verdict-room: the body's padding, the scroll padding that keeps a
 * control reached by Tab clear of a note at the bottom); at the top, the scroll padding there
 * too (--verdict-top). Returns the note's box (null: not drawn, the Learn mode left).
 * @param {HTMLElement} note
 */
function setRoom(note) {
  const n = note.hidden ? null : note.getBoundingClientRect();
  const drawn = n !== null && n.height > 0;
  const top = drawn && (note.dataset.place ?? "").startsWith("top");
  const room = drawn ? Math.max(0, Math.ceil(top ? n.bottom : innerHeight - n.top)) : 0;
  document.documentElement.style.setProperty("--verdict-room", `${room}px`);
  document.documentElement.style.setProperty("--verdict-top", `${top ? room : 0}px`);
  return drawn ? n : null;
}

/**
 * The note shown (in the place notespot.js finds for it) covers none of the lab: the page keeps
 * room for it (setRoom), and the control in use, were the note to cover it (a note in one line
 * that found no clear place), is scrolled clear of it.
 * @param {HTMLElement} note
 */
function keepRoom(note) {
  const n = setRoom(note);
  const at = document.activeElement;
  if (!n || !(at instanceof HTMLElement) || at === document.body || note.contains(at)) return;
  const r = at.getBoundingClientRect();
  if (!meets(r, n)) return;
  const top = (note.dataset.place ?? "").startsWith("top");
  scrollBy({ top: top ? r.top - n.bottom - 8 : underNote(r, n) + 8, behavior: "instant" });
}

/**
 * The note just shown, in one line at the bottom where no place left the step's outlined cards
 * clear (notespot.js), covers none of them that it can lift: the covered part of each is
 * scrolled above the note (the room kept below the lab lets it), never taking a card's heading
 * out of the window.
 * @param {HTMLElement} note
 */
function uncover(note) {
  const n = note.getBoundingClientRect();
  if (n.height <= 0 || (note.dataset.place ?? "").startsWith("top")) return;
  let by = 0;
  for (const card of document.querySelectorAll(".learn-focus")) {
    const r = card.getBoundingClientRect();
    const over = underNote(r, n);
    if (over > 0) by = Math.max(by, r.top > 0 ? Math.min(over + 8, r.top - 8) : over + 8);
  }
  if (by > 0) scrollBy({ top: by, behavior: "instant" });
}

/** The article's own words (it derives them): the step's reader knows them, left unmarked. */
const KNOWN = new Set(["token", "embedding", "query", "key", "value", "score", "softmax", "weight", "layer", "head"]);

/**
 * A step's marker: each call gives a text of the step (a paragraph, the formula's plain text,
 * in reading order) as children for el(), each glossary term (but the article's own words)
 * marked where the step first writes it: a button that explains it (core/glossary.js).
 * @returns {(text: string) => (Node | string)[]}
 */
function stepMarker() {
  const left = new Set(
    terms()
      .map((t) => t.id)
      .filter((id) => !KNOWN.has(id)),
  );
  // (The ids are the installed glossary's own: each is defined by construction.)
  return (text) => {
    /** @type {(Node | string)[]} */
    const parts = [];
    let at = 0;
    for (const [start, end, id] of findTerms(text, [...left])) {
      left.delete(id);
      parts.push(text.slice(at, start), term(id, text.slice(start, end)));
      at = end;
    }
    parts.push(text.slice(at));
    return parts;
  };
}
