// What both modes' controllers share: the work in flight behind one status line, and drawing a
// set of views, each one's failure reported rather than stopping the others.

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

/**
 * Draw the views named in `which` (functions of `views`); settles when every one has drawn or
 * failed. A failure is logged and said in the error line; the other views still draw.
 * @param {Record<string, () => unknown>} views
 * @param {string[]} which
 * @param {(message: string) => void} setError
 */
export async function drawViews(views, which, setError) {
  await Promise.all(
    which.map((name) =>
      Promise.resolve()
        .then(() => views[name]())
        .catch((err) => {
          console.error(`attnviz: the ${name} view failed`, err);
          setError(`The ${name} view could not be drawn: ${err.message.replace(/\.$/, "")}.`);
        }),
    ),
  );
}
