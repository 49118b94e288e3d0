"""A trained run as one offline HTML file (``GET /api/train/{id}/export``, ``attnviz export
--server URL --run ID``, ``Client.save_run_html``): a real preset run on a real server, exported,
opened from file:// in Chromium with every request outside the file refused: Train mode's own
views draw the run's numbers, the checkpoint slider moves the heatmap to another checkpoint's
snapshot, axe-core finds nothing serious; a running run is refused, an unknown one is 404."""

from __future__ import annotations

import base64
import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import torch

import attnviz
from attnviz.api.visitor import COOKIE
from attnviz.app import create_app
from attnviz.cli import main
from attnviz.python.html import ExportError, run_html
from attnviz.settings import Settings
from tests.browser.helpers import AXE, axe_serious, slide
from tests.browser.test_train import heat, snapshot
from tests.python.offline import DANGLING, opened
from tests.support.servers import served

# Each starts a server or a process of its own: the whole suite runs them, `make test-fast` not.
pytestmark = pytest.mark.slow

TINY = {"layers": 2, "heads": 2, "d_model": 16}
PRESET = "scale-large-heads"  # two variants of 300 steps, and the claims they measured


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, httpx.Client, str]]:
    """A real server, and the id of a preset's run on it trained to its end."""
    app = create_app(Settings(device="cpu", builtin_model=False))
    with served(app) as url, httpx.Client(base_url=url, timeout=300) as http:
        r = http.post("/api/train", json={"preset": PRESET})
        assert r.status_code == 202, r.text
        run_id = r.json()["id"]
        ended(http, run_id)
        yield url, http, run_id


def ended(http: httpx.Client, run_id: str) -> dict:
    """The run's state once its event stream has said ``end``."""
    with http.stream("GET", f"/api/train/{run_id}/events") as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line == "event: end":
                break
    return http.get(f"/api/train/{run_id}").json()


def anyones(state: dict) -> dict:
    """A run's state as anyone but its owner reads it (issue 27: the owner's reads say that it
    is theirs to cancel and rename), which is what a file holds: no one's to cancel."""
    return {**state, "yours": False, "can_cancel": False, "can_rename": False}


def data_of(html: str) -> dict:
    """The run state a file holds."""
    blob = re.search(r'id="attnviz-parts">([^<]*)<', html)
    assert blob
    return json.loads(gzip.decompress(base64.b64decode(blob.group(1))))


def head_large(page, variant: int, layer: int, head: int) -> None:
    """Pick a variant's head in its grid and wait for the large view to show it."""
    page.click(
        f'#t-grids .t-variant[data-variant="{variant}"] '
        f'button.mv-cell[data-layer="{layer}"][data-head="{head}"]'
    )
    page.wait_for_function(
        "t => (document.querySelector('#t-large .hc-title')?.textContent || '').includes(t)",
        arg=f"layer {layer + 1}, head {head + 1} at step",
    )


def test_the_exported_run_draws_its_views_offline_and_scrubs_its_checkpoints(
    server, browser, tmp_path
):
    url, http, run_id = server
    run = http.get(f"/api/train/{run_id}").json()
    assert run["state"] == "done" and run["claims"]
    r = http.get(f"/api/train/{run_id}/export")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/html")
    assert r.headers["content-disposition"] == f'attachment; filename="attnviz-run-{run_id}.html"'
    path = tmp_path / "run.html"
    path.write_bytes(r.content)
    print(f"\nexported run ({PRESET}, 2 x 300 steps): {len(r.content):,} bytes")
    assert data_of(r.text) == anyones(run)  # the run's state, as the server gives it

    assert AXE.exists(), "axe-core is missing: run `make install-dev` (npm ci)"
    with opened(browser, path, scripts=[AXE]) as (page, errors):
        page.wait_for_function("document.documentElement.dataset.run === '1'")
        # Progress: the whole run, and each variant's figures.
        assert page.locator("#t-progress").evaluate("p => p.value") == 1
        rate = page.locator("#t-rate").inner_text()
        assert rate.startswith("done") and all(v["label"] in rate for v in run["variants"])
        # The loss: each variant's batch losses (lines) and held-out losses (dots).
        loss = page.evaluate("() => document.getElementById('t-loss').data")
        lines = [t for t in loss if t["mode"] == "lines"]
        assert [t["name"] for t in lines] == [v["label"] for v in run["variants"]]
        for line, v in zip(lines, run["variants"], strict=True):
            assert line["x"] == v["history"]["step"] and line["y"] == v["history"]["loss"]
        dots = [t for t in loss if t["mode"] != "lines"]
        assert [t["y"] for t in dots] == [[c["heldout"] for c in v["checkpoints"]]
                                          for v in run["variants"]]  # fmt: skip
        # The gradient norms: a line per layer.
        grads = page.evaluate("() => document.getElementById('t-grads').data")
        assert len(grads) == run["variants"][0]["arch"]["layers"]
        # Each variant's grid of heads; each model listed; the preset's claims.
        assert page.locator("#t-grids .t-variant").count() == 2
        assert page.locator("#t-grids button.mv-cell").count() == 2 * 2
        models = page.locator("#t-models .t-model")
        assert models.count() == 2
        assert "takes the live page" in models.nth(0).inner_text()
        claims = page.locator("#t-claims li")
        assert claims.count() == len(run["claims"])
        for i, c in enumerate(run["claims"]):
            assert claims.nth(i).inner_text() == f"{'✓' if c['holds'] else '✗'} {c['says']}"
        # What takes the live server is not offered.
        for hidden in ("#t-start", "#t-cancel", "#t-runs", "#t-try-card",
                       "#train-mode aside.panel"):  # fmt: skip
            assert page.locator(hidden).is_hidden(), hidden
        # Nor the live page's exports: the file's header has none (issue 28, 5.16 moved the
        # run's Export HTML from the run card to the header).
        assert page.locator("#export-html, #export-json").count() == 0

        # The slider: at the newest checkpoint first; moved, the heatmap is another
        # checkpoint's snapshot, number for number.
        v = run["variants"][0]
        last = len(v["checkpoints"]) - 1
        assert page.locator("#t-checkpoint").evaluate("s => +s.value") == last
        head_large(page, 0, 1, 0)
        labels, matrix = heat(page)
        assert labels == run["probe"]["tokens"]
        assert torch.equal(matrix, snapshot(v["checkpoints"][last], 1, 0))
        slide(page, "#t-checkpoint", 0)
        assert page.locator("#t-checkpoint-out").inner_text().startswith("step 0")
        _, first = heat(page)
        assert torch.equal(first, snapshot(v["checkpoints"][0], 1, 0))
        assert not torch.equal(first, matrix)
        # Keyboard: the slider steps on with the arrow key.
        page.focus("#t-checkpoint")
        before = int(page.evaluate("() => +document.documentElement.dataset.views"))
        page.keyboard.press("ArrowRight")
        page.wait_for_function("n => +document.documentElement.dataset.views > n", arg=before)
        _, second = heat(page)
        assert torch.equal(second, snapshot(v["checkpoints"][1], 1, 0))

        assert axe_serious(page) == []
        assert page.evaluate(DANGLING) == []
        assert errors == []


def test_the_page_offers_export_html_for_an_ended_run(server, browser):
    """The live page's Export HTML for a run: the header's button, as in every mode (issue 28,
    5.16: it was a link in the run card while the header offered Export JSON alone), reachable
    by keyboard, saving the export's file."""
    url, http, run_id = server
    context = browser.new_context()
    try:
        # The browser is the visitor who started the run (its cookie): its runs list has it.
        context.add_cookies([{"name": COOKIE, "value": http.cookies[COOKIE], "url": url}])
        page = context.new_page()
        page.goto(f"{url}/#train")
        page.locator(f'#t-runs li[data-run="{run_id}"]').get_by_role("button").click()
        page.wait_for_function(
            "id => document.getElementById('t-run-card').dataset.run === id",
            arg=run_id,
        )
        button = page.locator("header").get_by_role("button", name="Export HTML", exact=True)
        page.wait_for_function("() => !document.getElementById('export-html').disabled")
        assert page.locator("#t-run-card :is(a, button)", has_text="Export").count() == 0
        assert page.locator("header").get_by_role("button", name="Export JSON").is_enabled()
        with page.expect_download() as download:
            button.focus()
            page.keyboard.press("Enter")
        assert download.value.suggested_filename == f"attnviz-run-{run_id}.html"
        saved = Path(download.value.path()).read_text()
        # The file is the run's, named as the page names it (what it trains), never by its id.
        title = page.evaluate(
            "async (id) => (await (await fetch('/api/train/' + id)).json()).title", run_id
        )
        assert saved.startswith("<!doctype html>") and f"<title>attnviz · {title}</title>" in saved
    finally:
        context.close()


def test_a_running_run_is_refused_and_an_unknown_one_is_404(server):
    url, http, _ = server
    missing = http.get("/api/train/nosuchrun/export")
    assert missing.status_code == 404
    r = http.post("/api/train", json={"arch": TINY, "opt": {"steps": 5000, "seed": 0}})
    assert r.status_code == 202, r.text
    run_id = r.json()["id"]
    try:
        refused = http.get(f"/api/train/{run_id}/export")
        assert refused.status_code == 409
        assert refused.json()["message"] == (
            f"run_id: run {run_id} is still running; export it once it has ended "
            "(done, cancelled or failed)"
        )
        with pytest.raises(ExportError, match=f"run: {run_id} is still running"):
            attnviz.Client(url).save_run_html(run_id, Path("/nonexistent/never.html"))
    finally:
        assert http.delete(f"/api/train/{run_id}").status_code == 200
    # Cancelled, it has ended: it exports, its state as the server gives it.
    state = ended(http, run_id)
    assert state["state"] == "cancelled"
    after = http.get(f"/api/train/{run_id}/export")
    assert after.status_code == 200 and data_of(after.text) == anyones(state)


def test_attnviz_export_and_the_client_write_the_servers_file(server, tmp_path, capsys):
    url, http, run_id = server
    state = http.get(f"/api/train/{run_id}").json()
    out = tmp_path / "cli.html"
    assert main(["export", "--server", url, "--run", run_id, "-o", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"{out}: ")
    mine = attnviz.Client(url).save_run_html(run_id, tmp_path / "client.html")
    served_file = http.get(f"/api/train/{run_id}/export").text
    for html in (out.read_text(), mine.read_text()):
        assert data_of(html) == anyones(state)
        # The same file as the server's, but for when it was saved.
        strip = re.compile(r'"saved": "[^"]*"')
        assert strip.sub("", html) == strip.sub("", served_file)
    # Another visitor (the client keeps a cookie of its own) reads it as anyone does.
    assert attnviz.Client(url).run(run_id) == anyones(state)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--run", "abc"], "--run and --server: a run is read from the server"),
        (["--run", "abc", "--server", "ftp://x"], "--server: 'ftp://x' is not an http"),
        (["--run", "abc", "--server", "http://x", "--text", "t"], "--text: a text or a run"),
        ([], "--text: the text to trace (or --run ID --server URL"),
    ],
)
def test_attnviz_export_refuses_a_run_without_its_server(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) as exc:
        main(["export", "-o", str(tmp_path / "x.html"), *args])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_an_unknown_run_from_the_cli_says_404(server, tmp_path, capsys):
    url, _, _ = server
    with pytest.raises(SystemExit) as exc:
        main(["export", "--server", url, "--run", "nosuchrun", "-o", str(tmp_path / "x.html")])
    assert exc.value.code == 2
    assert "--run: 404: " in capsys.readouterr().err


def test_run_html_refuses_what_is_not_an_ended_run():
    with pytest.raises(ExportError, match=r"^run: not a run's state \(JSON\)"):
        run_html(b"{nope")
    with pytest.raises(ExportError, match=r"^run: not a run's state \(GET"):
        run_html({"id": "x"})
    with pytest.raises(ExportError, match=r"^run: x is still running"):
        run_html({"id": "x", "state": "running", "variants": [], "probe": {}})


def test_a_page_names_a_mode_and_keeps_its_style_inside_its_element():
    from attnviz.python.page import Page, page_html

    page = Page(mode="train", entry="offline/run.js", title="t", tagline="t", footer="f",
                main=False)  # fmt: skip
    with pytest.raises(ValueError, match=r"^mode: '\.\./index' is not a mode's name"):
        page_html(Page(**{**page.__dict__, "mode": "../index"}), {}, "")
    with pytest.raises(ValueError, match=r"^style: closes its own element"):
        page_html(Page(**{**page.__dict__, "style": "</style><script>"}), {}, "")
    html = page_html(page, {"x": "</script>"}, "")
    assert '<html lang="en" data-offline="1" data-mode="train">' in html
    assert '"x": "\\u003c/script\\u003e"' in html and '"entry": "offline/run.js"' in html
    assert html.count("<main") == 1  # modes/train.html's own: the file adds none
    sentence = page_html(Page(mode="sentence", entry="offline/page.js", title="t", tagline="t",
                              footer="f"), {}, "")  # fmt: skip
    assert sentence.count("<main") == 1  # the file's, around sentence mode's cards
