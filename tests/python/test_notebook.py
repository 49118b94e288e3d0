"""The views in a notebook: nbclient runs a notebook (a real ipykernel) that traces, shows three
displays and a BertViz-style tuple of attention tensors; the outputs' HTML, saved into one file
and opened from file:// with every other request refused, all draw, with no console error."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

from tests.python.offline import DRAWN, opened
from tests.python.test_export_html import MB, WORDS

REPO = Path(__file__).resolve().parents[2]
CELLS = [
    f"import attnviz, torch\nWORDS = {WORDS!r}\n"
    "text = ' '.join(WORDS[i % len(WORDS)] for i in range(126))\n"
    "t = attnviz.trace(model='all-MiniLM-L6-v2', text=text)\nassert len(t.tokens) == 128",
    "attnviz.show(t)",
    "attnviz.show(t, views=['model', 'qk'], layer=1, head=2)",
    "t  # a Trace's own display",
    # What transformers returns with output_attentions=True: per layer (1, heads, n, n).
    "attention = tuple(torch.from_numpy(a[None]) for a in t['attentions'])\n"
    "attnviz.show(attention, t.tokens)",
]


def test_a_notebook_shows_three_displays_and_a_tuple_offline(browser, tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(REPO)}}).execute()  # fmt: skip
    outputs = [
        o["data"]["text/html"]
        for cell in nb.cells
        for o in cell.get("outputs", [])
        if "text/html" in o.get("data", {})
    ]
    assert len(outputs) == 4, [c.get("outputs") for c in nb.cells]
    for html in outputs:
        print(f"\nnotebook output, 128 tokens: {len(html.encode()):,} bytes")
        assert len(html.encode()) <= 2 * MB
        assert html.startswith('<iframe class="attnviz-frame" srcdoc="')
    page_file = tmp_path / "notebook.html"
    page_file.write_text(
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>outputs</title>"
        "</head><body>"
        + "".join(f"<div class='output'>{h}</div>" for h in outputs)
        + "</body></html>"
    )
    with opened(browser, page_file) as (page, errors):
        page.wait_for_function(
            "() => [...document.querySelectorAll('iframe')].every((f) =>"
            " f.contentDocument?.documentElement.dataset.traces === '1')"
        )
        seen = [
            page.evaluate(
                f"(i) => ({DRAWN})(document.querySelectorAll('iframe')[i]"
                ".contentDocument.documentElement)",
                i,
            )  # fmt: skip
            for i in range(4)
        ]
        # The full display's Why this score (its own part in the file), drawn once in view.
        page.wait_for_function(
            "() => Boolean(document.querySelector('iframe').contentDocument"
            ".querySelector('#why-view .why-cell'))"
        )
        heights = page.evaluate(
            "[...document.querySelectorAll('iframe')].map((f) => f.getBoundingClientRect().height)"
        )
        assert errors == []
    full, two, own, bertviz = seen
    for s in (full, own):
        assert s["cells"] == 72 and s["large"] and s["headLines"] > 0 and s["traj"] > 0
        assert s["qk"] > 0 and not s["qkUnavailable"]
    assert two["cells"] == 72 and two["large"] and two["qk"] > 0
    # views=['model', 'qk'] (a file never holds the predictions or the knock-out card: it has
    # no model to ask; nor the picture card without a picture)
    assert two["hidden"] == ["gen-card", "head-view-card", "knock-card", "lens-card",
                             "picture-card", "traj-card", "why-card"]  # fmt: skip
    assert bertviz["cells"] == 72 and bertviz["large"] and bertviz["headLines"] > 0
    assert bertviz["qkUnavailable"]  # weights alone: no queries or keys
    assert bertviz["hidden"] == ["gen-card", "knock-card", "lens-card", "picture-card",
                                 "traj-card", "why-card"]  # fmt: skip
    assert all(s["error"] == "" for s in seen)
    assert all(h > 1000 for h in heights)  # each frame grew to its page
