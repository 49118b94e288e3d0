// What the head atlas and the composition cards share: a model's answer asked for only when the
// reader presses the card's button (it takes seconds the first time for a model, and traces
// should not wait behind it), an older answer dropped when a newer one is asked, the button put
// back when the model changes, a failure said in the page's error line.

/**
 * @template T
 * @param {{go: HTMLButtonElement, status: HTMLElement, what: string, model: () => string | null,
 *   asking: (model: string) => string, fetch: (model: string) => Promise<T>,
 *   show: (model: string, answer: T) => void, clear: () => void,
 *   setError: (message: string | null) => void}} card go: the button; what: the error line's
 *   prefix; asking: the status while it is asked; show: draw an answer (the button is hidden);
 *   clear: empty the card (the button is back)
 * @returns {{sync: () => void, shown: () => {model: string, answer: T} | null}} sync: after the
 *   model may have changed; shown: the answer drawn, if any
 */
export function askedOnce(card) {
  const { go, status } = card;
  /** @type {{model: string, answer: T} | null} */
  let shown = null;
  let asked = 0; // the newest request: an older answer is dropped
  /** @type {string | null} */
  let pending = null; // the model asked for, until its answer

  function reset() {
    shown = null;
    pending = null;
    asked++;
    go.hidden = false;
    go.disabled = false;
    status.textContent = "";
    card.clear();
  }

  go.addEventListener("click", async () => {
    const model = card.model();
    if (!model) return;
    const mine = ++asked;
    pending = model;
    go.disabled = true;
    status.textContent = card.asking(model);
    try {
      const answer = await card.fetch(model);
      if (mine !== asked) return;
      pending = null;
      shown = { model, answer };
      go.hidden = true;
      card.show(model, answer);
    } catch (err) {
      if (mine !== asked) return;
      pending = null;
      go.disabled = false;
      status.textContent = "";
      card.setError(`${card.what}: ${/** @type {Error} */ (err).message}`);
    }
  });
  reset();

  return {
    sync() {
      const of = shown?.model ?? pending;
      if (of !== null && of !== card.model()) reset();
    },
    shown: () => shown,
  };
}
