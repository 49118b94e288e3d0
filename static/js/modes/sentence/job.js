// A long trace the server computes as a job (core/api.js follows it): a progress line with the
// layers done and the time left, a bar, and a Cancel button; the rest of the page stays as it
// was and usable meanwhile. Drawn into its container; no ids, nothing global.

/** @typedef {import("../../core/types.js").TraceJob} TraceJob */

/**
 * Seconds as the line says them: "about 40 s", "about 2 min 10 s".
 * @param {number} s
 */
export function aboutSeconds(s) {
  const whole = Math.max(1, Math.round(s));
  if (whole < 60) return `about ${whole} s`;
  const min = Math.floor(whole / 60);
  const sec = whole % 60;
  return `about ${min} min${sec ? ` ${sec} s` : ""}`;
}

/**
 * What the line says of the job.
 * @param {TraceJob} job
 */
export function jobText(job) {
  const left = job.left_s === null ? "" : ` · ${aboutSeconds(job.left_s)} left`;
  if (job.state === "queued") return `Waiting for the server's turn${left}`;
  if (job.remote) return `${job.remote} · ${aboutSeconds(job.elapsed_s)} so far`;
  if (job.left_s === null) return `Asking the model's deployment · ${aboutSeconds(job.elapsed_s)} so far`;
  if (job.stage === "thumbnails") {
    const done = Math.max(0, job.done - job.layers);
    return `A long text: every head's thumbnail, layer ${done} of ${job.total - job.layers}${left}`;
  }
  if (job.stage === "encoding") return "A long text: sending the trace…";
  return `A long text: running the model, layer ${job.layers_done} of ${job.layers}${left}`;
}

/**
 * Draw the job's progress into `container` (its line, a bar, Cancel), or clear it when `job`
 * is null (ended: its trace is drawn, or it was cancelled).
 * @param {HTMLElement} container
 * @param {TraceJob | null} job
 * @param {{cancel: () => void}} callbacks cancel: the reader pressed Cancel
 */
export function renderJob(container, job, { cancel }) {
  if (!job) {
    container.hidden = true;
    container.replaceChildren();
    return;
  }
  let line = /** @type {HTMLElement | null} */ (container.querySelector(".job-line"));
  let bar = /** @type {HTMLProgressElement | null} */ (container.querySelector("progress"));
  if (!line || !bar) {
    line = document.createElement("span");
    line.className = "job-line";
    line.setAttribute("role", "status"); // polite: said as it changes, never interrupting
    bar = document.createElement("progress");
    bar.setAttribute("aria-label", "Progress of the trace");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "job-cancel";
    button.textContent = "Cancel";
    button.title = "Stop computing this text's trace; the views keep the last one";
    container.replaceChildren(line, bar, button);
  }
  const button = /** @type {HTMLButtonElement} */ (container.querySelector(".job-cancel"));
  button.onclick = () => cancel(); // this job's: the box shows one job at a time
  container.hidden = false;
  const text = jobText(job);
  if (line.textContent !== text) line.textContent = text;
  bar.max = Math.max(1, job.total);
  if (job.remote || job.left_s === null)
    bar.removeAttribute("value"); // a remote deployment's: how far, unknown here
  else bar.value = Math.min(job.done, job.total);
}
