// What both modes' controllers share: the work in flight behind one status line, and drawing a
// set of views, each one's failure reported rather than stopping the others: a part refused
// (a saved file lacks it) in the view's own card, any other failure in the error line.

/**
 * A mode's status line and pending flag: pending while a request, a model list or any drawing
 * is in flight ("computing…"), else the last status set.
 * @param {{setPending: (p: boolean) => void, setStatus: (t: string) => void}} hooks
 */
export function createStatus(hooks) {
  let status = "";
  let drawing = 0;
  /** @type {Set<string>} */
  const waiting = new Set();
  const sync = () => {
    const pending = drawing > 0 || waiting.size > 0;
    hooks.setPending(pending);
    hooks.setStatus(pending ? "computing…" : status);
  };
  return {
    /** The status line once nothing is pending. @param {string} text */
    set(text) {
      status = text;
      sync();
    },
    /** Something named (a request, the model list) is in flight, or not. @param {string} what @param {boolean} on */
    waiting(what, on) {
      if (on) waiting.add(what);
      else waiting.delete(what);
      sync();
    },
    /**
     * Pending until `work` settles; then `done()`.
     * @param {Promise<unknown>} work @param {() => void} [done]
     */
    drawing(work, done) {
      drawing++;
      sync();
      return work.finally(() => {
        drawing--;
        done?.();
        sync();
      });
    },
  };
}

/** A part the source cannot give (a saved file lacks it): said in the card of the view that
 * asked, not in the page's error line, which is for real errors. */
export class Refusal extends Error {
  /** @param {string} message one plain sentence for a reader */
  constructor(message) {
    super(message);
    this.name = "Refusal";
  }
}

/**
 * Each view's note in its own card: a polite live region (role=status) made once, after the
 * card's head, empty until a view's part is refused. Then it says why, and what the view still
 * shows (what `showing(name)` said when it last drew); the card is marked data-refused, its
 * drawing kept. A view that draws again clears both.
 * @param {(name: string) => HTMLElement | null} cardOf a view's card
 * @param {(name: string) => string} showing what a view draws now, in words ("layer 6, head 12")
 */
export function viewNotes(cardOf, showing) {
  /** @type {Record<string, string>} */
  const drawn = {};
  /** @param {string} name */
  function note(name) {
    const card = cardOf(name);
    if (!card) return null;
    let el = /** @type {HTMLElement | null} */ (card.querySelector(":scope > .view-refusal"));
    if (!el) {
      el = document.createElement("p");
      el.className = "view-refusal";
      el.setAttribute("role", "status");
      const head = card.querySelector(":scope > .card-head") ?? card.querySelector(":scope > h2, :scope > h3");
      if (head) head.after(el);
      else card.prepend(el);
    }
    return { card, el };
  }
  /** @param {string} name @param {string} text */
  function say(name, text) {
    const n = note(name);
    if (!n) return;
    if (n.el.textContent !== text) n.el.textContent = text; // said once, not again on a redraw
    n.card.toggleAttribute("data-refused", Boolean(text));
  }
  return {
    /** A draw starts: its note exists (empty, so that what it later says is announced); returns
     * what the draw will show. @param {string} name */
    start(name) {
      note(name);
      return showing(name);
    },
    /** @param {string} name @param {string} shows what start() returned */
    drawn(name, shows) {
      drawn[name] = shows;
      say(name, "");
    },
    /** @param {string} name @param {Refusal} err */
    refused(name, err) {
      const still = drawn[name] ? `Still showing ${drawn[name]}, drawn before.` : "Nothing is drawn here yet.";
      say(name, `${err.message.replace(/\.$/, "")}. ${still}`);
    },
  };
}

/**
 * Draw the views named in `which` (functions of `views`); settles when every one has drawn or
 * failed. A part refused (a Refusal) is said in the view's own card when `notes` are given
 * (viewNotes); any other failure is logged and said in the error line. The other views still draw.
 * @param {Record<string, () => unknown>} views
 * @param {string[]} which
 * @param {(message: string) => void} setError
 * @param {ReturnType<typeof viewNotes>} [notes]
 */
export async function drawViews(views, which, setError, notes) {
  await Promise.all(
    which.map((name) => {
      const shows = notes?.start(name) ?? "";
      return Promise.resolve()
        .then(() => views[name]())
        .then(
          () => notes?.drawn(name, shows),
          (err) => {
            if (notes && err instanceof Refusal) return notes.refused(name, err);
            console.error(`attnviz: the ${name} view failed`, err);
            setError(`The ${name} view could not be drawn: ${err.message.replace(/\.$/, "")}.`);
          },
        );
    }),
  );
}
