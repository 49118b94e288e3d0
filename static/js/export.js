// Getting things out: the trace as JSON, any plot as PNG, the link to this exact view.

/** Save `text` as a file (the browser's download). */
export function downloadText(text, filename, type = "application/json") {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Save a drawn Plotly plot as a PNG at twice its on-screen size. */
export function downloadPng(plotEl, filename) {
  if (!plotEl || !plotEl.data) return Promise.resolve(false);
  const { width, height } = plotEl.getBoundingClientRect();
  return window.Plotly.downloadImage(plotEl, {
    format: "png", filename, width: Math.round(width), height: Math.round(height), scale: 2,
  }).then(() => true);
}

/** Put `url` on the clipboard; false when the browser does not allow it. */
export async function copyText(url) {
  try {
    await navigator.clipboard.writeText(url);
    return true;
  } catch {
    const area = document.createElement("textarea");
    area.value = url;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.append(area);
    area.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch {
      ok = false;
    }
    area.remove();
    return ok;
  }
}
