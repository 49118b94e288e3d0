"""Attention on the picture (issue 30), in the browser, on a tiny random LLaVA folder served over
HTTP: a picture with one bright region (a sun over hills and a house) added through the page's
image file input; the overlay is drawn over the picture itself, over the part the processor's
centre crop keeps; its cells are the server's attention row of the query, cut to the image's
tokens, for the chosen head, the layer's mean and rollout; hover and the keyboard's cursor read
a patch's weight to 3 significant digits (its numbers table: exactly); a patch as the query shows the text's tokens' weights beside it; the
vision tower's panel draws the `vision` field's row of the patch picked (or says the server's
refusal where the server has no such field); axe-core finds nothing serious."""

from __future__ import annotations

import httpx
import pytest
import torch
from PIL import Image, ImageDraw

from attnviz.app import create_app
from attnviz.settings import Settings
from tests.browser.helpers import (
    ARTIFACTS,
    AXE,
    axe_serious,
    choose,
    open_sentence,
    snap,
    traces_drawn,
    view_change,
    wait_for_trace,
)
from tests.support.checkpoints_vlm import (
    make_tiny_idefics3,
    make_tiny_llava,
    make_tiny_qwen2_5_vl,
)
from tests.support.images import data_url, encoded
from tests.support.oracles import readable
from tests.support.servers import served

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

TEXT = "a dog <image> runs in the park"
MODEL = "tiny-llava"
QWEN = "tiny-qwen2_5_vl"
W, H = 192, 128  # the picture; LLaVA's processor keeps its centre 128 x 128 (a 64 px crop)


def picture() -> Image.Image:
    """A small scene: a dark sky, one bright sun (the one bright region), hills, a house."""
    im = Image.new("RGB", (W, H), (20, 28, 60))
    d = ImageDraw.Draw(im)
    for y in range(H // 2):  # the sky lighter towards the horizon
        d.line([(0, y), (W, y)], fill=(20 + y, 28 + y, 60 + y))
    d.ellipse([112, 14, 140, 42], fill=(255, 250, 210))  # the sun
    d.ellipse([-40, 70, 120, 170], fill=(40, 110, 50))
    d.ellipse([80, 80, 240, 180], fill=(30, 90, 40))
    d.rectangle([60, 72, 92, 100], fill=(170, 60, 50))  # the house
    d.polygon([(56, 74), (76, 56), (96, 74)], fill=(90, 40, 30))
    d.rectangle([72, 86, 80, 100], fill=(60, 30, 20))
    return im


@pytest.fixture(scope="module")
def llava(tmp_path_factory):
    root = tmp_path_factory.mktemp("vlm-page")
    folders = [make_tiny_llava(root / MODEL), make_tiny_idefics3(root / "tiny-idefics3"),
               make_tiny_qwen2_5_vl(root / QWEN)]  # fmt: skip
    settings = Settings(device="cpu", builtin_model=False, models=":".join(map(str, folders)))
    with served(create_app(settings)) as url:
        yield url


@pytest.fixture(scope="module")
def png(tmp_path_factory):
    path = tmp_path_factory.mktemp("pictures") / "scene.png"
    path.write_bytes(encoded(picture()))
    return path


def api_part(url: str, png, model: str = MODEL, **params) -> dict:
    body = {"model": model, "text": TEXT, "images": [data_url(png.read_bytes())]}
    r = httpx.post(f"{url}/api/trace", json=body, params=params, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def drawn(page, box: str) -> int:
    return int(page.evaluate("s => +(document.querySelector(s).dataset.drawn || 0)", box))


def wait_drawn(page, box: str, after: int) -> None:
    page.wait_for_function(
        "([s, n]) => +(document.querySelector(s).dataset.drawn || 0) > n", arg=[box, after]
    )


def cells(page, box: str = "#picture-view") -> dict[tuple[int, int], str]:
    return {
        (c["i"], c["j"]): c["v"]
        for c in page.evaluate(
            """s => [...document.querySelectorAll(s + ' svg.pic-cells [data-role=cells] rect')].map((r) =>
              ({i: +r.dataset.row, j: +r.dataset.col, v: r.dataset.value}))""",
            box,
        )
    }


def as_f32(values) -> torch.Tensor:
    return torch.tensor([float(v) for v in values], dtype=torch.float32)


def add_picture(page, png) -> None:
    """The picture added through the page's file input: a new trace with it, and its overlay."""
    before, seen = traces_drawn(page), drawn(page, "#picture-view")
    page.set_input_files("#s-image-file", str(png))
    wait_for_trace(page, before)
    wait_drawn(page, "#picture-view", seen)


def redraw(page, action) -> None:
    seen = drawn(page, "#picture-view")
    action()
    wait_drawn(page, "#picture-view", seen)


def test_the_querys_attention_is_drawn_over_the_picture(page, llava, png):
    page.add_init_script(path=str(AXE))
    open_sentence(page, llava + "/", TEXT)
    assert page.locator("#picture-card").is_hidden()  # no picture yet: no card
    add_picture(page, png)
    meta = api_part(llava, png, fields="entropy_mean")
    [block] = meta["images"]
    [tile] = block["tiles"]
    assert (block["width"], block["height"]) == (W, H)
    assert (tile["rows"], tile["cols"]) == (8, 8)
    assert tile["box"] == [0.0, 32.0, 128.0, 160.0]  # the centre crop, in the picture's pixels
    n, start = meta["n"], tile["start"]
    # How the processor resized it, beside the picture's name and in the picture's alt text.
    assert (
        block["resized"]
        == "resized from 192 x 128 to 96 x 64, cropped to its centre 64 x 64; 64 patches, 64 tokens (one a patch)"
    )
    said = page.locator("#pic-resized").text_content()
    assert said == f"scene.png, {W} × {H} pixels: {block['resized']}."
    assert (
        page.locator("#picture-view img.pic-img")
        .get_attribute("alt")
        .endswith(f"; {block['resized']}")
    )

    # The overlay lies over the picture itself: the picture as sent, the cells' layer on it,
    # the cells over the crop, the rest greyed.
    frame = page.locator("#picture-view .pic-frame")
    img = page.locator("#picture-view img.pic-img")
    assert page.evaluate("() => document.querySelector('#picture-view img').naturalWidth") == W
    assert img.get_attribute("src") == data_url(png.read_bytes())
    pic, layer = img.bounding_box(), page.locator("#picture-view svg.pic-cells").bounding_box()
    assert pic == pytest.approx(layer, abs=0.5) and pic["width"] / pic["height"] == pytest.approx(
        W / H, rel=0.01
    )
    first = page.locator(
        '#picture-view [data-role=cells] rect[data-row="0"][data-col="0"]'
    ).bounding_box()
    last = page.locator(
        '#picture-view [data-role=cells] rect[data-row="7"][data-col="7"]'
    ).bounding_box()
    scale = pic["width"] / W
    assert first["x"] == pytest.approx(pic["x"] + 32 * scale, abs=0.5)
    assert last["x"] + last["width"] == pytest.approx(pic["x"] + 160 * scale, abs=0.5)
    assert last["y"] + last["height"] == pytest.approx(pic["y"] + pic["height"], abs=0.5)
    assert page.locator("#picture-view path[data-role=outside]").count() == 1

    # The chosen head (layer 2, head 3) and the last token as the query: the cells are the
    # server's row at the image's positions, exactly.
    view_change(page, lambda: page.click('#mv-grid button.mv-cell[data-layer="1"][data-head="2"]'))
    redraw(page, lambda: choose(page, "#qk-query", str(n - 1)))
    row = api_part(llava, png, fields="attentions", layer=1, head=2, query=n - 1)["attentions"][0][
        0
    ][0]
    shown = cells(page)
    image_row = row[start : start + 64]
    assert torch.equal(as_f32(shown[(k // 8, k % 8)] for k in range(64)), torch.tensor(image_row))
    assert (
        page.locator("#picture-view .plot-summary")
        .text_content()
        .startswith("strongest patch: row ")
    )
    assert (
        "'s attention (layer 2, head 3)"
        in page.locator("#picture-view .plot-summary").text_content()
    )

    # Hover: the patch's weight as sent, to 3 significant digits.
    page.hover('#picture-view [data-role=cells] rect[data-row="2"][data-col="5"]')
    tip = page.locator("#picture-view .pic-tip")
    assert tip.is_visible()
    assert tip.text_content() == f"row 3, column 6: {readable(row[start + 2 * 8 + 5])}"
    assert float(shown[(2, 5)]) == pytest.approx(row[start + 2 * 8 + 5], rel=1e-6)

    # The keyboard: the cursor moves, the live region reads the patch and its weight.
    page.mouse.move(0, 0)
    frame.focus()
    for key in ("ArrowRight", "ArrowRight", "ArrowDown"):
        page.keyboard.press(key)
    live = page.locator("#picture-card .plot-live").first.text_content()
    said = readable(row[start + 1 * 8 + 2])
    assert live.startswith(f"row 2, column 3: {said} of ")
    assert tip.text_content() == f"row 2, column 3: {said}"
    # "Show the numbers" keeps the exact weight, as the cell's data-value spells it.
    numbers = page.locator("#picture-card .plot-numbers").first.locator("tbody tr").nth(1)
    numbers = numbers.locator("td")
    assert numbers.nth(2).text_content() == shown[(1, 2)]

    # The layer's mean over heads, and rollout: the server's aggregate rows, cut the same way.
    for how in ("head_mean", "rollout"):
        redraw(page, lambda how=how: page.select_option("#pic-how", how))
        matrix = api_part(llava, png, fields=how, layer=1)[how][0]
        expected = matrix[n - 1][start : start + 64]
        got = [float(cells(page)[(k // 8, k % 8)]) for k in range(64)]
        assert got == pytest.approx(expected, rel=1e-6, abs=1e-12), how
        assert page.locator("#pic-note").text_content().endswith(meta_rule(llava, png, how))

    page.locator("#picture-card").scroll_into_view_if_needed()
    assert axe_serious(page) == []


def meta_rule(url: str, png, how: str) -> str:
    return api_part(url, png, fields=how, layer=0)["rules"][how]


def test_a_patch_as_the_query_shows_its_row_and_the_texts_share(page, llava, png):
    open_sentence(page, llava + "/", TEXT)
    add_picture(page, png)
    meta = api_part(llava, png, fields="entropy_mean")
    tile = meta["images"][0]["tiles"][0]
    start = tile["start"]
    # A click on a patch makes it the query (in every view); Enter does the same.
    redraw(
        page, lambda: page.click('#picture-view [data-role=cells] rect[data-row="6"][data-col="4"]')
    )
    query = start + 6 * 8 + 4
    assert page.locator("#qk-query").input_value() == str(query)
    row = api_part(llava, png, fields="attentions", layer=0, head=0, query=query)["attentions"][0][
        0
    ][0]
    shown = cells(page)
    assert torch.equal(
        as_f32(shown[(k // 8, k % 8)] for k in range(64)), torch.tensor(row[start : start + 64])
    )
    assert page.locator("#picture-view [data-role=marked]").count() == 1
    # The text's tokens' weights, as bars: every position outside the image, in order.
    outside = [
        k
        for k in range(meta["n"])
        if not (meta["images"][0]["start"] <= k < meta["images"][0]["stop"])
    ]
    bars = page.locator("#picture-view .pic-others li")
    assert bars.count() == len(outside)
    assert (
        "patch row 7, column 5 of image 1's attention"
        in page.locator("#picture-view .plot-summary").text_content()
    )
    # By keyboard: Enter on the cursor's patch makes it the query.
    page.locator("#picture-view .pic-frame").focus()
    for key in ("ArrowDown", "ArrowDown", "End"):
        page.keyboard.press(key)
    redraw(page, lambda: page.keyboard.press("Enter"))
    assert page.locator("#qk-query").input_value() == str(start + 2 * 8 + 7)
    assert page.evaluate("() => document.activeElement.classList.contains('pic-frame')")


def test_a_split_picture_shows_its_global_view_or_a_tile(page, llava, png):
    open_sentence(page, llava + "/", TEXT)
    add_picture(page, png)
    before, seen = traces_drawn(page), drawn(page, "#picture-view")
    page.select_option("#s-model", "tiny-idefics3")
    wait_for_trace(page, before)
    wait_drawn(page, "#picture-view", seen)
    meta = api_part(llava, png, "tiny-idefics3", fields="entropy_mean")
    tiles = meta["images"][0]["tiles"]
    names = page.locator("#pic-tile option").all_text_contents()
    assert names == [t["label"] for t in tiles[:-1]] + ["the whole picture (global view)"]
    assert page.locator("#pic-tile").input_value() == str(len(tiles) - 1)  # the global view first
    n = meta["n"]
    redraw(page, lambda: choose(page, "#qk-query", str(n - 1)))
    row = api_part(llava, png, "tiny-idefics3", fields="attentions", layer=0, head=0, query=n - 1)
    row = row["attentions"][0][0][0]
    for t in (len(tiles) - 1, 1):
        if t != len(tiles) - 1:
            redraw(page, lambda t=t: page.select_option("#pic-tile", str(t)))
        tile, shown = tiles[t], cells(page)
        k = tile["rows"] * tile["cols"]
        got = as_f32(shown[(c // tile["cols"], c % tile["cols"])] for c in range(k))
        assert torch.equal(got, torch.tensor(row[tile["start"] : tile["start"] + k])), t
    # The second tile's cells cover its box: the picture's top right quarter.
    box = page.locator("#picture-view img.pic-img").bounding_box()
    first = page.locator(
        '#picture-view [data-role=cells] rect[data-row="0"][data-col="0"]'
    ).bounding_box()
    assert first["x"] == pytest.approx(box["x"] + box["width"] * tiles[1]["box"][1] / W, abs=0.5)


def test_the_vision_towers_heads_over_the_picture(page, llava, png):
    page.add_init_script(path=str(AXE))
    open_sentence(page, llava + "/", TEXT)
    add_picture(page, png)
    page.locator("#vision-view").scroll_into_view_if_needed()
    wait_drawn(page, "#vision-view", 0)
    meta = api_part(llava, png, fields="entropy_mean")
    [grid] = meta["vision"]["tiles"]
    rows, cols = grid["rows"], grid["cols"]
    seen = drawn(page, "#vision-view")
    page.select_option("#vt-layer", "1")
    wait_drawn(page, "#vision-view", seen)
    seen = drawn(page, "#vision-view")
    page.click('#vision-view [data-role=cells] rect[data-row="1"][data-col="2"]')
    wait_drawn(page, "#vision-view", seen)
    matrix = api_part(llava, png, fields="vision", image=0, tile=0, layer=1, head=0)["vision"][0][0]
    shown = cells(page, "#vision-view")
    expected = matrix[1 * cols + 2]
    assert torch.equal(
        as_f32(shown[(k // cols, k % cols)] for k in range(rows * cols)), torch.tensor(expected)
    )
    assert page.locator("#vision-view [data-role=marked]").count() == 1
    assert axe_serious(page) == []


def test_qwen_says_its_resize_and_each_positions_three_indices(page, llava, png):
    """Qwen2.5-VL: the picture card says the stretch image_grid_thw reports; the query-key card
    says the (temporal, height, width) indices of the query and of its largest weight's key, and
    each M-RoPE section's pairs turned by the difference, all meta.mrope's."""
    open_sentence(page, llava + "/", TEXT)
    add_picture(page, png)
    before, seen = traces_drawn(page), drawn(page, "#picture-view")
    page.select_option("#s-model", QWEN)
    wait_for_trace(page, before)
    wait_drawn(page, "#picture-view", seen)
    meta = api_part(llava, png, QWEN, fields="entropy_mean")
    [block] = meta["images"]
    resize = block["resize"]
    [tile] = block["tiles"]
    assert (resize["to"]["height"], resize["to"]["width"]) == (tile["rows"] * 16, tile["cols"] * 16)
    said = page.locator("#pic-resized").text_content()
    assert said == f"scene.png, {W} × {H} pixels: {block['resized']}."
    n = meta["n"]
    view_change(page, lambda: page.select_option("#qk-query", str(n - 1)))
    row = torch.tensor(
        api_part(llava, png, QWEN, fields="attentions", layer=0, head=0, query=n - 1)["attentions"][
            0
        ][0][0]
    )
    key = int(row.argmax())
    mrope = meta["mrope"]
    t, h, w = (mrope["positions"][a][key] for a in range(3))
    tq, hq, wq = (mrope["positions"][a][n - 1] for a in range(3))
    st, sh, sw = mrope["sections"]
    about = page.locator("#qk-view .qk-about").all_text_contents()
    [note] = [a for a in about if a.startswith("M-RoPE: ")]
    assert f"(token {n}) is at (temporal {tq}, height {hq}, width {wq});" in note
    assert (
        f"(token {key + 1}, the query's largest weight) at (temporal {t}, height {h}, width {w})."
        in note
    )
    assert note.endswith(
        f"temporal: {st} pairs turn by Δ{tq - t}; height: {sh} pairs by Δ{hq - h}; "
        f"width: {sw} pairs by Δ{wq - w}."
    )


@pytest.mark.parametrize("width", [1280, 480])
def test_screenshots(page, llava, png, width):
    page.set_viewport_size({"width": width, "height": 900})
    open_sentence(page, llava + "/", TEXT)
    add_picture(page, png)
    meta = api_part(llava, png, fields="entropy_mean")
    redraw(page, lambda: choose(page, "#qk-query", str(meta["n"] - 1)))
    page.locator("#picture-card").scroll_into_view_if_needed()
    page.hover('#picture-view [data-role=cells] rect[data-row="3"][data-col="4"]')
    ARTIFACTS.mkdir(exist_ok=True)
    snap(page.locator("#picture-card"), path=str(ARTIFACTS / f"picture-{width}.png"))
    no_overflow = page.evaluate(
        "() => document.documentElement.scrollWidth <= window.innerWidth + 1"
    )
    assert no_overflow
