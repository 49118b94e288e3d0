// A step's formula: presentation MathML from the server, brought into the page element by
// element. The string is read by a small XML reader of our own (no innerHTML, no DOMParser),
// every element and attribute is checked against an allow-list, and only then built with
// createElementNS; the browser draws MathML natively. Pure up to buildMath: the reader and the
// check run in Node for the tests.

export const MATHML_NS = "http://www.w3.org/1998/Math/MathML";

/** The presentation elements a formula may use. */
export const ELEMENTS = new Set([
  "math",
  "mrow",
  "mi",
  "mn",
  "mo",
  "mtext",
  "mspace",
  "ms",
  "msup",
  "msub",
  "msubsup",
  "mfrac",
  "msqrt",
  "mroot",
  "mover",
  "munder",
  "munderover",
  "mtable",
  "mtr",
  "mtd",
  "mstyle",
  "mpadded",
  "mphantom",
  "menclose",
]);

/** The attributes they may carry (presentation only: no href, no event handler, no style). */
export const ATTRIBUTES = new Set([
  "display",
  "mathvariant",
  "stretchy",
  "fence",
  "separator",
  "lspace",
  "rspace",
  "accent",
  "accentunder",
  "columnalign",
  "rowalign",
  "rowspacing",
  "columnspacing",
  "linethickness",
  "form",
  "largeop",
  "movablelimits",
  "symmetric",
  "scriptlevel",
  "displaystyle",
  "width",
  "height",
  "depth",
  "notation",
  "minsize",
  "maxsize",
]);

/** The longest formula read (characters): a formula is a line or two of math. */
export const MAX_CHARS = 20_000;

const ENTITIES = /** @type {Record<string, string>} */ ({ amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" });

/**
 * A node of the formula's tree: an element (name, attributes, children) or a text.
 * @typedef {{name: string, attrs: Record<string, string>, children: MathNode[]} | {text: string}} MathNode
 */

/** Text with its entities replaced; an entity not of XML's five or a number throws. @param {string} s */
function unescape(s) {
  return s.replace(/&([^;\s&]*);?/g, (whole, name) => {
    if (!whole.endsWith(";")) throw new Error(`formula: "&${name}" is not a complete entity`);
    const num = /^#(?:x([0-9a-fA-F]{1,6})|([0-9]{1,7}))$/.exec(name);
    if (num) {
      const code = num[1] ? parseInt(num[1], 16) : Number(num[2]);
      if (code < 1 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
        throw new Error(`formula: &${name}; is not a character`);
      }
      return String.fromCodePoint(code);
    }
    if (name in ENTITIES) return ENTITIES[name];
    throw new Error(`formula: the entity &${name}; is not one of &amp; &lt; &gt; &quot; &apos; or a number`);
  });
}

/**
 * Read a MathML string into a tree: one root element, well-formed, nothing but elements,
 * attributes (quoted) and text; comments, CDATA, processing instructions and doctypes throw.
 * @param {string} text
 * @returns {MathNode}
 */
export function parseMarkup(text) {
  if (typeof text !== "string") throw new Error("formula: not a string");
  if (text.length > MAX_CHARS) throw new Error(`formula: longer than ${MAX_CHARS} characters`);
  const tag = /<(\/?)([A-Za-z][\w.-]*)((?:\s+[A-Za-z_][\w.:-]*\s*=\s*(?:"[^"<]*"|'[^'<]*'))*)\s*(\/?)>/y;
  const attr = /\s+([A-Za-z_][\w.:-]*)\s*=\s*(?:"([^"<]*)"|'([^'<]*)')/g;
  /** @type {{name: string, attrs: Record<string, string>, children: MathNode[]}[]} */
  const open = [];
  /** @type {MathNode | null} */
  let root = null;
  let i = 0;
  while (i < text.length) {
    const lt = text.indexOf("<", i);
    const end = lt < 0 ? text.length : lt;
    if (end > i) {
      const chunk = text.slice(i, end);
      if (open.length) open[open.length - 1].children.push({ text: unescape(chunk) });
      else if (chunk.trim()) throw new Error("formula: text outside the <math> element");
      i = end;
      continue;
    }
    tag.lastIndex = i;
    const m = tag.exec(text);
    if (!m) throw new Error(`formula: cannot read the markup at character ${i + 1} ("${text.slice(i, i + 12)}…")`);
    i = tag.lastIndex;
    const [, closing, name, rawAttrs, selfClosing] = m;
    if (closing) {
      if (rawAttrs || selfClosing) throw new Error(`formula: </${name}> cannot have attributes`);
      const top = open.pop();
      if (!top || top.name !== name) throw new Error(`formula: </${name}> closes ${top ? `<${top.name}>` : "nothing"}`);
      if (!open.length) root = top;
      continue;
    }
    /** @type {Record<string, string>} */
    const attrs = {};
    for (const a of rawAttrs.matchAll(attr)) {
      if (a[1] in attrs) throw new Error(`formula: <${name}> has ${a[1]} twice`);
      attrs[a[1]] = unescape(a[2] ?? a[3] ?? "");
    }
    const node = { name, attrs, children: /** @type {MathNode[]} */ ([]) };
    if (open.length) open[open.length - 1].children.push(node);
    else if (root) throw new Error("formula: more than one root element");
    if (selfClosing) {
      if (!open.length) root = node;
    } else open.push(node);
  }
  if (open.length) throw new Error(`formula: <${open[open.length - 1].name}> is not closed`);
  if (!root) throw new Error("formula: no element");
  return root;
}

/**
 * Throw unless the tree is a <math> of allow-listed elements and attributes only.
 * @param {MathNode} tree
 * @returns {MathNode} the tree
 */
export function checkMath(tree) {
  if (!("name" in tree) || tree.name !== "math") throw new Error("formula: the root element must be <math>");
  /** @param {MathNode} node @param {number} depth */
  const walk = (node, depth) => {
    if (!("name" in node)) return;
    if (depth > 64) throw new Error("formula: nested too deeply");
    if (!ELEMENTS.has(node.name)) throw new Error(`formula: <${node.name}> is not an allowed MathML element`);
    if (node.name === "math" && depth > 0) throw new Error("formula: <math> inside <math>");
    for (const a of Object.keys(node.attrs)) {
      if (!ATTRIBUTES.has(a)) throw new Error(`formula: the attribute ${a} of <${node.name}> is not allowed`);
    }
    for (const c of node.children) walk(c, depth + 1);
  };
  walk(tree, 0);
  return tree;
}

/**
 * The checked tree as MathML elements of `doc`.
 * @param {MathNode} tree @param {Document} doc
 * @returns {Element}
 */
export function buildMath(tree, doc) {
  /** @param {MathNode} node @returns {Node} */
  const build = (node) => {
    if (!("name" in node)) return doc.createTextNode(node.text);
    const el = doc.createElementNS(MATHML_NS, node.name);
    for (const [k, v] of Object.entries(node.attrs)) el.setAttribute(k, v);
    el.append(...node.children.map(build));
    return el;
  };
  return /** @type {Element} */ (build(tree));
}

/**
 * A formula string as a <math> element of the page; throws (naming what is wrong) when it is
 * not allow-listed presentation MathML.
 * @param {string} text @param {Document} [doc]
 */
export function importMath(text, doc = document) {
  return buildMath(checkMath(parseMarkup(text)), doc);
}
