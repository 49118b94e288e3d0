"""A text with images in Python: ``attnviz.trace(image=...)`` (a path, a PIL image, bytes, or a
list of them) and ``attnviz.Client.trace`` (the files read here, sent as data URLs) trace the
model's vision tower too; the Trace carries each picture's preview, and the one-file export
(``save_html``, ``POST /api/export``) embeds it, a PNG of at most 512 px on its long side, in
the first part's meta.images[i].data_url, so that it draws offline."""

from __future__ import annotations

import base64
import gzip
import io
import json
import re
import struct

import pytest
from fastapi.testclient import TestClient
from PIL import Image

import attnviz
from attnviz.app import create_app
from attnviz.errors import TraceError
from attnviz.settings import Settings
from attnviz.wire.compact import header
from tests.support.checkpoints_vlm import make_tiny_llava
from tests.support.images import data_url, encoded, noise
from tests.support.servers import served

TEXT = "<image> what is in this picture"


@pytest.fixture(scope="session")  # one folder a process: its trace service loads it once
def folder(tmp_path_factory):
    return make_tiny_llava(tmp_path_factory.mktemp("py-vlm") / "tiny-llava")


def first_part_meta(html: str) -> dict:
    """The meta of the file's first part (the one its page shows first)."""
    blob = re.search(r'id="attnviz-parts">([^<]*)<', html)
    assert blob
    raw = gzip.decompress(base64.b64decode(blob.group(1)))
    (n,) = struct.unpack("<I", raw[:4])
    index = json.loads(raw[4 : 4 + n])
    body = raw[4 + n : 4 + n + index[0]["size"]]  # the header is never shuffled
    return json.loads(header(body)["__metadata__"]["attnviz"])


def picture_of(url: str) -> Image.Image:
    assert url.startswith("data:image/png;base64,")
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))


def test_a_pil_image_a_path_and_bytes_are_traced_with_the_text(folder, tmp_path):
    big = noise(1200, 600)
    path = tmp_path / "photo.png"
    big.save(path)
    jpeg = encoded(noise(40, 30), "JPEG")
    t = attnviz.trace(model=str(folder), text=f"{TEXT} and <image>", image=[path, jpeg],
                      fields="vision")  # fmt: skip
    assert [(im["width"], im["height"], im["type"]) for im in t.meta["images"]] == [
        (1200, 600, "png"),
        (40, 30, "jpeg"),
    ]
    vision = t.meta["vision"]
    P = vision["tiles"][0]["rows"] * vision["tiles"][0]["cols"]
    assert t["vision"].shape == (vision["layers"], vision["heads"], P, P)
    assert len(t.pictures) == 2
    assert picture_of(t.pictures[0]).size == (512, 256)  # shrunk to 512 on its long side
    assert picture_of(t.pictures[1]).size == (40, 30)  # never enlarged
    # A part of it keeps the pictures; one PIL image alone is one picture.
    assert t.part(fields="entropy_mean").pictures == t.pictures
    one = attnviz.trace(model=str(folder), text=TEXT, image=noise(64, 64), fields="entropy_mean")
    assert len(one.meta["images"]) == 1 and len(one.pictures) == 1


def test_the_file_embeds_each_picture(folder, tmp_path):
    t = attnviz.trace(model=str(folder), text=TEXT, image=noise(900, 300), fields="thumbs",
                      thumb=1)  # fmt: skip
    path = t.save_html(tmp_path / "trace.html")
    meta = first_part_meta(path.read_text())
    [image] = meta["images"]
    assert picture_of(image["data_url"]).size == (512, 171)
    assert (image["width"], image["height"]) == (900, 300)  # the grid's boxes: the original's


def test_a_bad_image_names_its_argument(folder):
    with pytest.raises(TraceError, match=r"^image: empty"):
        attnviz.trace(model=str(folder), text=TEXT, image=b"")
    with pytest.raises(TraceError, match=r"^image\[1\]: "):
        attnviz.trace(model=str(folder), text=f"{TEXT} <image>", image=[noise(), b"<svg/>"])


@pytest.mark.slow
def test_the_client_sends_the_images_and_export_embeds_them(folder, tmp_path):
    settings = Settings(device="cpu", builtin_model=False, models=str(folder))
    app = create_app(settings)
    path = tmp_path / "cat.png"
    noise(48, 32).save(path)
    with served(app) as url:
        t = attnviz.Client(url).trace(model="tiny-llava", text=TEXT, image=path,
                                      fields="entropy_mean")  # fmt: skip
    assert (t.meta["images"][0]["width"], t.meta["images"][0]["height"]) == (48, 32)
    assert picture_of(t.pictures[0]).size == (48, 32)
    body = {"trace": {"model": "tiny-llava", "text": TEXT,
                      "images": [data_url(encoded(noise(1024, 512)))]}}  # fmt: skip
    with TestClient(create_app(settings)) as c:
        r = c.post("/api/export", json=body)
    assert r.status_code == 200, r.text
    [image] = first_part_meta(r.text)["images"]
    assert picture_of(image["data_url"]).size == (512, 256)


@pytest.mark.browser
def test_the_file_with_a_picture_opens_offline(browser, folder, tmp_path):
    """The file draws Attention on the picture from file:// with no request outside it: the
    picture is the file's own preview (meta.images[0].data_url), the cells are the chosen
    query's row at the image's tokens, and the text alternative names the picture, how the
    processor resized it, and the strongest patch."""
    from tests.python.offline import opened, wait_drawn

    t = attnviz.trace(model=str(folder), text=TEXT, image=noise(96, 64), fields="thumbs",
                      thumb=1)  # fmt: skip
    n = len(t.tokens)
    path = t.save_html(tmp_path / "trace.html", views=["model", "head", "picture"], layer=1,
                       head=2, query=n - 1)  # fmt: skip
    [block] = first_part_meta(path.read_text())["images"]
    [tile] = block["tiles"]
    row = t.part(fields="attentions", layer=1, head=2, query=n - 1)["attentions"].reshape(-1)
    with opened(browser, path) as (page, errors):
        wait_drawn(page)
        page.wait_for_function("+(document.querySelector('#picture-view').dataset.drawn||0) > 0")
        assert page.evaluate("document.getElementById('error').hidden")
        assert page.locator("#picture-card").is_visible()
        img = page.locator("#picture-view img.pic-img")
        assert img.get_attribute("src") == block["data_url"]
        assert page.evaluate("document.querySelector('#picture-view img').naturalWidth") == 96
        got = page.evaluate(
            """() => [...document.querySelectorAll('#picture-view [data-role=cells] rect')]
              .map((r) => [+r.dataset.row, +r.dataset.col, r.dataset.value])"""
        )
        k = tile["rows"] * tile["cols"]
        assert len(got) == k
        shown = {(i, j): float(v) for i, j, v in got}
        values = [shown[(c // tile["cols"], c % tile["cols"])] for c in range(k)]
        expected = row[tile["start"] : tile["start"] + k]
        assert values == pytest.approx(expected.tolist(), rel=1e-6, abs=1e-12)
        opacity = page.evaluate(
            "Math.max(...[...document.querySelectorAll('#picture-view [data-role=cells] rect')]"
            ".map((r) => +r.getAttribute('fill-opacity')))"
        )
        assert opacity == pytest.approx(0.75)  # the heat map: the largest weight's cell
        summary = page.locator("#picture-view .plot-summary").text_content()
        assert summary.startswith("strongest patch: row ")
        assert "(layer 2, head 3)" in summary
        assert page.locator("#picture-view table").count() == 1  # the weights as a table
        alt = f"image 1: {block['description']}; {block['resized']}"
        assert img.get_attribute("alt") == alt
        assert page.locator("#pic-resized").text_content() == (
            f"image 1, 96 × 64 pixels: {block['resized']}."
        )
    assert errors == []
