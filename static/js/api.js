// Talking to the attnviz API: presets, and traces that never arrive out of order.

export class ApiError extends Error {
  constructor(message, status) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
}

/** The one-line message of an error response: `message`, else the validation details. */
function errorMessage(status, body) {
  if (body && typeof body.message === "string" && body.message) return body.message;
  if (body && Array.isArray(body.detail) && body.detail.length) {
    return body.detail
      .map((d) => {
        const loc = (d.loc || []).filter((p) => p !== "body").join(".");
        return loc ? `${loc}: ${d.msg}` : String(d.msg);
      })
      .join("; ");
  }
  if (body && typeof body.detail === "string") return body.detail;
  return `The server answered ${status}.`;
}

async function readJson(response) {
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!response.ok) throw new ApiError(errorMessage(response.status, body), response.status);
  if (body === null) throw new ApiError("The server sent a response that is not JSON.", response.status);
  return { body, text };
}

/** GET /api/presets -> {presets: [...], limits: {...}} */
export async function fetchPresets() {
  const response = await fetch("/api/presets", { headers: { Accept: "application/json" } });
  return (await readJson(response)).body;
}

/**
 * Debounced POST /api/trace. Each new request aborts the one in flight, so a stale
 * response can never overwrite a newer one. Callbacks: onPending(bool), onResult(trace,
 * text), onError(message).
 */
export class TraceClient {
  constructor({ delay = 150, onPending, onResult, onError }) {
    this.delay = delay;
    this.onPending = onPending;
    this.onResult = onResult;
    this.onError = onError;
    this.timer = null;
    this.controller = null;
    this.seq = 0;
  }

  /** Ask for a trace of `request` after the debounce delay (0 = now). */
  request(request, delay = this.delay) {
    this.cancel();
    const seq = ++this.seq;
    this.onPending(true);
    this.timer = setTimeout(() => this.send(request, seq), delay);
  }

  /** Forget any scheduled or running request. */
  cancel() {
    clearTimeout(this.timer);
    this.timer = null;
    if (this.controller) this.controller.abort();
    this.controller = null;
  }

  /** Drop pending work and report that nothing is pending (e.g. the input is invalid). */
  idle() {
    this.cancel();
    this.seq++;
    this.onPending(false);
  }

  async send(request, seq) {
    const controller = new AbortController();
    this.controller = controller;
    try {
      const response = await fetch("/api/trace", {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify(request),
        signal: controller.signal,
      });
      const { body, text } = await readJson(response);
      if (seq !== this.seq) return;
      this.controller = null;
      this.onResult(body, text);
    } catch (err) {
      if (seq !== this.seq || err.name === "AbortError") return;
      this.controller = null;
      this.onError(err instanceof ApiError ? err.message : `Could not reach the server (${err.message}).`);
    } finally {
      if (seq === this.seq) this.onPending(false);
    }
  }
}

/** GET /api/models -> {models: [...], default: name | null, examples: [...], max_text_chars} */
export async function fetchModels() {
  const response = await fetch("/api/models", { headers: { Accept: "application/json" } });
  return (await readJson(response)).body;
}
