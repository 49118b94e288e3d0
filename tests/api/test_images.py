"""A text trace's images over HTTP: each bad one a 4xx naming ``images[i]``, a text-only model
refusing any, the body cap raised for images' data URLs only, and /api/models' reads_images."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.limits import LIMITS, data_url_chars
from attnviz.pretrained.registry import BUILTIN_NAME
from attnviz.settings import Settings
from tests.support.images import SVG, data_url, encoded, noise, png_claiming

TEXT = "a dog on the grass"
PNG = encoded(noise(16, 16))


def post(client: TestClient, images: list[str], model: str = BUILTIN_NAME, text: str = TEXT):
    return client.post("/api/trace", json={"model": model, "text": text, "images": images})


def truncated_png() -> bytes:
    data = encoded(noise(64, 64))
    return data[: len(data) // 2]


@pytest.mark.parametrize(
    ("url", "says"),
    [
        (data_url(truncated_png()), "images[0]: the PNG is truncated or damaged ("),
        (
            data_url(png_claiming(30_000, 30_000)),
            f"images[0]: 30,000 × 30,000 pixels is past this server's cap of "
            f"{LIMITS.max_image_pixels:,} pixels",
        ),
        (
            data_url(SVG, "image/png"),
            "images[0]: not a PNG, JPEG or WebP image (it starts like SVG/XML)",
        ),
        ("data:image/png;base64,", "images[0]: empty"),
        (
            data_url(encoded(noise(8, 8).convert("P"), "GIF"), "image/gif"),
            "images[0]: not a PNG, JPEG or WebP image (it starts like GIF)",
        ),
        ("data:image/png;base64,%%%%", "images[0]: the data URL's data is not valid base64"),
        ("/etc/passwd", "images[0]: not a data URL (data:image/png;base64,...)"),
        ("data:text/plain;base64,QUJD", "images[0]: a data URL of text/plain, not of an image"),
    ],
    ids=["truncated", "bomb", "svg", "empty", "gif", "base64", "path", "not-image"],
)
def test_a_bad_image_is_a_422_naming_it(client, url, says):
    r = post(client, [url])
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["message"].startswith(says), body["message"]
    assert "Traceback" not in r.text and "PIL" not in r.text
    assert body["detail"][0]["loc"][0] == "body"


def test_the_second_image_is_named_when_it_is_the_bad_one(client):
    r = post(client, [data_url(PNG), data_url(b"GIF89a...", "image/gif")])
    assert r.status_code == 422
    assert r.json()["message"].startswith("images[1]: not a PNG, JPEG or WebP image")


def test_too_many_images(client):
    r = post(client, [data_url(PNG)] * (LIMITS.max_images + 1))
    assert r.status_code == 422
    message = r.json()["message"]
    assert message.startswith("images: ") and f"at most {LIMITS.max_images} items" in message


def test_a_text_only_model_refuses_images(client):
    r = post(client, [data_url(PNG)])
    assert r.status_code == 422, r.text
    assert r.json()["message"] == f"images: model '{BUILTIN_NAME}' reads text only"
    # With no image the same request is traced.
    r = client.post("/api/trace?fields=entropy_mean", json={"model": BUILTIN_NAME, "text": TEXT})
    assert r.status_code == 200


def test_models_list_reads_images(client):
    body = client.get("/api/models").json()
    assert body["models"] and all(m["reads_images"] is False for m in body["models"])
    assert body["images"] == {
        "max_images": LIMITS.max_images,
        "max_bytes": 10 * 2**20,  # ATTNVIZ_MAX_IMAGE_BYTES' default
        "max_pixels": LIMITS.max_image_pixels,
        "types": ["image/png", "image/jpeg", "image/webp"],
    }


# -- the body cap -------------------------------------------------------------------------------

BODY, IMAGE = 4096, 64 * 1024  # a small body cap, and a small image cap


@pytest.fixture(scope="module")
def capped(tiny_gpt2_dir):
    app = create_app(
        Settings(
            device="cpu",
            builtin_model=False,
            models=str(tiny_gpt2_dir),
            max_body_bytes=BODY,
            max_image_bytes=IMAGE,
        )
    )
    with TestClient(app) as c:
        yield c


def image_of(n_bytes: int) -> bytes:
    """A valid PNG of about ``n_bytes`` (noise does not compress)."""
    side = int((n_bytes / 3) ** 0.5)
    return encoded(noise(side, side))


def test_a_body_over_the_cap_with_no_image_is_still_413(capped):
    r = capped.post("/api/trace", json={"model": "tiny-gpt2", "text": "a " * BODY})
    assert r.status_code == 413
    assert r.json()["message"] == f"body: larger than this server's cap of {BODY:,} bytes"


def test_a_large_image_under_the_image_cap_passes_the_body_cap(capped):
    png = image_of(IMAGE - 4096)
    assert len(data_url(png)) > BODY and len(png) <= IMAGE
    r = post(capped, [data_url(png)] * LIMITS.max_images, model="tiny-gpt2")
    # Through the body cap and decoded: refused only because this model reads text only.
    assert r.status_code == 422, r.text
    assert r.json()["message"] == "images: model 'tiny-gpt2' reads text only"


def test_an_image_over_the_image_cap_is_a_422_naming_it(capped):
    png = image_of(IMAGE + 8192)
    assert len(data_url(png)) < data_url_chars(IMAGE) * LIMITS.max_images
    r = post(capped, [data_url(png)], model="tiny-gpt2")
    assert r.status_code == 422, r.text
    assert r.json()["message"] == (
        f"images[0]: {len(png):,} bytes is past this server's cap of {IMAGE:,} bytes"
    )


def test_images_do_not_carry_a_long_text_past_the_cap(capped):
    """The data URLs are what may exceed the cap; the rest of the body still keeps to it."""
    r = post(capped, [data_url(PNG)], model="tiny-gpt2", text="a " * BODY)
    assert r.status_code == 413
    assert r.json()["message"] == f"body: larger than this server's cap of {BODY:,} bytes"


def test_a_body_past_the_cap_with_images_is_413_saying_both(capped):
    whole = BODY + LIMITS.max_images * data_url_chars(IMAGE)
    png = image_of(IMAGE)
    r = post(capped, [data_url(png)] * (whole // len(data_url(png)) + 1), model="tiny-gpt2")
    assert r.status_code == 413
    assert r.json()["message"] == (
        f"body: larger than this server's cap of {BODY:,} bytes ({whole:,} with images as "
        "data URLs)"
    )
