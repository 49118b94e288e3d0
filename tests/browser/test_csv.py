"""CSV on the page: the toy lab's Export CSV is Python's to_csv of the same table, and the file it
saves, imported, is the same table again (labels with commas and quotes, exact numbers); a file
too large for any table is refused unread; the sentence mode's three downloads are to_csv's for
the chosen layer and head, byte for byte. The controls are labelled and keyboard reachable."""

from __future__ import annotations

from pathlib import Path

import pytest

import attnviz
from attnviz.python.tables import to_csv
from tests.browser.helpers import (
    AXE,
    MODEL,
    axe_serious,
    open_app,
    open_sentence,
    share_hash,
    table_values,
    traces_drawn,
    view_change,
    wait_for_trace,
)

# Input boxes hold no line breaks; everything else a CSV must quote is here.
TOKENS = ["a,b", 'say "hi"', " lead", "3", "=SUM(A1)", "naïve ☃", ""]
AXES = ["4", 'c"z', "x,y"]
ROWS = [[0.1, 1e-7, -999.25], [1 / 3, 2, 3], [7, 8, 9.5], [0, -1, 1],
        [0.2, 0.3, 0.4], [5, 6, 7], [-0.5, 0.25, 1e-5]]  # fmt: skip
SENTENCE = 'The animal didn\'t cross the street, because it was "too tired"'


def load_table(page, url: str) -> None:
    state = {"tokens": TOKENS, "axes": AXES, "embeddings": ROWS, "config": {"heads": 1}}
    open_app(page, url + "/" + share_hash(state))  # drawn: no later status to overwrite ours
    assert table_values(page)["tokens"] == TOKENS


def download(page, selector: str, tmp_path: Path) -> tuple[str, str]:
    """Click `selector`, and the saved file's name and text (bytes as UTF-8, CRLF kept)."""
    with page.expect_download() as caught:
        page.click(selector)
    d = caught.value
    path = tmp_path / d.suggested_filename
    d.save_as(path)
    return d.suggested_filename, path.read_bytes().decode("utf-8")


def test_export_is_to_csv_and_importing_it_restores_the_table(page, live_server, tmp_path):
    load_table(page, live_server)
    before = table_values(page)
    name, text = download(page, "#export-csv", tmp_path)
    assert name.endswith(".csv")
    trace = attnviz.Client(live_server).trace(tokens=TOKENS, embeddings=ROWS, config={"heads": 1})
    # to_csv of the same table (the trace names its axes x1..; the page's are its own)
    want = to_csv(trace, "table").split("\r\n", 1)[1]
    head, body = text.split("\r\n", 1)
    assert head == '"token","4","c""z","x,y"'
    assert body == want
    # Change the table, then import the file: the same table as before, cell for cell.
    n = traces_drawn(page)
    page.locator('#embeddings input[data-kind="label"][data-r="0"]').fill("changed")
    page.locator('#embeddings button[data-remove-col="2"]').click()
    wait_for_trace(page, n)
    assert table_values(page) != before
    n = traces_drawn(page)
    page.set_input_files("#import-csv", str(tmp_path / name))
    wait_for_trace(page, n)
    assert table_values(page) == before
    status = page.locator("#status").inner_text()
    assert f"{name}: pasted 7 x 3 with names: it replaces the table" in status


def test_a_file_too_large_for_any_table_is_refused_unread(page, live_server, tmp_path):
    load_table(page, live_server)
    before = table_values(page)
    big = tmp_path / "big.csv"
    big.write_text("token,x\r\n" + "a,1\r\n" * 300_000)  # 1.8 MB
    page.set_input_files("#import-csv", str(big))
    page.wait_for_function(
        "() => /big\\.csv.*too large/.test(document.getElementById('status').textContent)"
    )
    assert table_values(page) == before


def test_the_csv_controls_are_labelled_and_keyboard_reachable(page, live_server):
    page.add_init_script(path=str(AXE))
    open_app(page, live_server + "/")
    file_input = page.get_by_label("Import CSV")
    assert file_input.get_attribute("type") == "file"
    page.get_by_role("button", name="Export CSV").focus()
    page.keyboard.press("Tab")  # the next stop after Export CSV
    assert page.evaluate("() => document.activeElement.id") == "import-csv"
    assert axe_serious(page) == []


@pytest.mark.parametrize(("layer", "head"), [(3, 5), (0, 11)])
def test_the_sentence_downloads_are_to_csvs(page, live_server, tmp_path, layer, head):
    open_sentence(page, live_server + "/", SENTENCE)
    cell = page.locator(f'#mv-grid button.mv-cell[data-layer="{layer}"][data-head="{head}"]')
    view_change(page, cell.click)  # the chosen head, as a person picks it
    trace = attnviz.Client(live_server).trace(model=MODEL, text=SENTENCE)
    page.click("#mv-downloads > summary")  # the downloads, behind one summary
    name, text = download(page, "#mv-csv-head", tmp_path)
    assert text == to_csv(trace, "attention", layer=layer, head=head)
    assert f"layer{layer + 1}" in name and f"head{head + 1}" in name
    _, text = download(page, "#mv-csv-mean", tmp_path)
    assert text == to_csv(trace, "layer_mean", layer=layer)
    _, text = download(page, "#mv-csv-states", tmp_path)
    assert text == to_csv(trace, "hidden_states", layer=layer + 1)  # after the layer
