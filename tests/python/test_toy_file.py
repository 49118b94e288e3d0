"""The toy lab as one offline HTML file (``trace.save_html`` of a toy trace, ``attnviz export
--link``): opened from file:// in Chromium with every other request refused, the toy lab's views
draw with no console error, the heatmaps' and vectors' hover values are the trace's float64
numbers to 3 significant digits (numbers.js readable), axe finds nothing serious; the share-link reader reads links the page writes
(made with Node through core/state.js encodeShare) and refuses bad ones by rule."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Page

import attnviz
from attnviz.cli import main
from attnviz.presets import presets
from attnviz.python.html import ExportError, toy_html
from attnviz.python.link import LinkError, read_link
from tests.browser.helpers import AXE, axe_serious
from tests.python.offline import DANGLING, opened, wait_drawn
from tests.support.oracles import readable

ROOT = Path(__file__).resolve().parents[2]
TABLE = {
    "tokens": ["a", "b", "c", "d", "e"],
    "embeddings": [[1, 0, 0, 0.5], [0, 1, 0.25, 0], [0, 0, 1, 0], [0.2, 0.3, 0, 1], [1, 1, 0, 0]],
    "config": {"layers": 2, "heads": 2, "projections": "random", "seed": 3, "residual": True},
}


def heat_hover(page: Page, plot: str) -> list[list[str]]:
    """The hover text of each cell of a heatmap (its customdata's third field)."""
    return page.evaluate(
        f"() => document.getElementById('{plot}').data[0].customdata.map((r) => r.map((c) => c[2]))"
    )


def hovers(kind: str, m: np.ndarray) -> list[list[str]]:
    """The hover texts of a heatmap of `m` (float64): "weight 0.25", the number as numbers.js
    readable() writes it; a masked score's words."""
    return [[f"{kind} {readable(float(v))}" if np.isfinite(v) else "masked (−∞ before the softmax)"
             for v in row] for row in m]  # fmt: skip


def test_the_toy_file_draws_every_view_offline_with_readable_hover(browser, tmp_path):
    trace = attnviz.trace(**TABLE)
    path = trace.save_html(tmp_path / "toy.html", layer=1, head=1)
    size = path.stat().st_size
    print(f"\ntoy file, 5 tokens x 4 dims, 2 x 2 heads: {size:,} bytes")
    with opened(browser, path, scripts=[AXE]) as (page, errors):
        wait_drawn(page)
        assert page.locator("#error").is_hidden()
        # Drawn as heatmaps (a bundle without them draws the data as lines, silently).
        for plot in ("scores-plot", "weights-plot"):
            assert page.locator(f"#{plot} .heatmaplayer image").count() == 1, plot
        # The first head: its scores and weights, the trace's (float64) to 3 significant digits.
        assert heat_hover(page, "weights-plot") == hovers("weight", trace["attentions"][1, 1])
        assert heat_hover(page, "scores-plot") == hovers("score", trace["scores"][1, 1])
        # Another head, from the file's parts.
        before = page.evaluate("document.documentElement.dataset.views || '0'")
        page.select_option("#att-layer", "0")
        page.wait_for_function(f"(document.documentElement.dataset.views || '0') !== '{before}'")
        before = page.evaluate("document.documentElement.dataset.views")
        page.select_option("#att-head", "0")
        page.wait_for_function(f"document.documentElement.dataset.views !== '{before}'")
        assert heat_hover(page, "weights-plot") == hovers("weight", trace["attentions"][0, 0])
        # The vectors: the still picture in 2-D (no 3-D trace in the cartesian bundle, no rotate
        # button), every PCA coordinate in the hover (3 significant digits) and, exactly, in the
        # points' data.
        kinds = page.evaluate(
            "() => document.getElementById('vectors-plot').data.map((t) => t.type)"
        )
        assert kinds and set(kinds) == {"scatter"}
        after = page.evaluate(
            "() => document.getElementById('vectors-plot').data.find((t) => t.uid === 'after').hovertext"
        )
        coords = trace["projection.coords"][2]  # after the last layer (the slider's default)
        for i, tip in enumerate(after):
            got = re.findall(r"= (\S+?)(?:<br>|$)", tip)
            assert got == [readable(v) for v in coords[i].tolist()]
        points = page.evaluate(
            "() => document.getElementById('vectors-plot').data.find((t) => t.uid === 'after')"
            ".customdata"
        )
        assert points == coords.tolist()
        assert page.locator("#vec-rotate").is_hidden()
        # The distances and before/after drawn; the table read only, its CSV still offered.
        assert page.locator(
            "#distances-plot .js-plotly-plot, #distances-plot.js-plotly-plot"
        ).count()
        assert page.locator("#before-after tbody tr").count() == 5
        assert page.locator("#embeddings input.value").first.evaluate("e => e.readOnly")
        assert page.locator("#cfg-layers").is_disabled()
        assert page.locator("#export-csv").is_enabled()
        assert "still picture" in page.locator("#offline-note").inner_text()
        assert axe_serious(page) == []
        assert page.evaluate(DANGLING) == []
        assert errors == []


def test_a_three_dimensional_table_draws_its_first_two_axes(browser, tmp_path):
    """d = 3 (the apple preset): the live page's arrows are 3-D; the file draws two axes and
    names all three in each hover."""
    p = presets()[0]
    trace = attnviz.trace(tokens=p.tokens, embeddings=p.embeddings, config=p.config.model_dump())
    path = trace.save_html(tmp_path / "apple.html")
    with opened(browser, path) as (page, errors):
        wait_drawn(page)
        kinds = page.evaluate(
            "() => document.getElementById('vectors-plot').data.map((t) => t.type)"
        )
        assert set(kinds) == {"scatter"}
        tip = page.evaluate(
            "() => document.getElementById('vectors-plot').data.find((t) => t.uid === 'after').hovertext[1]"
        )
        last = trace["hidden_states"][trace.layers][1]
        assert re.findall(r"= (\S+?)(?:<br>|$)", tip) == [readable(v) for v in last.tolist()]
        assert errors == []


def test_a_toy_selection_out_of_range_is_refused_by_name():
    trace = attnviz.trace(**TABLE)
    with pytest.raises(ExportError, match=r"^head: 2 is out of range \(0 to 1\)"):
        toy_html(trace, head=2)
    with pytest.raises(ExportError, match=r"^view\.vlayer: 3 is out of range \(0 to 2\)"):
        toy_html(trace, view={"vlayer": 3})
    with pytest.raises(ExportError, match=r"^query: a toy trace's file has none"):
        trace.to_html(query=1)


# ---- Share links ----------------------------------------------------------------------------


def link_of(raw: bytes) -> str:
    """``#s=`` and the base64url of ``raw``, unpadded (as the page writes it)."""
    return "#s=" + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def page_link(mode: str, toy: dict | None, sentence: dict | None, *, context: bool = True) -> str:
    """The hash the page writes (core/state.js encodeShare, run in Node), with the server's
    presets as its context (a preset's table written as its id) when ``context``."""
    from attnviz.limits import LIMITS
    from attnviz.schemas.common import ToyConfig

    ctx = {"presets": [p.model_dump() for p in presets()], "limits": LIMITS.model_dump(),
           "defaults": ToyConfig().model_dump()}  # fmt: skip
    script = (
        "import { encodeShare, normalize } from './static/js/core/state.js';"
        "const [mode, toy, sentence, ctx, useCtx] = JSON.parse(process.argv[1]);"
        "if (toy) normalize(toy, ctx.limits);"
        "process.stdout.write(encodeShare(mode, toy, sentence, useCtx ? ctx : undefined));"
    )
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script, json.dumps([mode, toy, sentence, ctx, context])],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return out.stdout


def toy_state(tokens, axes, embeddings, config, preset=None, view=None) -> dict:
    from attnviz.schemas.common import ToyConfig

    n = len(tokens)
    return {"preset": preset, "tokens": tokens, "axes": axes, "embeddings": embeddings,
            "config": {**ToyConfig().model_dump(), **config},
            "view": view or {"layer": 0, "head": 0, "vlayer": config.get("layers", 1),
                             "a": 1, "b": n - 1, "trails": True}}  # fmt: skip


def test_a_link_of_a_preset_by_its_id_is_its_table():
    p = presets()[1]
    state = toy_state(p.tokens, p.axes, p.embeddings, {**p.config.model_dump(), "layers": 2}, p.id)
    link = page_link("toy", state, None)
    raw = json.loads(base64.urlsafe_b64decode(link[3:] + "=="))
    assert raw["v"] == 3 and "tokens" not in raw["toy"]  # written as the preset's id
    got = read_link("http://127.0.0.1:8000/" + link)
    assert got.mode == "toy"
    assert got.toy["tokens"] == p.tokens and got.toy["embeddings"] == p.embeddings
    assert got.toy["config"]["layers"] == 2
    assert got.preset == p.id


def test_a_link_of_an_edited_table_and_a_v1_link():
    state = toy_state(["x", "y", "z"], ["u", "v"], [[1, 2], [3, 4.5], [0, -1]],
                      {"heads": 2, "mask": "causal"}, view={"layer": 0, "head": 1, "vlayer": 1,
                                                             "a": 0, "b": 2, "trails": False})  # fmt: skip
    got = read_link(page_link("toy", state, None))
    assert got.toy["embeddings"] == [[1, 2], [3, 4.5], [0, -1]]
    assert got.toy["config"]["mask"] == "causal" and got.toy["config"]["heads"] == 2
    assert got.view == {"layer": 0, "head": 1, "vlayer": 1, "a": 0, "b": 2, "trails": False}
    # v1: the toy state itself (core/state.js encodeState)
    v1 = {"v": 1, **state}
    hash_ = link_of(json.dumps(v1).encode())
    assert read_link(hash_).toy["tokens"] == ["x", "y", "z"]


def test_a_sentence_link():
    sentence = {"model": "m", "text": "The cat sat", "layer": 1, "head": 2, "heads": [2],
                "query": 1, "key": 0, "hideSpecial": False, "mergeWords": False, "picked": None,
                "dims": 2, "allKeys": False, "peak": False, "aggregate": "head",
                "generate": None, "step": None}  # fmt: skip
    got = read_link(page_link("sentence", None, sentence))
    assert got.mode == "sentence"
    assert got.sentence == {"model": "m", "text": "The cat sat", "layer": 1, "head": 2, "query": 1,
                            "key": 0, "hide_special": False, "merge_words": False}  # fmt: skip


@pytest.mark.parametrize(
    ("link", "rule"),
    [
        ("http://x/#t=abc", "link: no #s= state"),
        ("#s=***", "link: #s= is not base64url"),
        (link_of(b"[1,2"), "link: the state is not JSON"),
        (link_of(b'{"v":3,"mode":"toy"}'), "link: no toy table"),
        (link_of(b'{"v":3,"mode":"toy","toy":{"preset":"nope"}}'),
         "link: toy.preset: no preset named 'nope'"),
        (link_of(b'{"v":9}'), "link: v: 9 is not a link format"),
        (link_of(
            b'{"v":3,"mode":"toy","toy":{"tokens":["a"],"axes":["x"],"embeddings":[[1,2]]}}'),
         "link: toy.embeddings"),
        (link_of(b'{"v":3,"mode":"sentence","sentence":{}}'),
         "link: sentence.text"),
    ],
)  # fmt: skip
def test_bad_links_are_refused_by_rule(link, rule):
    with pytest.raises(LinkError) as err:
        read_link(link)
    assert str(err.value).startswith(rule), str(err.value)


def test_attnviz_export_link_writes_the_toy_file(tmp_path, capsys):
    p = presets()[0]
    state = toy_state(p.tokens, p.axes, p.embeddings, p.config.model_dump(), p.id)
    out = tmp_path / "toy.html"
    assert main(["export", "--link", page_link("toy", state, None), "-o", str(out)]) == 0
    html = out.read_text()
    assert 'data-mode="toy"' in html and "offline/toy.js" in html
    with pytest.raises(SystemExit) as exc:
        main(["export", "--link", "#s=***", "-o", str(tmp_path / "bad.html")])
    assert exc.value.code == 2
    assert "link: #s= is not base64url" in capsys.readouterr().err
    assert not (tmp_path / "bad.html").exists()


def test_a_csv_the_text_file_lacks_says_so_in_the_error_line(browser, tmp_path):
    """Sentence mode's CSV buttons in a file without their parts (budget 0): the error line says
    what the file holds; no unhandled rejection. With room, the parts are in the file."""
    trace = attnviz.trace(model="all-MiniLM-L6-v2", text="The cat sat on the mat", fields="thumbs",
                          thumb=1)  # fmt: skip
    lean = trace.save_html(tmp_path / "lean.html", views=["model"], budget=0)
    with opened(browser, lean) as (page, errors):
        wait_drawn(page)
        assert page.locator("#traj-card").is_hidden() and page.locator("#qk-card").is_hidden()
        page.click("#mv-downloads > summary")
        page.click("#mv-csv-states")
        page.wait_for_function("!document.getElementById('error').hidden")
        assert (
            page.locator("#error")
            .inner_text()
            .startswith("The CSV could not be made: This file has no ")
        )
        assert errors == []
    roomy = trace.to_html(views=["model"], budget=3_000_000)
    fields = {p["fields"] for p in parts_in(roomy)}
    assert {"attentions", "head_mean", "hidden_states"} <= fields


def parts_in(html: str) -> list[dict]:
    from tests.python.offline import parts_of

    return parts_of(html)
