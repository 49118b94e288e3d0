"""One offline HTML file of a trace (``attnviz export``, ``Trace.save_html``): opened from
file:// in Chromium with every other request refused, every view draws with no console error,
hover values are the trace's float32 numbers to 3 significant digits (numbers.js readable; the
file's parts keep them exact), and the sizes meet the targets (printed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.cli import main
from attnviz.limits import LIMITS
from attnviz.python.html import ExportError, standalone_html
from tests.browser.helpers import ARTIFACTS, AXE, axe_serious, hover_large, screenshot, snap
from tests.python.offline import DANGLING, drawn, opened, parts_of, wait_drawn
from tests.support.oracles import readable

MODEL = "all-MiniLM-L6-v2"
WORDS = (
    "the cat sat on a mat and looked at the dog which was asleep in the sun while birds sang in "
    "the tall trees near the old house by the river"
).split()
MB = 1_000_000


def text_of(n: int) -> str:
    """A text MiniLM reads as exactly ``n`` tokens ([CLS], n - 2 words, [SEP])."""
    return " ".join(WORDS[i % len(WORDS)] for i in range(n - 2))


@pytest.mark.parametrize(("tokens", "cap"), [(128, 1.6 * MB), (512, 3 * MB)])
def test_the_file_draws_every_view_offline_with_readable_hover(browser, tmp_path, tokens, cap):
    trace = attnviz.trace(model=MODEL, text=text_of(tokens), fields="thumbs", thumb=1)
    assert len(trace.tokens) == tokens
    layer, head = 2, 5
    path = trace.save_html(tmp_path / "trace.html", layer=layer, head=head)
    size = path.stat().st_size
    print(f"\nexported file, {tokens} tokens (MiniLM, 6 x 12 heads): {size:,} bytes")
    assert size <= cap
    params = parts_of(path.read_text())
    views = [p for p in params if p["fields"] == "view"]
    assert {"fields": "view", "layer": layer, "head": head, "hide_special": False,
            "merge_words": False} in views  # fmt: skip
    if tokens == 128:
        assert len(views) > 1  # the budget kept more heads exact than the chosen one
    exact = trace.part(fields="attentions", layer=layer, head=head)["attentions"][0, 0]
    audit = tokens == 128  # axe-core once (its run over 512 tokens' labels takes long)
    assert AXE.exists(), "axe-core is missing: run `make install-dev` (npm ci)"
    with opened(browser, path, scripts=[AXE] if audit else []) as (page, errors):
        wait_drawn(page)
        seen = drawn(page)
        assert seen["cells"] == 6 * 12
        assert seen["large"]
        assert seen["headLines"] > 0
        assert seen["qk"] > 0 and not seen["qkUnavailable"]
        assert seen["traj"] > 0
        assert seen["error"] == ""
        i = 7
        j = int(np.argmax(exact[i]))
        tip = hover_large(page, i, j)
        assert f"weight {readable(float(exact[i, j]), 'F32')}" in tip.split("\n")
        # 3-D needs Plotly's full bundle: the file offers 2-D only, and says so.
        assert page.locator("#traj-3d").is_disabled()
        assert page.locator("#s-text").evaluate("t => t.readOnly")
        if audit:  # WCAG 2.x A and AA: nothing serious; every ARIA reference is in the file
            assert axe_serious(page) == []
            assert page.evaluate(DANGLING) == []
        assert errors == []


NOTE = "#{card} .view-refusal"


def test_a_part_the_file_lacks_is_refused_in_words(browser, tmp_path):
    """A head whose exact weights did not fit: the model view's own card says what the file has
    of it and which heads it holds exactly; the error line stays empty."""
    trace = attnviz.trace(model=MODEL, text=text_of(40), fields="thumbs", thumb=1)
    path = trace.save_html(tmp_path / "t.html", layer=1, head=0, budget=0)
    with opened(browser, path) as (page, errors):
        wait_drawn(page)
        page.locator('#mv-grid button.mv-cell[data-layer="4"][data-head="3"]').click()
        note = page.locator(NOTE.format(card="model-view-card"))
        note.filter(has_text="Still showing").wait_for()
        # In plain words, counting from 1 as the page does (issue 41): no command, no params.
        assert note.inner_text() == (
            "This file has no exact weights for layer 5, head 4, only its small 8-bit thumbnail in "
            "the model view's grid; it holds layer 2 head 1 exactly. Still showing layer 2, head 1, "
            "drawn before."
        )
        assert drawn(page)["error"] == ""
        assert errors == []


def test_a_head_the_file_lacks_is_said_in_its_card_by_keyboard(browser, tmp_path):
    """Issue 41's walk: in the query-key card, a head chosen by keyboard whose queries and keys
    the file lacks (its exact weights it has). The card says so in one true sentence, naming the
    head chosen and the one its drawing still shows, in a polite live region; not in the error
    line over the controls. axe-core finds nothing serious; screenshots at 1280 and 480 px."""
    trace = attnviz.trace(model=MODEL, text=text_of(40), fields="thumbs", thumb=1)
    path = trace.save_html(tmp_path / "t.html", layer=5, head=11)
    held = parts_of(path.read_text())
    assert {"fields": "view", "layer": 5, "head": 10, "hide_special": False,
            "merge_words": False} in held  # fmt: skip
    assert not any(p["fields"].startswith("queries") and p["head"] == 10 for p in held)
    with opened(browser, path, scripts=[AXE]) as (page, errors):
        wait_drawn(page)
        page.focus("#qk-head")
        page.keyboard.press("ArrowUp")  # head 12 -> head 11
        assert page.locator("#qk-head").input_value() == "10"
        note = page.locator(NOTE.format(card="qk-card"))
        note.filter(has_text="Still showing").wait_for()
        text = note.inner_text()
        assert text.startswith(
            "This file has no queries and keys for layer 6, head 11, only its exact weights and its "
            "small 8-bit thumbnail in the model view's grid; it holds the queries and keys of layer "
            "6 head 12. Still showing layer 6, head 12, token "
        ), text
        assert "Still showing layer 6, head 12, token" in text and text.endswith("drawn before.")
        assert note.get_attribute("role") == "status"
        assert page.locator("#qk-card").get_attribute("data-refused") is not None
        assert drawn(page)["error"] == "" and page.locator("#error").is_hidden()
        assert "queries and keys" not in page.locator("#error").inner_text()
        assert drawn(page)["qk"] > 0  # the drawing is kept
        # The model view has this head exactly: it draws it, with no note.
        assert page.locator(NOTE.format(card="model-view-card")).inner_text() == ""
        assert axe_serious(page) == []
        note.scroll_into_view_if_needed()
        screenshot(page, "export-refused-head-1280.png")
        page.set_viewport_size({"width": 480, "height": 900})
        note.scroll_into_view_if_needed()
        screenshot(page, "export-refused-head-480.png")
        assert errors == []


MARKUP = 'an <!-- aside --> then </script><script>alert("x")</script> & <b>bold</b> done'
INTACT = """() => {
  const config = document.getElementById('attnviz-config');
  return {
    text: JSON.parse(config.textContent).request.text,
    next: config.nextElementSibling.id,
    spilled: [...document.scripts].filter((s) => s !== config && s.textContent.includes('alert(')).length,
  };
}"""


def test_a_text_of_markup_round_trips_through_the_file(browser, tmp_path):
    """A text holding ``<!--``, ``</script>``, ``<script>`` and ``&`` (issue 42): the file's
    config block is still JSON (the text escaped as \\u003c, never ``<\\!--``), the page draws
    every view with no error, its text box holds the text exactly, and the tokens read as the
    text's own. Screenshots of the input card at 1280 and 480 px."""
    trace = attnviz.trace(model=MODEL, text=MARKUP, fields="thumbs", thumb=1)
    path = trace.save_html(tmp_path / "markup.html", layer=1, head=2)
    html = path.read_text()
    block = re.search(r'id="attnviz-config">([^<]*)</script>', html)
    assert block is not None  # the block holds no "<": nothing in it ends the element early
    assert json.loads(block.group(1))["request"]["text"] == MARKUP
    assert "<\\!--" not in html
    with opened(browser, path, scripts=[AXE]) as (page, errors):
        wait_drawn(page)
        seen = drawn(page)
        assert seen["cells"] == 6 * 12 and seen["large"] and seen["traj"] > 0
        assert seen["error"] == ""
        assert page.locator("#s-text").input_value() == MARKUP
        # The config element ends where the file ends it, and no script holds the text's own.
        assert page.evaluate(INTACT) == {"text": MARKUP, "next": "attnviz-modules", "spilled": 0}
        assert axe_serious(page) == []
        card = page.locator("section.sentence-input")
        ARTIFACTS.mkdir(exist_ok=True)
        snap(card, path=str(ARTIFACTS / "export-markup-text-1280.png"))
        page.set_viewport_size({"width": 480, "height": 900})
        snap(card, path=str(ARTIFACTS / "export-markup-text-480.png"))
        assert errors == []


def test_attnviz_export_writes_the_file(tmp_path, capsys):
    out = tmp_path / "cli.html"
    assert main(["export", "--text", "The animal didn't cross the street", "-o", str(out),
                 "--layer", "3", "--head", "4", "--query", "3", "--key", "2",
                 "--hide-special"]) == 0  # fmt: skip
    assert f"{out}:" in capsys.readouterr().out
    html = out.read_text()
    config = json.loads(re.search(r'id="attnviz-config">([^<]*)<', html).group(1))
    assert config["selection"] | {"views": None} == {"layer": 2, "head": 3, "query": 2,
        "key": 1, "hide_special": True, "merge_words": False, "views": None}  # fmt: skip
    assert {"fields": "qk_attribution", "layer": 2, "head": 3, "query": 2, "key": 1,
            "top": LIMITS.attribution_top} in parts_of(html)  # fmt: skip
    assert {"fields": "view", "layer": 2, "head": 3, "hide_special": True,
            "merge_words": False} in parts_of(html)  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--layer", "7"], "--layer: 7 is past the last (6"),
        (["--head", "0"], "--head: counts from 1"),
        (["--query", "99"], "--query: 99 is past the last"),
    ],
)
def test_attnviz_export_refuses_a_selection_the_trace_lacks(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) as exc:
        main(["export", "--text", "a short text", "-o", str(tmp_path / "x.html"), *args])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def _unwritable(tmp_path: Path) -> Path:
    """A folder this process may not write in: a read-only one of its own, or for root (whom
    no mode stops) /sys, where sysfs makes no file."""
    if os.geteuid() == 0:
        return Path("/sys")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o500)
    return folder


@pytest.mark.parametrize(
    ("output", "rule"),
    [
        (lambda t: t / "missing" / "x.html", "the folder {t}/missing does not exist"),
        (lambda t: t, "{t} is a folder; give the HTML file's own path"),
        (lambda t: t / "a-file" / "x.html", "{t}/a-file is a file, not a folder"),
        (lambda t: _unwritable(t) / "x.html", "x.html cannot be written here"),
    ],
    ids=["missing-folder", "a-folder", "under-a-file", "unwritable"],
)
def test_attnviz_export_refuses_an_output_it_cannot_write_before_tracing(
    tmp_path, capsys, output, rule
):
    """Issue 42: -o is checked before the trace is computed (the model named does not exist:
    had the trace run first, its refusal would be the model's), in one line naming the option
    and the rule, exit code 2, no traceback; nothing is left behind."""
    (tmp_path / "a-file").write_text("not a folder")
    target = output(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(SystemExit) as exc:
        main(["export", "--model", "no-such-model", "--text", "a text", "-o", str(target)])
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("attnviz export: error: -o/--output: "), lines[0]
    assert rule.format(t=tmp_path) in lines[0]
    assert "no-such-model" not in captured.err and "Traceback" not in captured.err
    assert sorted(tmp_path.rglob("*")) == before


def test_an_output_that_exists_is_kept_until_the_file_is_written(tmp_path, capsys):
    """Checking -o opens nothing for writing that it would cut: a file already there keeps its
    bytes when the trace is refused, and is replaced by the export when it succeeds."""
    out = tmp_path / "old.html"
    out.write_text("old")
    with pytest.raises(SystemExit) as exc:
        main(["export", "--model", "no-such-model", "--text", "a text", "-o", str(out)])
    assert exc.value.code == 2 and out.read_text() == "old"
    assert "no-such-model" in capsys.readouterr().err
    assert main(["export", "--text", "a text", "-o", str(out)]) == 0
    assert out.read_text().startswith("<!doctype html>")


@pytest.mark.slow
def test_the_command_refuses_a_missing_folder_in_one_line(tmp_path):
    """The console command itself (a process of its own): one line on stderr, exit code 2."""
    out = subprocess.run(
        [sys.executable, "-m", "attnviz", "export", "--text", "a text", "-o",
         str(tmp_path / "missing" / "x.html")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr == (
        f"attnviz export: error: -o/--output: the folder {tmp_path / 'missing'} does not exist; "
        "create it first, or name a file in one that does\n"
    )


def test_a_selection_out_of_range_is_refused_by_name():
    trace = attnviz.trace(model=MODEL, text="a short text", fields="thumbs", thumb=1)
    with pytest.raises(ExportError, match="head: 12 is out of range"):
        standalone_html(trace, head=12)
    with pytest.raises(ExportError, match="query: token 0 is a special token"):
        standalone_html(trace, query=0, hide_special=True)
    with pytest.raises(ExportError, match="views: no view named 'nope'"):
        standalone_html(trace, views=["nope"])


def test_the_vendored_plotly_is_the_plotly_wheels_version():
    """Every vendored bundle (the npm partial bundles: the files' basic and cartesian ones, the
    page's cartesian and gl3d ones) and the plotly wheel's own are one plotly.js version: the
    views are drawn by the same code. Each bundle has its licence beside it."""
    import plotly

    from attnviz.python.page import PLOTLY
    from attnviz.web import PLOTLY_2D, PLOTLY_3D, find_dir

    def version(text: str) -> str:
        found = re.search(r"plotly\.js (?:\((?:basic|cartesian|gl3d) - minified\) )?v(\d+\.\d+\.\d+)",
                          text[:400])  # fmt: skip
        assert found, text[:200]
        return found.group(1)

    wheel = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    wheel_text = wheel.read_text()
    static = find_dir("static")
    bundles = {**PLOTLY, "cartesian": PLOTLY_2D, "gl3d": PLOTLY_3D}
    assert PLOTLY["cartesian"] == PLOTLY_2D  # the page and the files share one cartesian bundle
    assert sorted(p.name for p in (static / "vendor").glob("*.min.js")) == sorted(
        Path(path).name for path in bundles.values()
    )
    for name, path in bundles.items():
        bundle = (static / path).read_text()
        assert f"({name} - minified)" in bundle[:400]
        assert "Licensed under the MIT license" in bundle[:400]
        assert version(bundle) == version(wheel_text)
        licence = (static / path).with_name(f"plotly-{name}.LICENSE").read_text()
        assert "MIT License" in licence or "Permission is hereby granted" in licence


CUT = """
import { readFileSync } from "node:fs";
import { decodeCompact } from "./static/js/core/compact.js";
import { cutRow } from "./static/js/offline/source.js";
const read = (p) => { const b = readFileSync(p); return decodeCompact(b.buffer.slice(b.byteOffset, b.byteOffset + b.length)); };
const [whole, row, q] = process.argv.slice(1);
const cut = cutRow(read(whole), Number(q)), want = read(row);
const plain = (c) => JSON.stringify({ meta: c.meta, arrays: Object.fromEntries(Object.entries(c.arrays)
  .map(([k, a]) => [k, { dtype: a.dtype, shape: a.shape, data: Array.from(a.data) }])) });
process.stdout.write(String(plain(cut) === plain(want)));
"""


@pytest.mark.parametrize(
    ("params", "query"),
    [
        ({"fields": "queries,keys,scores,attentions", "layer": 1, "head": 4}, 3),
        (
            {
                "fields": "queries,keys,scores,attentions,view",
                "layer": 0,
                "head": 2,
                "hide_special": True,
            },
            5,
        ),  # fmt: skip
        ({"fields": "attentions", "layer": 2}, 7),
    ],
)
def test_a_row_cut_in_the_file_is_the_servers_row(tmp_path, params, query):
    """source.js's cutRow on a part of every row equals the part the server gives for that
    query: fields, shapes, dtypes and every number."""
    import subprocess

    trace = attnviz.trace(
        model=MODEL, text="The animal didn't cross the street", fields="entropy_mean"
    )
    (tmp_path / "whole").write_bytes(trace.source(params))
    (tmp_path / "row").write_bytes(trace.source({**params, "query": query}))
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        ["node", "--input-type=module", "-e", CUT, str(tmp_path / "whole"), str(tmp_path / "row"),
         str(query)],
        cwd=repo, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert out.stdout == "true", out.stderr


WHY = """() => { const box = document.querySelector('#why-view'), w = box && box.__why;
  if (!w) return null;
  const a = w.attribution, N = a.components.length;
  return {query: a.query, key: a.key, score: a.score, sum: Array.from(a.matrix.data).reduce(
    (s, v) => s + v, 0), n: N, keys: w.rows.map((r) => r.key),
    hidden: document.querySelector('#why-card').hidden}; }"""


def test_why_this_score_draws_in_the_file_from_the_parts_it_holds(browser, tmp_path):
    """A file (the notebook's display is one) shows Why this score at its selection: the query's
    winning key by default, or the key given; its matrix sums to the trace's score there, and
    the other keys its key view offers are in the file while they fit."""
    trace = attnviz.trace(model=MODEL, text=text_of(24), fields="thumbs", thumb=1)
    layer, head, query = 2, 5, 7
    scores = trace.part(fields="scores", layer=layer, head=head)["scores"][0, 0]
    weights = trace.part(fields="attentions", layer=layer, head=head)["attentions"][0, 0]
    winner = int(np.argmax(weights[query]))
    path = trace.save_html(tmp_path / "why.html", layer=layer, head=head, query=query)
    config = json.loads(re.search(r'id="attnviz-config">([^<]*)<', path.read_text()).group(1))
    assert config["selection"]["key"] == winner and "why" in config["selection"]["views"]
    held = [p["key"] for p in parts_of(path.read_text()) if p["fields"] == "qk_attribution"]
    assert held[0] == winner and len(held) == 12  # the key view's keys, largest weights first
    with opened(browser, path) as (page, errors):
        wait_drawn(page)
        page.locator("#why-card").scroll_into_view_if_needed()
        page.wait_for_function(f"({WHY})() !== null")
        got = page.evaluate(f"({WHY})()")
        assert not got["hidden"] and (got["query"], got["key"]) == (query, winner)
        assert abs(got["sum"] - float(scores[query, winner])) < 1e-4
        assert abs(got["score"] - float(scores[query, winner])) < 1e-4
        assert errors == []
    other = int(np.argsort(-weights[query], kind="stable")[3])
    path = trace.save_html(tmp_path / "key.html", layer=layer, head=head, query=query, key=other)
    with opened(browser, path) as (page, errors):
        wait_drawn(page)
        page.locator("#why-card").scroll_into_view_if_needed()
        page.wait_for_function(f"({WHY})() !== null")
        got = page.evaluate(f"({WHY})()")
        assert got["key"] == other and abs(got["sum"] - float(scores[query, other])) < 1e-4
        assert errors == []


def test_a_why_key_the_trace_cannot_show_is_refused_by_name(tmp_path):
    trace = attnviz.trace(model=MODEL, text="a short text", fields="thumbs", thumb=1)
    with pytest.raises(ExportError, match="key: 9 is out of range"):
        standalone_html(trace, key=9)
    with pytest.raises(ExportError, match="key: only Why this score has a key"):
        standalone_html(trace, key=1, views=["model"])


WINDOW = """
import { readFileSync } from "node:fs";
import { decodeCompact } from "./static/js/core/compact.js";
import { cutWindow } from "./static/js/offline/source.js";
const read = (p) => { const b = readFileSync(p); return decodeCompact(b.buffer.slice(b.byteOffset, b.byteOffset + b.length)); };
const [whole, part, start, count] = process.argv.slice(1);
const cut = cutWindow(read(whole), Number(start), Number(count)), want = read(part);
const plain = (c) => { const meta = { ...c.meta, top_k: { ...c.meta.top_k, vocab: null },
    lens: { ...c.meta.lens, vocab: null } };
  return JSON.stringify({ meta, arrays: Object.fromEntries(Object.entries(c.arrays)
    .map(([k, a]) => [k, { dtype: a.dtype, shape: a.shape, data: Array.from(a.data) }])) }); };
const named = (c) => Object.entries({ ...c.meta.top_k.vocab, ...c.meta.lens.vocab });
const labels = Object.fromEntries(named(cut));
const same = plain(cut) === plain(want) && named(want).every(([id, s]) => labels[id] === s);
process.stdout.write(String(same));
"""


@pytest.mark.parametrize(("start", "count"), [(0, 3), (4, 9), (13, 3)])
def test_a_predictions_window_cut_in_the_file_is_the_servers(tmp_path, tiny_gpt2_dir, start, count):
    """source.js's cutWindow on the file's widest Predictions window equals the part the server
    gives for a narrower one inside it (every array, shape and number; each token's label)."""
    import subprocess

    from attnviz.python.html import lens_window

    trace = attnviz.trace(model=str(tiny_gpt2_dir), text=text_of(18), fields="entropy_mean")
    wide = lens_window(len(trace.tokens), 8)
    assert wide["pos_count"] == 16 and wide["pos_start"] <= start
    (tmp_path / "whole").write_bytes(trace.source(wide))
    narrow = {"fields": "top_k,lens", "pos_start": start, "pos_count": count}
    (tmp_path / "part").write_bytes(trace.source(narrow))
    repo = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        ["node", "--input-type=module", "-e", WINDOW, str(tmp_path / "whole"),
         str(tmp_path / "part"), str(start), str(count)],
        cwd=repo, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert out.stdout == "true", out.stderr


PUSHED = """() => { const c = document.querySelector('#pushed-view .pushed-chart');
  if (!c) return null;
  return {logit: +c.dataset.logit, token: +c.dataset.token, versus: c.dataset.versus,
    sum: [...document.querySelectorAll('#pushed-view rect.pushed-bar')]
      .reduce((s, r) => s + +r.dataset.value, 0),
    lens: document.querySelectorAll('#lens-view .lens-cell').length}; }"""


def test_the_predictions_and_what_pushed_this_draw_in_the_file(browser, tmp_path, tiny_gpt2_dir):
    """A causal model's file (the notebook's display is one) draws the Predictions card and What
    pushed this at its query from the parts it holds: the bars sum to the logit the trace's own
    logit attribution gives, for the top prediction and for the next token."""
    trace = attnviz.trace(model=str(tiny_gpt2_dir), text=text_of(18), fields="thumbs", thumb=1)
    query = 6
    path = trace.save_html(tmp_path / "lens.html", layer=1, head=2, query=query)
    held = [p for p in parts_of(path.read_text()) if p["fields"] == "logit_attribution"]
    assert len(held) >= 2 and all(p["position"] == query for p in held)
    want = {p["token"] for p in held if "versus" not in p}  # the top prediction, the next token
    with opened(browser, path) as (page, errors):
        wait_drawn(page)
        page.locator("#lens-card").scroll_into_view_if_needed()
        page.wait_for_function(f"({PUSHED})() !== null")
        for choice in ("top", "next"):
            radio = page.locator(f'#pushed-view input[value="{choice}"]')
            if radio.count() and not radio.is_checked():
                radio.check()
                page.wait_for_function(
                    "() => !document.querySelector('#pushed-view').classList.contains('stale')"
                )
            got = page.evaluate(f"({PUSHED})()")
            part = trace.part(fields="logit_attribution", position=query, token=got["token"])
            logit = part.meta["logit_attribution"]["logit"]
            assert got["token"] in want and got["lens"] > 0
            assert abs(got["logit"] - logit) < 1e-9 and abs(got["sum"] - logit) < 1e-6
        assert errors == []
