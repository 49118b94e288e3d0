// A token's label as every view draws it and reads it (core/tokens.js): spaces, newlines, tabs,
// control bytes and invisible characters drawn visibly, named aloud, and the rest as it is.
import assert from "node:assert/strict";
import { test } from "node:test";

import { quotedToken, shownToken, spokenToken } from "../../static/js/core/tokens.js";

test("spaces, newlines, tabs and bytes are drawn visibly", () => {
  assert.equal(shownToken(" "), "␣");
  assert.equal(shownToken("  "), "␣␣");
  assert.equal(shownToken(" the"), "␣the");
  assert.equal(shownToken("\n"), "⏎");
  assert.equal(shownToken("\n\n"), "⏎⏎");
  assert.equal(shownToken("\t"), "⇥");
  assert.equal(shownToken("\r\n"), "␍⏎");
  assert.equal(shownToken("\u0006"), "<0x06>");
  assert.equal(shownToken("\u007f"), "<0x7F>");
  assert.equal(shownToken("\u0085"), "<0x85>");
  assert.equal(shownToken("a\u200bb"), "a<U+200B>b");
  assert.equal(shownToken("\u00a0"), "<U+00A0>");
  assert.equal(shownToken("\ufeff"), "<U+FEFF>");
  assert.equal(shownToken(""), "∅");
});

test("a space between two visible characters is a space: only the ends' are marked", () => {
  assert.equal(shownToken("river bank"), "river bank");
  assert.equal(shownToken(" river bank "), "␣river bank␣");
  assert.equal(shownToken("<b>cherry</b> & %{x}"), "<b>cherry</b> & %{x}");
  assert.equal(shownToken("a\nb"), "a⏎b");
  assert.equal(spokenToken("river bank"), "river bank");
  assert.equal(spokenToken("  river bank"), "2 spaces river bank");
});

test("a visible label is drawn as it is, and drawing is idempotent", () => {
  for (const t of ["the", "didn't", "[CLS]", "<0xE2>", "##ing", "é", "日本", "🙂", "<|endoftext|>"]) {
    assert.equal(shownToken(t), t);
  }
  for (const t of [" ", " the", "\n", "\u0006", "a\u200bb"]) assert.equal(shownToken(shownToken(t)), shownToken(t));
});

test("read aloud, each run is named", () => {
  assert.equal(spokenToken(" "), "space");
  assert.equal(spokenToken("   "), "3 spaces");
  assert.equal(spokenToken(" the"), "space the");
  assert.equal(spokenToken("\n"), "newline");
  assert.equal(spokenToken("\n\n"), "2 newlines");
  assert.equal(spokenToken(" \n"), "space newline");
  assert.equal(spokenToken("\u0006"), "byte 0x06");
  assert.equal(spokenToken("\u0006\u0006"), "byte 0x06 byte 0x06");
  assert.equal(spokenToken("<0xE2>"), "byte 0xE2");
  assert.equal(spokenToken("the"), "the");
  assert.equal(spokenToken(""), "empty token");
});

test("quoted in running text, a token with nothing visible of its own is named too", () => {
  assert.equal(quotedToken(" "), "“␣” (space)");
  assert.equal(quotedToken("\n"), "“⏎” (newline)");
  assert.equal(quotedToken("\u0006"), "“<0x06>” (byte 0x06)");
  assert.equal(quotedToken("<0xE2>"), "“<0xE2>” (byte 0xE2)");
  assert.equal(quotedToken(" the"), "“␣the”");
  assert.equal(quotedToken("the"), "“the”");
});
