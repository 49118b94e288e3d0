// Sentence mode's state changes through one function (modes/sentence/change.js), which knows
// which keys changed and what they feed; the "Many texts" card's own state through its own
// change(). Read from the modules' source: any other write fails here, with where it is.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

const ROOT = new URL("../../static/js/modes/sentence/", import.meta.url).pathname;

/** Every module under `dir`, by its path from the mode's folder. @param {string} dir */
function modules(dir = "") {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? modules(join(dir, e.name)) : e.name.endsWith(".js") ? [join(dir, e.name)] : [],
  );
}

/** The lines of `file` that match any of `patterns`, as "file:line: text". */
function writes(file, patterns) {
  return readFileSync(join(ROOT, file), "utf8")
    .split("\n")
    .flatMap((line, i) => (patterns.some((p) => p.test(line)) ? [`${file}:${i + 1}: ${line.trim()}`] : []));
}

// app.s.x = ..., app.s[k] = ..., app.s = ..., app.s.x.push(...), Object.assign(app.s, ...), and
// clampSentence(app.s, ...), the state kept inside a model's shape
const STATE = [
  /app\.s(\.\w+|\[[^\]]+\])*\s*(=(?!=)|\+=|-=)/,
  /app\.s\.\w+\.(push|pop|shift|unshift|splice|sort|reverse|fill)\(/,
  /Object\.assign\(\s*(ctx\.)?app\.s\b/,
  /clampSentence\(/,
];

test("sentence mode writes its state in change.js alone", () => {
  const files = modules();
  assert.ok(files.includes("change.js") && files.includes(join("cards", "model.js")) && files.length > 20);
  const found = files.filter((f) => f !== "change.js").flatMap((f) => writes(f, STATE));
  assert.deepEqual(found, []);
  // and the patterns find what they are for
  const sample = [
    "app.s.layer = 2;",
    "app.s[key] = true;",
    "ctx.app.s.images.splice(0, 1);",
    "Object.assign(app.s, x);",
  ];
  assert.ok(sample.every((line) => STATE.some((p) => p.test(line))));
  assert.ok(!STATE.some((p) => p.test("if (app.s.layer === 2) change({ layer: 3 });")));
});

test("the Many texts card writes its state in its change() alone", () => {
  const own = [/\bs(\.\w+|\[[^\]]+\])\s*(=(?!=)|\+=|-=)/, /\bs\.\w+\.(push|splice)\(/, /Object\.assign\(\s*s\b/];
  const found = writes(join("cards", "corpus.js"), own);
  assert.deepEqual(found, [
    `${join("cards", "corpus.js")}:${lineOf("Object.assign(s, patch);")}: Object.assign(s, patch);`,
  ]);
});

/** The line of the card's change() that writes. @param {string} text */
function lineOf(text) {
  return (
    readFileSync(join(ROOT, "cards", "corpus.js"), "utf8")
      .split("\n")
      .findIndex((l) => l.includes(text)) + 1
  );
}

test("the toy lab's table and config form edit a copy and hand it to the controller", () => {
  const TOY = new URL("../../static/js/modes/toy/", import.meta.url).pathname;
  for (const file of ["table.js", "controls.js"]) {
    const lines = readFileSync(join(TOY, file), "utf8").split("\n");
    // the names the state (or a part of it) is read into, uncopied
    const names = new Set(["getState()"]);
    for (const line of lines) {
      const one = line.match(/const (\w+) = (?:\/\*\*.*?\*\/ )?\(?getState\(\)[\w.]*\)?;/);
      if (one) names.add(one[1]);
      const some = line.match(/const \{([^}]+)\} = getState\(\);/);
      if (some) for (const n of some[1].split(",")) names.add(n.trim());
    }
    const esc = (n) => n.replace(/[()]/g, "\\$&");
    const written = lines.filter((line) =>
      [...names].some((n) =>
        new RegExp(
          `(^|[^\\w.])${esc(n)}((\\.\\w+|\\[[^\\]]+\\])+\\s*=(?!=)|(\\.\\w+)*\\.(push|pop|shift|unshift|splice|sort|fill)\\()`,
        ).test(line),
      ),
    );
    assert.ok(names.size > 2, file); // (the reads are found)
    assert.deepEqual(written, [], file);
    assert.doesNotMatch(lines.join("\n"), /onEdit\(\{\s*structural/, file); // every edit hands its values over
  }
});

test("the Train tab's state changes through its reducer alone", () => {
  const TRAIN = new URL("../../static/js/modes/train/", import.meta.url).pathname;
  const found = readdirSync(TRAIN)
    .filter((f) => f.endsWith(".js"))
    .flatMap((f) =>
      readFileSync(join(TRAIN, f), "utf8")
        .split("\n")
        .flatMap((line, i) =>
          /\bapp\.t(\.\w+)*\s*=(?!=)/.test(line) && !/\bapp\.t = reduce\((ctx\.)?app\.t, /.test(line)
            ? [`${f}:${i + 1}: ${line.trim()}`]
            : [],
        ),
    );
  assert.deepEqual(found, []);
});

test("Learn mode writes the guide's state through its change() alone, and it feeds the guide", async () => {
  const { LEARN_FEEDS } = await import("../../static/js/core/feeds.js");
  const LEARN = new URL("../../static/js/modes/learn/", import.meta.url).pathname;
  const source = readFileSync(join(LEARN, "index.js"), "utf8");
  const keys = [...new Set(Object.values(LEARN_FEEDS).flat())];
  const direct = new RegExp(`\\bapp\\.(${keys.join("|")})(\\.\\w+|\\[[^\\]]+\\])*\\s*(=(?!=)|\\+=|-=|\\+\\+|--)`);
  const mutated = new RegExp(`\\bapp\\.(${keys.join("|")})\\.(add|delete|clear|set|push|splice)\\(`);
  const found = source
    .split("\n")
    .flatMap((line, i) => (direct.test(line) || mutated.test(line) ? [`index.js:${i + 1}: ${line.trim()}`] : []));
  assert.deepEqual(found, []);
  // (the patterns find what they are for)
  assert.ok(["app.n = 2;", "app.progress = x;", "app.tried.add(n);"].every((l) => direct.test(l) || mutated.test(l)));
  assert.ok(!direct.test("if (app.n === s.n) change({ n });"));
  // change() merges the patch and runs what LEARN_FEEDS says; every key it says feeds the guide
  // is one draw() hands guide.render.
  assert.match(source, /function change\(patch, \{ quiet = false \} = \{\}\) \{\n\s+Object\.assign\(app, patch\);/);
  const drawn = source.slice(source.indexOf("function draw()"), source.indexOf("function outline()"));
  const shown = source.slice(source.indexOf("function shownAnswer()"), source.indexOf("function checkFound("));
  assert.ok(drawn.includes("answer: shownAnswer()") && /app\.answer\b/.test(shown) && /app\.carried\b/.test(shown));
  for (const key of LEARN_FEEDS.guide)
    assert.ok(
      drawn.includes(`app.${key}`) || (/app\.(answer|carried)\b/.test(shown) && ["answer", "carried"].includes(key)),
      key,
    );
});
