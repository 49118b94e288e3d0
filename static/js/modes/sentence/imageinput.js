// The input card's images, for a model that reads them (the model list's reads_images): the
// "Add an image" button (a file picker), an image pasted into the text or the card, or dropped
// on the card; each one a thumbnail with its name, size and a Remove button. Every file is
// checked here against the server's caps (the model list's ``images``: how many, how large, which
// types) before it is read into a data: URL; the server checks again (a 422 is shown as any
// other error). The images live in the sentence state (state.images), never in a share link:
// the card says so while there are any.

import { byId, el } from "../../core/dom.js";
import {
  COLLAPSE_RULE,
  collapsePlan,
  collapsedByDefault,
  imageBlocks,
  imageProblem,
  patchLabels,
  sizeText,
} from "./blocks.js";

/** @typedef {import("../../core/types.js").SentenceState} SentenceState */
/** @typedef {import("../../core/types.js").ModelList} ModelList */
/** @typedef {import("../../core/types.js").ModelInfo} ModelInfo */

/** The caps when the server names none (an older server): the page then sends nothing it
 * would not check. @param {ModelList | null} models */
const capsOf = (models) => models?.images ?? { max_images: 0, max_bytes: 0, max_pixels: 0, types: [] };

/** True when the chosen model reads images. @param {ModelInfo | null} info */
export const readsImages = (info) => Boolean(info?.reads_images);

/**
 * Put the state's images into the card (shown only for a model that reads them).
 * @param {ModelList} models @param {SentenceState} s @param {ModelInfo | null} info
 * @param {(index: number) => void} onRemove
 */
export function renderImages(models, s, info, onRemove) {
  const box = byId("s-images");
  box.hidden = !readsImages(info);
  const caps = capsOf(models);
  const kinds = caps.types.map((t) => t.replace(/^image\//, "").toUpperCase()).join(", ");
  byId("s-image-caps").textContent = caps.max_images
    ? `up to ${caps.max_images} image${caps.max_images === 1 ? "" : "s"}, ${sizeText(caps.max_bytes)} each (${kinds})`
    : "";
  const add = /** @type {HTMLButtonElement} */ (byId("s-image-add"));
  add.disabled = s.images.length >= caps.max_images;
  add.title = add.disabled ? `At most ${caps.max_images} images: remove one first` : "";
  /** @type {HTMLInputElement} */ (byId("s-image-file")).accept = caps.types.join(",");
  byId("s-image-list").replaceChildren(
    ...s.images.map((image, i) => {
      const remove = el("button", {
        type: "button",
        className: "image-remove",
        textContent: "Remove",
        "aria-label": `Remove image ${i + 1}, ${image.name}`,
      });
      remove.addEventListener("click", () => onRemove(i));
      return el("li", { className: "image-item" }, [
        el("img", { src: image.url, alt: `image ${i + 1}: ${image.name}`, width: 48, height: 48 }),
        el("span", { className: "image-name" }, [
          el("b", { textContent: `image ${i + 1}` }),
          ` ${image.name}`,
          el("span", { className: "dim", textContent: ` · ${sizeText(image.size)}` }),
        ]),
        remove,
      ]);
    }),
  );
  byId("s-image-link").hidden = !s.images.length || box.hidden;
}

/** A file read as a data: URL. @param {Blob} file @returns {Promise<string>} */
function dataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error("the file could not be read"));
    reader.readAsDataURL(file);
  });
}

/**
 * Wire the card's image inputs (once): the button and its file picker, paste into the text or
 * the card, drop on the card.
 * @param {{app: import("./parts.js").SentenceApp, modelInfo: () => ModelInfo | null,
 *   renderInputs: () => void, change: ReturnType<typeof import("./change.js").createChange>["change"],
 *   setError: (message: string | null) => void}} ctx
 */
export function wireImages(ctx) {
  const { app, modelInfo } = ctx;
  const file = /** @type {HTMLInputElement} */ (byId("s-image-file"));
  const card = /** @type {HTMLElement} */ (byId("s-images").closest("section"));

  /** Check each file against the caps, read the ones that pass, then a new trace; the first
   * refusal is said in the error line. @param {File[]} files */
  async function add(files) {
    if (!readsImages(modelInfo()) || !files.length) return;
    const caps = capsOf(app.models);
    let problem = null;
    /** @type {import("../../core/types.js").SentenceImage[]} */
    const added = [];
    for (const f of files) {
      const why = imageProblem(f, caps, app.s.images.length + added.length);
      if (why) {
        problem ??= why;
        continue;
      }
      try {
        added.push({ name: f.name || "pasted image", type: f.type, size: f.size, url: await dataUrl(f) });
      } catch (err) {
        problem ??= `images: ${f.name} could not be read (${/** @type {Error} */ (err).message})`;
      }
    }
    if (added.length) {
      ctx.change({ images: [...app.s.images, ...added] }, { delay: 0 });
      ctx.renderInputs();
    }
    if (problem) ctx.setError(problem); // after the new trace asked for, which clears the line
  }
  byId("s-image-add").addEventListener("click", () => file.click());
  file.addEventListener("change", () => {
    const files = [...(file.files ?? [])];
    file.value = ""; // the same file can be added again
    add(files);
  });
  /** The image files of a paste or a drop (none: the event is left to the page). @param {DataTransfer | null} data */
  const imagesOf = (data) => [...(data?.files ?? [])];
  card.addEventListener("paste", (e) => {
    const files = imagesOf(e.clipboardData);
    if (!files.length || !readsImages(modelInfo())) return; // text pastes as text
    e.preventDefault();
    add(files);
  });
  card.addEventListener("dragover", (e) => {
    if (!readsImages(modelInfo()) || !e.dataTransfer?.types.includes("Files")) return;
    e.preventDefault(); // allows the drop
    card.classList.add("dropping");
  });
  card.addEventListener("dragleave", () => card.classList.remove("dropping"));
  card.addEventListener("drop", (e) => {
    card.classList.remove("dropping");
    const files = imagesOf(e.dataTransfer);
    if (!files.length || !readsImages(modelInfo())) return;
    e.preventDefault();
    add(files);
  });
}

/**
 * Remove image `index` of the state (then a new trace).
 * @param {{app: import("./parts.js").SentenceApp, renderInputs: () => void,
 *   change: ReturnType<typeof import("./change.js").createChange>["change"]}} ctx
 * @param {number} index
 */
export function removeImage(ctx, index) {
  ctx.change({ images: ctx.app.s.images.filter((_, i) => i !== index) }, { delay: 0 });
  ctx.renderInputs();
  /** @type {HTMLElement} */ (byId("s-image-add")).focus(); // the button pressed is gone
}

// ---- Image blocks in the views --------------------------------------------------------------

/** True when the views draw each image as one row and column: the reader's choice, else the
 * default (collapsed when an image has many tokens). @param {import("./parts.js").SentenceApp} app */
export function imagesCollapsed(app) {
  return app.s.foldImages ?? collapsedByDefault(app.first?.meta.images);
}

/**
 * The rows a view draws of a part's token view (its `groups` and `labels`), with each image a
 * labelled block, collapsed or not; and the card's "Images: collapsed / expanded" switch and
 * block line put to match (shown only while the trace has images).
 * @param {import("./parts.js").SentenceApp} app
 * @param {{labels: string[], groups: number[][]}} tv
 */
export function imagePlan(app, tv) {
  const blocks = imageBlocks(app.first?.meta.images, tv.groups);
  const collapsed = imagesCollapsed(app);
  const plan = collapsePlan(patchLabels(app.first?.meta.images, tv.groups, tv.labels), blocks, collapsed);
  const box = byId("s-collapse-box");
  box.hidden = !app.first?.meta.images?.length;
  for (const radio of /** @type {NodeListOf<HTMLInputElement>} */ (box.querySelectorAll("input"))) {
    radio.checked = radio.value === (collapsed ? "collapsed" : "expanded");
  }
  const line = byId("s-blocks");
  line.hidden = !blocks.length;
  line.textContent = blocks.length
    ? blocks.map((b) => `${b.label} (${b.tokens} tokens)`).join("; ") +
      (collapsed ? `. ${COLLAPSE_RULE}` : ". Expanded: every patch is its own row and column.")
    : "";
  return {
    blocks,
    plan,
    collapsed,
    /** The original token of drawn row r (a collapsed block: its first). @param {number} r */
    token: (r) => tv.groups[plan.groups[r][0]][0],
    /** The drawn row of an original token, -1 when hidden. @param {number} index */
    row: (index) => plan.groups.findIndex((g) => g.some((r) => tv.groups[r].includes(index))),
  };
}

/**
 * The switch's radios: a choice redraws the views the images' blocks feed.
 * @param ReturnType<typeof import("./change.js").createChange>["change"] change
 */
export function wireCollapse(change) {
  byId("s-collapse-box").addEventListener("change", (e) => {
    change({ foldImages: /** @type {HTMLInputElement} */ (e.target).value === "collapsed" });
  });
}
