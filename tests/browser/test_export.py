"""Getting things out of the page: the trace as JSON, plots as PNG, the link."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.browser.helpers import open_app, open_sentence, rotate

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_json_export_is_the_api_trace(page, live_server, api, presets):
    open_app(page, live_server + "/")
    with page.expect_download() as download:
        page.click("#export-json")
    assert download.value.suggested_filename == "attnviz-trace.json"
    saved = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    first = presets["presets"][0]
    body = {k: first[k] for k in ("tokens", "axes", "embeddings", "config")}
    assert saved == api.post("/api/trace", json=body).json()
    assert saved["distances"][1][1][4] == pytest.approx(0.0587, abs=1e-4)


@pytest.mark.parametrize("plot", ["weights-plot", "vectors-plot", "vectors-plot live"])
def test_png_export_downloads_a_png(page, live_server, plot):
    """A 2-D plot, the token vectors' still picture and their live 3-D scene (WebGL)."""
    open_app(page, live_server + "/")
    if plot.endswith(" live"):
        rotate(page)
        plot = plot.removesuffix(" live")
    with page.expect_download() as download:
        page.click(f'button.png[data-plot="{plot}"]')
    assert download.value.suggested_filename == f"attnviz-{plot}.png"
    data = Path(download.value.path()).read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 5_000  # a drawn plot, not an empty canvas


@pytest.mark.parametrize("mode", ["toy", "sentence"])
def test_copy_link_puts_the_page_url_on_the_clipboard(page, live_server, mode):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server)
    if mode == "toy":
        open_app(page, live_server + "/")
    else:
        open_sentence(page, live_server + "/", "I sat on the river bank")
    page.click("#copy-link")
    page.wait_for_function("() => document.getElementById('status').textContent === 'link copied'")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == page.evaluate("location.href") and "#s=" in copied
    if mode == "sentence":  # the link opens sentence mode on the same text
        state = page.evaluate(
            "JSON.parse(atob(location.hash.slice(3).replace(/-/g, '+').replace(/_/g, '/')))"
        )
        assert (
            state["mode"] == "sentence" and state["sentence"]["text"] == "I sat on the river bank"
        )
