"""The header's Export HTML button: in the toy lab and in sentence mode it downloads one file of
what is in view (POST /api/export), which then opens from file:// with every request outside
it refused, draws its views with no console error, and hovers the trace's numbers (to 3
significant digits, as the page does)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.browser.helpers import hover_large, open_app, open_sentence, text_trace
from tests.python.offline import drawn, opened, wait_drawn
from tests.python.test_toy_file import heat_hover
from tests.support.oracles import readable

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)


def download_html(page, tmp_path, name: str):
    button = page.locator("#export-html")
    assert button.is_visible() and button.is_enabled()
    with page.expect_download() as info:
        button.click()
    path = tmp_path / name
    info.value.save_as(path)
    return path, info.value.suggested_filename


def test_the_toy_labs_export_html_opens_offline(page, live_server, api, browser, tmp_path):
    open_app(page, live_server)
    path, suggested = download_html(page, tmp_path, "toy.html")
    assert suggested.startswith("attnviz-toy-") and suggested.endswith(".html")
    live = heat_hover(page, "weights-plot")
    z = "() => document.getElementById('weights-plot').data[0].z"
    exact = page.evaluate(z)
    with opened(browser, path) as (offline, errors):
        wait_drawn(offline)
        # The file's first head is the page's: the same exact numbers in the same cells, and
        # the same hover texts.
        assert offline.evaluate(z) == exact
        assert heat_hover(offline, "weights-plot") == live
        assert len(live) == offline.locator("#before-after tbody tr").count()
        assert errors == []


def test_sentence_modes_export_html_opens_offline(page, live_server, api, browser, tmp_path):
    text = "The animal didn't cross the street because it was tired"
    open_sentence(page, live_server, text)
    path, suggested = download_html(page, tmp_path, "sentence.html")
    assert suggested.startswith("attnviz-sentence-layer1-head1")
    trace = text_trace(api, text)
    exact = np.array(trace["attentions"][0][0], dtype=np.float32)
    with opened(browser, path) as (offline, errors):
        wait_drawn(offline)
        seen = drawn(offline)
        assert seen["cells"] > 0 and seen["large"] and seen["traj"] > 0 and seen["error"] == ""
        i = 3
        j = int(np.argmax(exact[i]))
        tip = hover_large(offline, i, j).split("\n")
        assert f"weight {readable(float(exact[i, j]), 'F32')}" in tip
        assert offline.locator("#s-text").input_value() == text
        assert errors == []
