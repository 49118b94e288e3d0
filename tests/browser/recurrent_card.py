"""The comparison's card once a comparison (copy, seed 0) has run in the page, wherever it was
started (Learn step 1 starts the one the suite runs): its two plots are the server's numbers,
each has a summary, a table of its numbers and a keyboard path, the claims are listed as
measured (all holding) with what it showed; axe finds nothing serious; screenshots at 1280 and
480 px wide (test-artifacts/recurrent-*.png)."""

from __future__ import annotations

from attnviz.numbers import readable_percent
from tests.browser.helpers import ARTIFACTS, VIEWPORT, axe_serious, plot_data, snap
from tests.support.oracles import js_number, readable_count


def check_done_card(page, api) -> dict:
    """The checks above on the card in view, the page's viewport put back after; the
    comparison as the API has it."""
    card = page.locator("#recurrent-card")
    run_id = card.get_attribute("data-run")
    run = api.get(f"/api/recurrent/{run_id}").json()
    assert run["state"] == "done" and run["task"] == "copy" and run["seed"] == 0
    page.wait_for_selector("#rc-time.js-plotly-plot .main-svg")

    # The line under the bar: each model's parameters as a sentence says a count (3 significant
    # digits from 10,000: 36,480 reads "36,500"); the API keeps the exact count.
    doing = card.locator("[data-role=doing]").inner_text()
    for m in run["models"]:
        assert f"{readable_count(m['params'])} parameters" in doing, doing
        assert m["params"] < 10_000 or f"{m['params']:,}" not in doing, doing

    # The plots: a line per model, the server's numbers (accuracy; time in ms).
    acc, time = plot_data(page, "rc-accuracy"), plot_data(page, "rc-time")
    assert [t["name"] for t in acc] == [t["name"] for t in time] == ["transformer", "LSTM", "GRU"]
    for a, t, m in zip(acc, time, run["models"], strict=True):
        assert a["x"] == run["distances"] and a["y"] == m["accuracy"]
        assert t["x"] == run["lengths"]
        assert t["y"] == [1000 * s for s in m["step_seconds"]]

    # Their text alternatives: a summary and a table of the numbers each.
    summaries = card.locator(".plot-summary").all_inner_texts()
    tr, lstm, gru = run["models"]
    assert summaries[0].startswith("Share predicted right at 4 and at 12 letters in the string:")
    # A share as a whole percentage, "100%" only when it is all of it (readablePercent).
    assert (
        f"LSTM {readable_percent(lstm['accuracy'][0])} and "
        f"{readable_percent(lstm['accuracy'][-1])}" in summaries[0]
    )
    assert summaries[1].startswith("A training step at 16 and at 256 tokens: transformer")
    tables = card.locator(".plot-numbers table")
    for i in (0, 1):
        card.locator(".plot-numbers > summary").nth(i).click()
    assert card.locator(".plot-numbers").evaluate_all("ds => ds.map((d) => d.open)") == [True] * 2
    # "Show the numbers": each value exactly as the API sent it (a share; seconds), never
    # rounded as the summary says it (issue 41).
    cells = "rs => rs.map((r) => [...r.cells].map((c) => c.textContent))"
    rows = tables.nth(0).locator("tbody tr").evaluate_all(cells)
    assert len(rows) == len(run["distances"])
    for j, row in enumerate(rows):
        want = [js_number(m["accuracy"][j]) for m in run["models"]]
        assert row == [str(run["distances"][j]), *want]
    times = tables.nth(1).locator("tbody tr").evaluate_all(cells)
    assert len(times) == len(run["lengths"])
    for j, row in enumerate(times):
        want = [js_number(m["step_seconds"][j]) for m in run["models"]]
        assert row == [str(run["lengths"][j]), *want]
    assert tables.nth(1).locator("thead th").all_inner_texts() == [
        "tokens",
        "transformer",
        "LSTM",
        "GRU",
    ]

    # The keyboard: the plot takes focus, the arrows move over its points, a live region reads.
    page.focus("#rc-accuracy")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    live = card.locator(".plot-live").nth(0)
    assert (
        live.inner_text()
        == f"LSTM, 6 letters in the string: {readable_percent(lstm['accuracy'][1])} right"
    )

    # The claims as measured, every one holding; what it showed, in words.
    # The checks, then the times: observed, not checked (issue 41), each claim as a sentence.
    claims = card.locator("[data-role=claims] li")
    assert claims.count() == len(run["claims"]) == 9
    assert [c["checked"] for c in run["claims"]] == [True] * 6 + [False] * 3
    assert (
        claims.evaluate_all("ls => ls.map((l) => l.className)") == ["holds"] * 6 + ["observed"] * 3
    )
    for li, c in zip(claims.all_inner_texts(), run["claims"], strict=True):
        assert li == (f"✓ {c['says']}" if c["checked"] else c["says"]), li
    assert run["claims"][0]["says"].startswith(
        "The transformer's share of letters right at 12 letters in the string was "
    )
    assert card.locator("[data-role=shows]").inner_text() == run["shows"]
    assert run["shows"].startswith("Copy, seed 0, 600 training steps each")

    assert axe_serious(page) == []
    ARTIFACTS.mkdir(exist_ok=True)
    snap(card, path=str(ARTIFACTS / "recurrent-1280.png"))
    page.set_viewport_size({"width": 480, "height": 900})
    page.wait_for_function(
        "() => Math.abs(document.getElementById('rc-accuracy')._fullLayout.width"
        " - document.getElementById('rc-accuracy').clientWidth) <= 1"
    )
    assert card.evaluate("c => c.scrollWidth <= c.clientWidth")  # nothing wider than the card
    snap(card, path=str(ARTIFACTS / "recurrent-480.png"))
    assert axe_serious(page) == []
    page.set_viewport_size(VIEWPORT)
    return run
