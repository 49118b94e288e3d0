// The pictures the reader added to sentence mode's text (upload, paste, drop): each one's data
// URL, the very bytes the trace request carries (its body's `images`, in order), and its file
// name. One list, shared: the input card sets it, the trace request and the Attention on the
// picture card read it. No view in it.

/** @typedef {{dataUrl: string, name: string}} Picture */

/** @type {Picture[]} */
let list = [];

/** The pictures the next trace carries, in order (replacing any before). @param {Picture[]} pictures */
export function setPictures(pictures) {
  list = pictures.map((p) => ({ dataUrl: p.dataUrl, name: p.name }));
}

/** The pictures the next trace carries, in order. @returns {Picture[]} */
export function pictures() {
  return list.slice();
}

/** A file read as a data URL. @param {Blob & {name?: string}} file @returns {Promise<Picture>} */
export function readPicture(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve({ dataUrl: String(reader.result), name: file.name ?? "" });
    reader.onerror = () => reject(reader.error ?? new Error(`${file.name ?? "image"}: could not be read`));
    reader.readAsDataURL(file);
  });
}

/**
 * A file input whose files become the pictures (every change replaces them), then `changed()`.
 * @param {HTMLInputElement} input @param {() => void} changed
 */
export function wirePictureFile(input, changed) {
  input.addEventListener("change", async () => {
    setPictures(await Promise.all([...(input.files ?? [])].map(readPicture)));
    changed();
  });
}
