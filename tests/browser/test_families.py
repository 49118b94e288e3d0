"""A Llama-style folder in the browser: served on its own (attnviz serve --model FOLDER), its
model line names the family, its pieces read as words, and the query-key view says that q and
k are rotated and which key/value head a query head shares."""

from __future__ import annotations

import httpx
import pytest

from attnviz.app import create_app
from attnviz.settings import Settings
from tests.browser.helpers import open_sentence, screenshot
from tests.support.checkpoints import make_tiny_llama
from tests.support.servers import served

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

TEXT = "The animal didn't cross the street"


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    folder = make_tiny_llama(tmp_path_factory.mktemp("m") / "tiny-llama", "llama-gqa")
    settings = Settings(device="cpu", builtin_model=False, models=str(folder))
    with served(create_app(settings)) as url:
        yield url


def test_a_llama_style_model_in_sentence_mode(page, llama_server):
    open_sentence(page, llama_server + "/", TEXT)
    assert page.locator("#s-model-info").text_content().startswith("LLAMA · 2 layers × 4 heads")
    trace = httpx.post(
        f"{llama_server}/api/trace", json={"model": "tiny-llama", "text": TEXT}, timeout=60
    ).json()
    assert " animal" in trace["tokens"] and "\u2581" not in "".join(trace["tokens"])
    page.select_option("#qk-head", "2")  # head 3 of 4: key/value head 2 of 2
    page.wait_for_function(
        "() => document.querySelector('#qk-view .qk-title')?.textContent.includes('head 3')"
        " && document.documentElement.dataset.pending === '0'"
    )
    notes = page.locator("#qk-view .qk-about").all_text_contents()
    assert len(notes) == 2, notes
    assert notes[0].startswith("q and k are shown after the RoPE rotation")
    assert "10,000" in notes[0] and "i + d/2" in notes[0]
    assert notes[1].startswith("Grouped-query attention: this head reads key/value head 2 of 2")
    assert "query heads 3–4" in notes[1]
    # The keys drawn are the trace's, and heads 3 and 4 share them.
    assert trace["keys"][0][2] == trace["keys"][0][3]
    page.locator("#qk-card").scroll_into_view_if_needed()
    screenshot(page, "llama-qk.png")
