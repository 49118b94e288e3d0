"""A paragraph of ~500 tokens in sentence mode: every view draws, from the parts of the trace
the page asks for, with the JSON trace's numbers (thumbnails within half a quantisation step,
max-pooled to 128 pixels; the large heatmap's weights exact, its hover's to 3 significant
digits)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from tests.browser.helpers import (
    MODEL,
    assert_close,
    assert_head_lines_match,
    f32,
    head_lines,
    hover_large,
    large_heatmap,
    open_sentence,
    screenshot,
    views_drawn,
    wait_for_views,
)
from tests.support.oracles import readable

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

SENTENCES = [
    "Attention lets every token look at every other token and decide how much of each to take.",
    "The queries ask, the keys answer, and the values carry what is taken.",
    "A river bank is not an investment bank, and the model learns to tell them apart by what "
    "surrounds them.",
]
LONG = " ".join(SENTENCES * 8)


def layer_head(api, layer: int, head: int) -> dict:
    """One head of the JSON trace (the whole one is over the server's JSON cap)."""
    params = {"fields": "attentions,scores,queries,keys", "layer": layer, "head": head}
    r = api.post("/api/trace", json={"model": MODEL, "text": LONG}, params=params)
    assert r.status_code == 200, r.text
    return r.json()


def max_pool(m: list[list[float]], pool: int) -> list[list[float]]:
    n = len(m)
    size = math.ceil(n / pool)
    return [
        [
            max(m[i][j] for i in range(a * pool, min(n, (a + 1) * pool)) for j in range(b * pool, min(n, (b + 1) * pool)))
            for b in range(size)
        ]
        for a in range(size)
    ]  # fmt: skip


THUMB = """([l, h]) => {
  const t = document.getElementById('mv-grid').__thumbs;
  const [, H, s] = t.values.shape, k = l * H + h;
  const values = Array.from(t.values.data.subarray(k * s * s, (k + 1) * s * s));
  return {pool: t.pool, size: s, scale: t.scale.data[k], values};
}"""

# The canvas of one cell: its size, every pixel's colour, and the weight colour table.
PIXELS = """async ([l, h]) => {
  const { WEIGHT_LUT } = await import('/static/js/core/theme.js');
  const canvas = document.querySelector(`#mv-grid button[data-layer="${l}"][data-head="${h}"] canvas`);
  const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  const rgb = [];
  for (let p = 0; p < data.length; p += 4) rgb.push([data[p], data[p + 1], data[p + 2]]);
  return {width: canvas.width, rgb, table: Array.from(WEIGHT_LUT)};
}"""


@pytest.fixture(scope="module")
def n(api) -> int:
    r = api.post(
        "/api/trace", json={"model": MODEL, "text": LONG}, params={"fields": "entropy_mean"}
    )
    count = r.json()["n"]
    assert 450 < count <= 512
    return count


def test_a_long_paragraph_in_every_view(page, live_server, api, n):
    page.set_default_timeout(60_000)
    asked = []
    first = "fields=thumbs&thumb="  # the first request: every head's thumbnail
    page.on(
        "request",
        lambda r: asked.append(r.url) if first in r.url and "layer" not in r.url else None,
    )
    open_sentence(page, live_server + "/", LONG)
    assert page.locator("#s-count").text_content() == f"{n} / 512 tokens"
    assert page.locator("#error").is_hidden()
    # The page asks for thumbnails as wide as its model view's cells are drawn.
    thumb = int(parse_qs(urlparse(asked[-1]).query)["thumb"][0])
    cell = page.evaluate("() => document.querySelector('#mv-grid canvas').width")
    assert cell <= thumb <= cell + 8
    pool = math.ceil(n / thumb)
    size = math.ceil(n / pool)
    assert pool > 1

    # Model view: 72 canvases from 8-bit thumbnails, max-pooled, the page says so.
    assert page.locator("#mv-grid button.mv-cell canvas").count() == 72
    note = page.locator("#mv-pool")
    assert note.is_visible()
    assert note.text_content() == (
        f"{n} tokens in {size} pixels: each thumbnail pixel is the largest weight of a "
        f"{pool} × {pool} block."
    )
    for layer, head in [(0, 0), (2, 7), (5, 11)]:
        exact = f32(layer_head(api, layer, head)["attentions"][0][0])
        thumb = page.evaluate(THUMB, [layer, head])
        assert (thumb["pool"], thumb["size"]) == (pool, size)
        want = max_pool(exact, pool)
        s = thumb["scale"]
        got = [v * s / 255 for v in thumb["values"]]
        flat = [w for row in want for w in row]
        assert max(abs(a - b) for a, b in zip(got, flat, strict=True)) <= s / 510 + 1e-6
        assert s == pytest.approx(max(flat), rel=1e-6)
    # ... and drawn through the weight colour table: a canvas smaller than the thumbnail shows
    # in each pixel the largest value it covers, so no peak is lost.
    thumb = page.evaluate(THUMB, [2, 7])
    drawn = page.evaluate(PIXELS, [2, 7])
    out, table = drawn["width"], drawn["table"]
    assert out <= size

    def span(p: int) -> range:
        lo = p * size // out
        return range(lo, max(lo + 1, math.ceil((p + 1) * size / out)))

    values = thumb["values"]
    for y in range(out):
        for x in range(out):
            v = max(values[r * size + c] for r in span(y) for c in span(x))
            i = min(255, round(v * thumb["scale"])) * 3
            assert drawn["rgb"][y * out + x] == table[i : i + 3], (y, x)
    covered = {r for y in range(out) for r in span(y)}
    assert covered == set(range(size))

    # The chosen head large: every token, the exact float32 weights; on hover, to 3 significant
    # digits.
    part = layer_head(api, 0, 0)
    large = large_heatmap(page)
    assert len(large["labels"]) == n and large["dtype"] == "F32"
    assert_close(large["z"], f32(part["attentions"][0][0]), tol=0)
    tip = hover_large(page, 300, 17)
    assert tip.split("\n")[2] == f"weight {readable(part['attentions'][0][0][300][17])}"

    # Head view: one token's lines at a time, the chosen query's first.
    assert "only one token's lines are drawn" in page.locator("#head-view .hv-note").text_content()
    lines = head_lines(page)
    assert lines and {x["query"] for x in lines} == {1}  # the first token after [CLS]
    exact = f32(part["attentions"][0][0])
    assert_head_lines_match(page, {0: exact}, keep=lambda i, j: i == 1)
    # The query's lines come from its exact rows; every token's weights (megabytes) only when
    # the pointer comes to the view.
    assert page.locator('#head-view svg.hv[data-complete="0"]').count() == 1
    page.hover('#head-view .hv-right .hv-token[data-index="40"]')
    page.wait_for_selector('#head-view svg.hv[data-complete="1"]')
    assert_head_lines_match(page, {0: exact}, keep=lambda i, j: i == 1)  # the query's again
    page.mouse.move(0, 0)
    page.hover('#head-view .hv-right .hv-token[data-index="40"]')
    page.wait_for_function(
        "() => [...document.querySelectorAll('#head-view line')].every((l) => l.dataset.key === '40')"
    )
    assert_head_lines_match(page, {0: exact}, keep=lambda i, j: j == 40)

    # Query-key view: the strongest keys, and all of them on request.
    keys = page.locator("#qk-view .qk-keys")
    assert keys.text_content().startswith(
        f"The 49 keys with the largest weights for this query, of {n}"
    )
    before = views_drawn(page)
    page.click("#qk-view button.qk-all")
    wait_for_views(page, before)
    assert keys.text_content().startswith(f"All {n} keys.")
    k = page.evaluate("() => document.querySelector('#qk-view .qk').__qk.rows.length")
    assert k == n

    # Trajectories: a few paths from the query on; all of them on request, in eight traces (one
    # per band of positions), no legend.
    assert page.locator('#traj-tokens button[aria-pressed="true"]').count() == 8
    before = views_drawn(page)
    page.click("#traj-all")
    wait_for_views(page, before)
    traj = page.evaluate(
        "() => { const p = document.querySelector('#traj-view .js-plotly-plot');"
        " return {n: p.data.length, legend: p.layout.showlegend,"
        " points: p.data.reduce((s, t) => s + t.x.filter((v) => v !== null).length, 0)}; }"
    )
    assert traj == {"n": 8, "legend": False, "points": n * 7}
    page.mouse.move(0, 0)
    screenshot(page, "sentence-512.png")


def test_a_long_trace_exports_the_head_in_view(page, live_server, api, n):
    """The whole trace is over the JSON cap: the export is the layer and head in view, as the
    JSON API sends them."""
    page.set_default_timeout(60_000)
    open_sentence(page, live_server + "/", LONG)
    before = views_drawn(page)
    page.click('#mv-grid button.mv-cell[data-layer="3"][data-head="2"]')
    wait_for_views(page, before)
    with page.expect_download() as download:
        page.click("#export-json")
    assert download.value.suggested_filename == "attnviz-sentence-layer4-head3.json"
    saved = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    params = {"fields": "attentions,scores,queries,keys,values", "layer": 3, "head": 2}
    want = api.post("/api/trace", json={"model": MODEL, "text": LONG}, params=params).json()
    assert saved == want and (saved["layer"], saved["head"]) == (3, 2)
    status = page.locator("#status").text_content()
    assert status.startswith("exported layer 4, head 3: the whole trace has ")
