"""Images with the text in sentence mode, for a vision-language folder (a tiny LLaVA): added by
the file picker, pasted, or dropped; checked in the page against the server's caps (type, size,
count) and by the server (its 422 said as any other error); sent with the trace; each image a
labelled block of the large heatmap that collapses to one row (the mean of its rows) and one
column (the exact sum over its keys) or expands to every patch. The input is hidden for a model
that reads no images (MiniLM), and axe finds nothing serious."""

from __future__ import annotations

import base64
from pathlib import Path

import httpx
import pytest

from attnviz.app import create_app
from attnviz.settings import Settings
from tests.browser.helpers import (
    AXE,
    axe_serious,
    hover_large,
    large_heatmap,
    open_sentence,
    snap,
    traces_drawn,
    views_drawn,
    wait_for_trace,
    wait_for_views,
)
from tests.support.checkpoints_vlm import make_tiny_llava
from tests.support.images import SVG, encoded, noise
from tests.support.servers import served

pytestmark = pytest.mark.browser

NAME = "tiny-llava"
TEXT = "A photo of <image> a dog on the grass"
SHOTS = Path("/work/shots/page1")
MAX_BYTES = 64 * 1024  # the server's cap on one image, lowered so that a test file passes it


@pytest.fixture(scope="module")
def llava_server(tmp_path_factory):
    folder = make_tiny_llava(tmp_path_factory.mktemp("m") / NAME)
    settings = Settings(
        device="cpu", builtin_model=False, models=str(folder), max_image_bytes=MAX_BYTES
    )
    with served(create_app(settings)) as url:
        yield url


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("images")
    made = {
        "dog.png": encoded(noise(64, 48)),
        "cat.jpg": encoded(noise(40, 40), "JPEG"),
        "big.png": encoded(noise(200, 200)),  # past MAX_BYTES
        "drawing.svg": SVG,
        "fake.png": SVG,  # an SVG named .png: the browser sees image/png, the server refuses it
    }
    for name, data in made.items():
        (root / name).write_bytes(data)
    assert (root / "big.png").stat().st_size > MAX_BYTES
    return {name: root / name for name in made}


def data_url(path: Path, kind: str = "image/png") -> str:
    return f"data:{kind};base64," + base64.b64encode(path.read_bytes()).decode()


def add_files(page, *paths: Path) -> None:
    before = traces_drawn(page)
    page.set_input_files("#s-image-file", [str(p) for p in paths])
    wait_for_trace(page, before)


def fill_text(page, text: str) -> None:
    before = traces_drawn(page)
    page.fill("#s-text", text)
    wait_for_trace(page, before)


def error_line(page) -> str:
    return page.locator("#sentence-mode #error").text_content() or ""


def choose_collapse(page, value: str) -> None:
    before = views_drawn(page)
    page.check(f'input[name="s-collapse"][value="{value}"]')
    wait_for_views(page, before)


DROP = """([selector, b64, name, type, kind]) => {
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const data = new DataTransfer();
  data.items.add(new File([bytes], name, { type }));
  const target = document.querySelector(selector);
  if (kind === "paste") {
    target.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
  } else {
    target.dispatchEvent(new DragEvent("dragover", { dataTransfer: data, bubbles: true, cancelable: true }));
    target.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
  }
}"""


def hand_over(page, kind: str, selector: str, path: Path, type_: str) -> None:
    """Paste (a ClipboardEvent) or drop (a DragEvent) `path` as a file on `selector`."""
    b64 = base64.b64encode(path.read_bytes()).decode()
    before = traces_drawn(page)
    page.evaluate(DROP, [selector, b64, path.name, type_, kind])
    wait_for_trace(page, before)


def shot(page, name: str, selector: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    snap(page.locator(selector), path=str(SHOTS / name))


def test_an_image_by_picker_is_traced_and_its_block_collapses(page, llava_server, files):
    page.add_init_script(path=str(AXE))
    open_sentence(page, llava_server + "/")
    box = page.locator("#s-images")
    assert box.is_visible()
    hint = page.locator("#s-images-hint").text_content()
    assert "<image>" in hint and 10 <= len(hint.split()) <= 60
    assert (
        "up to 4 images, 64 KB each (PNG, JPEG, WEBP)"
        in page.locator("#s-image-caps").text_content()
    )
    assert page.locator("#s-image-link").is_hidden()

    add_files(page, files["dog.png"])
    fill_text(page, TEXT)
    items = page.locator("#s-image-list li")
    assert items.count() == 1
    assert "image 1" in items.first.text_content() and "dog.png" in items.first.text_content()
    assert page.locator("#s-image-link").is_visible()  # the link cannot carry it
    remove = items.first.get_by_role("button", name="Remove image 1, dog.png")
    box_size = remove.bounding_box()
    assert box_size["width"] >= 24 and box_size["height"] >= 24

    # The trace the page drew is the API's for the same text and image.
    trace = httpx.post(
        f"{llava_server}/api/trace",
        json={"model": NAME, "text": TEXT, "images": [data_url(files["dog.png"])]},
        timeout=60,
    ).json()
    image = trace["images"][0]
    start, stop = image["start"], image["stop"]
    assert stop - start == 64  # 8 x 8 patches: collapsed by default
    assert page.locator("#s-blocks").text_content().startswith("image 1: 8 × 8 patches (64 tokens)")
    assert page.locator('input[name="s-collapse"][value="collapsed"]').is_checked()

    weights = trace["attentions"][0][0]  # layer 1, head 1: the large heatmap's
    n = len(weights)
    collapsed = large_heatmap(page)
    m = n - (stop - start) + 1
    assert len(collapsed["z"]) == m
    assert collapsed["labels"][start] == "image 1"
    # Every other row's image column: the exact sum of its weights over the image's keys.
    others = [r for r in range(n) if not start <= r < stop]
    for i, row in enumerate(others):
        drawn = i if row < start else i + 1
        assert collapsed["z"][drawn][start] == pytest.approx(
            sum(weights[row][start:stop]), abs=1e-6
        )
    # The image's row: the mean of its query rows.
    mean_row = [sum(weights[r][k] for r in range(start, stop)) / (stop - start) for k in range(n)]
    assert collapsed["z"][start][0] == pytest.approx(mean_row[0], abs=1e-6)
    assert collapsed["z"][start][start] == pytest.approx(sum(mean_row[start:stop]), abs=1e-6)
    tip = hover_large(page, start + 2, start)
    assert "exact: the sum over the image's 64 keys" in tip
    assert "sum of the weights over its patches" in page.locator("#mv-large").text_content()
    page.locator("#model-view-card").scroll_into_view_if_needed()
    shot(page, "heatmap-collapsed-1280.png", "#model-view-card")

    # Expanded: every patch its own row and column, the trace's very weights.
    choose_collapse(page, "expanded")
    expanded = large_heatmap(page)
    assert len(expanded["z"]) == n
    assert expanded["z"] == [[pytest.approx(w, abs=1e-7) for w in r] for r in weights]
    assert (
        "image 1: 8 × 8 patches" in page.locator("#mv-large").text_content()
    )  # the block, in words
    shot(page, "heatmap-expanded-1280.png", "#model-view-card")
    assert expanded["labels"][start] == "image 1 · 1,1"  # each patch named by its place
    assert expanded["labels"][stop - 1] == "image 1 · 8,8"
    assert "image 1 · 8,8" in page.locator("#head-view").text_content()

    choose_collapse(page, "collapsed")
    assert "image 1" in page.locator("#head-view").text_content()
    page.locator("#head-view").scroll_into_view_if_needed()
    shot(page, "headview-collapsed-1280.png", "#head-view")
    # The share link has no image in it, and still opens the text.
    assert "data:image" not in page.url and "base64" not in page.url
    page.locator("#s-input-h").scroll_into_view_if_needed()
    shot(page, "input-card-1280.png", ".sentence-input")
    assert axe_serious(page) == []

    page.set_viewport_size({"width": 480, "height": 900})
    page.wait_for_timeout(400)  # the views redraw after a resize
    shot(page, "input-card-480.png", ".sentence-input")
    choose_collapse(page, "expanded")
    shot(page, "heatmap-expanded-480.png", "#model-view-card")
    choose_collapse(page, "collapsed")
    shot(page, "heatmap-collapsed-480.png", "#model-view-card")

    # Remove: the image goes, the next trace is the text's alone.
    before = traces_drawn(page)
    page.get_by_role("button", name="Remove image 1, dog.png").click()
    wait_for_trace(page, before)
    assert page.locator("#s-image-list li").count() == 0
    assert page.locator("#s-collapse-box").is_hidden()


def test_paste_and_drop_add_images(page, llava_server, files):
    open_sentence(page, llava_server + "/")
    hand_over(page, "paste", "#s-text", files["dog.png"], "image/png")
    assert page.locator("#s-image-list li").count() == 1
    assert "image 1: 8 × 8 patches" in page.locator("#s-blocks").text_content()
    before = traces_drawn(page)
    page.get_by_role("button", name="Remove image 1, dog.png").click()
    wait_for_trace(page, before)
    hand_over(page, "drop", ".sentence-input", files["cat.jpg"], "image/jpeg")
    assert page.locator("#s-image-list li").count() == 1
    assert "cat.jpg" in page.locator("#s-image-list li").first.text_content()
    assert error_line(page) == ""


def test_two_images_at_their_placeholders(page, llava_server, files):
    open_sentence(page, llava_server + "/")
    fill_text(page, "First <image> then <image> last")
    add_files(page, files["dog.png"], files["cat.jpg"])
    assert page.locator("#s-image-list li").count() == 2
    blocks = page.locator("#s-blocks").text_content()
    assert "image 1: 8 × 8 patches" in blocks and "image 2: 8 × 8 patches" in blocks
    labels = large_heatmap(page)["labels"]
    assert labels.count("image 1") == 1 and labels.count("image 2") == 1


def wait_error(page, text: str) -> None:
    page.wait_for_function(
        "t => (document.querySelector('#sentence-mode #error').textContent || '').includes(t)",
        arg=text,
    )


def test_files_past_the_rules_are_refused_with_the_rule(page, llava_server, files):
    open_sentence(page, llava_server + "/")
    page.set_input_files("#s-image-file", str(files["drawing.svg"]))
    wait_error(page, "an image must be one of PNG, JPEG, WEBP")
    assert "drawing.svg is of type image/svg+xml" in error_line(page)
    page.set_input_files("#s-image-file", str(files["big.png"]))
    wait_error(page, "each image may be at most 64 KB")
    assert page.locator("#s-image-list li").count() == 0
    # Four at most: the fifth is refused by the page, which sent none of them.
    fill_text(page, "<image> <image> <image> <image> four")
    add_files(page, *[files["dog.png"]] * 4)
    assert page.locator("#s-image-list li").count() == 4
    assert page.locator("#s-image-add").is_disabled()
    page.set_input_files("#s-image-file", str(files["cat.jpg"]))
    wait_error(page, "at most 4 images per text; remove one to add cat.jpg")
    assert page.locator("#s-image-list li").count() == 4


def test_the_servers_refusal_is_said(page, console, llava_server, files):
    """An SVG named .png passes the page's check of its type; the server reads it and refuses it
    with a 422 naming the field, which the error line says."""
    console.allow(r"status of 422")
    open_sentence(page, llava_server + "/")
    page.set_input_files("#s-image-file", str(files["fake.png"]))
    wait_error(page, "images[0]: not a PNG, JPEG or WebP image")


def test_the_image_input_is_hidden_for_minilm(page, live_server):
    open_sentence(page, live_server + "/")
    assert page.locator("#s-images").is_hidden()
    assert page.locator("#s-collapse-box").is_hidden()
    assert page.locator("#s-blocks").is_hidden()
