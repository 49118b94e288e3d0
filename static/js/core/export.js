// Getting things out: any Plotly plot as PNG, the link to this exact view on the clipboard.

import { plotlyOf } from "./plotly.js";

/** Save a drawn Plotly plot as a PNG at twice its on-screen size. */
export function downloadPng(plotEl, filename) {
  if (!plotEl || !plotEl.data) return Promise.resolve(false);
  const { width, height } = plotEl.getBoundingClientRect();
  return plotlyOf(plotEl)
    .downloadImage(plotEl, {
      format: "png",
      filename,
      width: Math.round(width),
      height: Math.round(height),
      scale: 2,
    })
    .then(() => true);
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
    let ok;
    try {
      ok = document.execCommand("copy");
    } catch {
      ok = false;
    }
    area.remove();
    return ok;
  }
}
