"""The views in a notebook: nbclient runs a notebook (a real ipykernel) that traces, shows three
displays and a BertViz-style tuple of attention tensors. The notebook, saved, carries the page's
code once (in the first display's output): under 1.5 MB for its four displays, where a whole page
in each came to 4 MB; its outputs' HTML, in order in one file opened from file:// with every
other request refused, all draw, with no console error."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

from tests.python.offline import DRAWN, opened
from tests.python.test_export_html import MB

REPO = Path(__file__).resolve().parents[2]
TEXT = "The animal didn't cross the street because it was too tired"
CELLS = [
    f"import attnviz, torch\nt = attnviz.trace(model='all-MiniLM-L6-v2', text={TEXT!r})",
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
    saved = tmp_path / "four.ipynb"
    nbformat.write(nb, saved)
    print(f"\nnotebook of four displays: {saved.stat().st_size:,} bytes, outputs "
          f"{', '.join(f'{len(h.encode()):,}' for h in outputs)}")  # fmt: skip
    assert saved.stat().st_size < 1.5 * MB
    # The first output carries the code, the others name it.
    assert outputs[0].startswith("<script>") and "attnvizShared" in outputs[0]
    for html in outputs[1:]:
        assert html.startswith('<iframe class="attnviz-frame" srcdoc="')
    seen, heights = draws(browser, tmp_path / "notebook.html", outputs)
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


def draws(
    browser, page_file: Path, outputs: list[str], why: bool = True
) -> tuple[list[dict], list[float]]:
    """The outputs' HTML in one page, in order, as a notebook (or its HTML export) shows them:
    what each display drew, and each frame's height."""
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
            for i in range(page.evaluate("document.querySelectorAll('iframe').length"))
        ]
        if why:  # The full display's Why this score (its own part in the file), drawn once in view.
            page.wait_for_function(
                "() => Boolean(document.querySelector('iframe').contentDocument"
                ".querySelector('#why-view .why-cell'))"
            )
        heights = page.evaluate(
            "[...document.querySelectorAll('iframe')].map((f) => f.getBoundingClientRect().height)"
        )
        assert errors == []
    return seen, heights


def test_displays_drawn_before_the_code_wait_for_it(browser, tmp_path):
    """A notebook whose first display's output is drawn last (a long notebook reopened low on
    the page): the displays above it wait for its code, then draw."""
    from attnviz.python import notebook
    from attnviz.python.html import DISPLAY_BUDGET, Display, standalone_html
    from attnviz.python.local import trace
    from attnviz.python.page import shared_code

    t = trace(model="all-MiniLM-L6-v2", text=TEXT)
    notebook.forget()
    code = dict(shared_code().values())
    pages = [standalone_html(t, shared=True, budget=DISPLAY_BUDGET, views=["model"], layer=k)
             for k in (0, 1)]  # fmt: skip
    carried = notebook.carrier(code, ("cell-a", "run-1"))
    assert carried.startswith("<script>") and notebook.carrier(code, ("cell-b", "run-2")) == ""
    frames = [Display(p, code=code)._repr_html_() for p in pages]  # the code already carried
    assert all(f.startswith("<iframe") for f in frames)
    seen, _ = draws(browser, tmp_path / "late.html", [*frames, carried], why=False)
    assert all(s["cells"] == 72 and s["large"] and s["error"] == "" for s in seen)


def test_the_code_is_carried_once_a_session_and_again_when_its_cell_runs_again():
    """Which output carries the code: the first display of the session; not a later cell's,
    nor a second display of the same run; the next display of the cell that carried it, when
    that cell runs again (its new output replaces the one that carried the code)."""
    from attnviz.python import notebook

    notebook.forget()
    keys = ["css@1-a", "modules@1-b"]
    assert notebook.to_carry(keys, ("cell-1", "run-1")) == keys
    assert notebook.to_carry(keys, ("cell-1", "run-1")) == []  # a second display, same run
    assert notebook.to_carry(keys, ("cell-2", "run-2")) == []
    assert notebook.to_carry([*keys, "modules@1-c"], ("cell-3", "run-3")) == ["modules@1-c"]
    assert notebook.to_carry(keys, ("cell-1", "run-4")) == keys  # cell 1 run again
    assert notebook.to_carry(keys, ("cell-2", "run-5")) == []
    assert notebook.to_carry(keys, (None, "run-6")) == []  # a front end that names no cell
    notebook.forget()
    assert notebook.to_carry(keys, (None, "run-7")) == keys  # a new session
