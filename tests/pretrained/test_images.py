"""One image for a model (attnviz/pretrained/images.py): sniffed from its bytes, its pixels
capped from the header before any is decoded, turned upright, in RGB; every refusal a short
message naming the field, never Pillow's."""

from __future__ import annotations

import base64
import tracemalloc

import pytest
from PIL import Image

from attnviz.limits import LIMITS
from attnviz.pretrained.images import (
    DecodedImage,
    ImageError,
    data_url_payload,
    decode_bytes,
    decode_data_url,
    decode_image,
    load_image,
    read_image_file,
    sniff,
    webp_size,
)
from tests.support.images import SVG, data_url, encoded, noise, png_claiming, webp_claiming

F = "images[0]"


def refused(data: bytes, **kw) -> str:
    with pytest.raises(ImageError) as info:
        decode_bytes(data, F, **kw)
    message = str(info.value)
    assert message.startswith(f"{F}: "), message
    assert "Traceback" not in message and "PIL" not in message, message
    return message


def test_a_png_decodes_to_rgb_with_its_description():
    d = decode_bytes(encoded(noise(64, 48)), F)
    assert isinstance(d, DecodedImage)
    assert (d.type, d.size, d.original_size, d.rotated) == ("png", (64, 48), (64, 48), False)
    assert d.image.mode == "RGB"
    assert d.image.tobytes() == noise(64, 48).tobytes()  # lossless, pixel for pixel
    assert d.describe() == "PNG, 64 × 48 pixels"
    assert d.as_json()["width"] == 64 and d.as_json()["height"] == 48


def test_a_truncated_png_is_refused_as_damaged():
    data = encoded(noise(64, 64))
    message = refused(data[: len(data) // 2])
    assert message.startswith(f"{F}: the PNG is truncated or damaged ("), message
    assert "64 × 64" in message  # its header was read: what it claimed is said


def test_a_png_cut_inside_its_header_is_refused_as_damaged():
    message = refused(encoded(noise())[:20])
    assert message == f"{F}: the PNG is truncated or damaged (its header could not be read)"


def test_a_truncated_jpeg_is_refused_as_damaged():
    data = encoded(noise(64, 64), "JPEG", quality=90)
    message = refused(data[: len(data) // 2])
    assert message.startswith(f"{F}: the JPEG is truncated or damaged ("), message


def test_a_30000_square_png_is_refused_from_its_header_before_any_pixel():
    bomb = png_claiming(30_000, 30_000)
    assert len(bomb) < 200  # a few dozen bytes that claim 2.7 GB of RGB
    tracemalloc.start()
    try:
        message = refused(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert message == (
        f"{F}: 30,000 × 30,000 pixels is past this server's cap of "
        f"{LIMITS.max_image_pixels:,} pixels"
    )
    assert peak < 10 * 2**20  # no image buffer was allocated


def test_a_webp_past_the_cap_is_refused_from_its_header():
    assert refused(webp_claiming(16_384, 16_384)) == (
        f"{F}: 16,384 × 16,384 pixels is past this server's cap of "
        f"{LIMITS.max_image_pixels:,} pixels"
    )


def test_the_webp_size_read_from_each_kind_of_header():
    for im, kw in ((noise(30, 20), {"lossless": True}), (noise(30, 20), {"quality": 50})):
        assert webp_size(encoded(im, "WEBP", **kw)) == (30, 20)
    assert webp_size(webp_claiming(300, 200)) == (300, 200)
    assert webp_size(b"RIFF\x00\x00\x00\x00WEBP") is None


def test_an_image_just_past_the_pixel_cap_is_refused_and_one_within_is_not_checked_late():
    side = int(LIMITS.max_image_pixels**0.5) + 1
    assert "is past this server's cap" in refused(png_claiming(side, side))
    # Within the cap the header passes and the (absent) rows are the next refusal.
    assert "truncated or damaged" in refused(png_claiming(1000, 1000))


def test_an_svg_named_png_is_refused_by_its_bytes(tmp_path):
    path = tmp_path / "photo.png"
    path.write_bytes(SVG)
    with pytest.raises(ImageError) as info:
        read_image_file(path, F)
    assert str(info.value) == f"{F}: not a PNG, JPEG or WebP image (it starts like SVG/XML)"
    # The same through a data URL that declares it a PNG: the declared type decides nothing.
    with pytest.raises(ImageError, match=r"it starts like SVG/XML"):
        decode_data_url(data_url(SVG, "image/png"), F)


def test_an_empty_file_is_refused(tmp_path):
    path = tmp_path / "empty.png"
    path.write_bytes(b"")
    with pytest.raises(ImageError) as info:
        read_image_file(path, F)
    assert str(info.value) == f"{F}: empty"
    assert refused(b"") == f"{F}: empty"
    with pytest.raises(ImageError) as info:
        decode_data_url("data:image/png;base64,", F)
    assert str(info.value) == f"{F}: empty"


def test_a_gif_is_refused_with_what_it_is():
    gif = encoded(noise(8, 8).convert("P"), "GIF")
    assert refused(gif) == f"{F}: not a PNG, JPEG or WebP image (it starts like GIF)"


def test_other_bytes_are_refused_with_their_start():
    assert refused(b"hello world").endswith("(it starts with bytes 68 65 6c 6c 6f 20 77 6f)")
    assert "HTML" in refused(b"<!DOCTYPE html><html></html>")
    assert "BMP" in refused(encoded(noise(4, 4), "BMP"))


def test_a_jpeg_with_exif_orientation_6_comes_out_turned_upright():
    # Stored 40 wide, 20 high: the left half red, the right half blue. Orientation 6 means
    # "turn 90 degrees clockwise to show": upright it is 20 wide, 40 high, red on top.
    im = Image.new("RGB", (40, 20), (0, 0, 255))
    im.paste((255, 0, 0), (0, 0, 20, 20))
    exif = Image.Exif()
    exif[0x0112] = 6
    d = decode_bytes(encoded(im, "JPEG", quality=95, exif=exif), F)
    assert (d.type, d.original_size, d.size, d.rotated) == ("jpeg", (40, 20), (20, 40), True)
    top, bottom = d.image.getpixel((10, 5)), d.image.getpixel((10, 35))
    assert top[0] > 200 and top[2] < 60, top  # red
    assert bottom[2] > 200 and bottom[0] < 60, bottom  # blue
    assert d.describe() == (
        "JPEG, 40 × 20 pixels (turned upright by its EXIF orientation: 20 × 40)"
    )


def test_a_jpeg_turned_half_round_says_so_with_its_size_unchanged():
    im = Image.new("RGB", (40, 20), (0, 0, 255))
    im.paste((255, 0, 0), (0, 0, 20, 20))
    exif = Image.Exif()
    exif[0x0112] = 3  # 180 degrees
    d = decode_bytes(encoded(im, "JPEG", quality=95, exif=exif), F)
    assert (d.size, d.rotated, d.orientation) == ((40, 20), True, 3)
    assert d.image.getpixel((35, 10))[0] > 200  # red now on the right
    assert d.describe() == "JPEG, 40 × 20 pixels (turned upright by its EXIF orientation: 40 × 20)"


def test_a_webp_decodes():
    d = decode_bytes(encoded(noise(30, 20), "WEBP", lossless=True), F)
    assert (d.type, d.size, d.image.mode) == ("webp", (30, 20), "RGB")
    assert d.image.tobytes() == noise(30, 20).tobytes()


def test_a_transparent_png_is_laid_on_white():
    im = Image.new("RGBA", (4, 2), (0, 0, 0, 0))  # transparent black
    im.putpixel((0, 0), (255, 0, 0, 255))  # one opaque red pixel
    im.putpixel((1, 0), (0, 0, 255, 128))  # one half-transparent blue pixel
    d = decode_bytes(encoded(im), F)
    assert d.image.mode == "RGB"
    assert d.image.getpixel((3, 1)) == (255, 255, 255)
    assert d.image.getpixel((0, 0)) == (255, 0, 0)
    r, g, b = d.image.getpixel((1, 0))
    assert 120 < r < 135 and 120 < g < 135 and b == 255  # half way from white to blue


def test_a_palette_png_with_transparency_and_16_bit_grey_become_rgb():
    p = Image.new("P", (4, 4), 0)
    p.putpalette([0, 0, 0, 255, 0, 0] + [0] * 762)
    p.putpixel((1, 1), 1)
    d = decode_bytes(encoded(p, transparency=0), F)
    assert d.image.getpixel((0, 0)) == (255, 255, 255) and d.image.getpixel((1, 1)) == (255, 0, 0)
    grey = Image.new("I;16", (4, 4), 65535)
    assert decode_bytes(encoded(grey), F).image.getpixel((0, 0)) == (255, 255, 255)


def test_the_byte_cap():
    data = encoded(noise(64, 64))
    message = refused(data, max_bytes=1000)
    assert message == f"{F}: {len(data):,} bytes is past this server's cap of 1,000 bytes"
    assert decode_bytes(data, F, max_bytes=len(data)).size == (64, 64)
    # A data URL is measured before its base64 is decoded.
    with pytest.raises(ImageError, match=r"bytes is past this server's cap of 1,000 bytes"):
        decode_data_url(data_url(data), F, max_bytes=1000)


def test_a_file_over_the_byte_cap_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big.png"
    path.write_bytes(encoded(noise(64, 64)))
    with pytest.raises(ImageError, match=r"^image: [\d,]+ bytes is past this server's cap of 100"):
        read_image_file(path, max_bytes=100)


def test_a_path_and_a_pil_image_through_the_python_entry_point(tmp_path):
    path = tmp_path / "photo.jpg"  # the extension is not what decides
    path.write_bytes(encoded(noise(16, 8)))
    for given in (path, str(path)):
        d = load_image(given)
        assert (d.type, d.size) == ("png", (16, 8))
    pil = load_image(noise(16, 8).convert("RGBA"))
    assert (pil.type, pil.size, pil.image.mode, pil.nbytes) == ("pil", (16, 8), "RGB", 0)
    assert load_image(data_url(encoded(noise(16, 8)))).type == "png"
    assert load_image(encoded(noise(16, 8), "WEBP")).type == "webp"
    with pytest.raises(ImageError, match=r"^image: cannot read .*missing\.png"):
        load_image(tmp_path / "missing.png")


def test_a_pil_image_past_the_pixel_cap_is_refused():
    side = int(LIMITS.max_image_pixels**0.5) + 1
    big = Image.new("1", (side, side))  # one bit a pixel: small to make
    with pytest.raises(ImageError, match=r"is past this server's cap"):
        decode_image(big, F)


def test_decode_image_never_reads_a_path(tmp_path):
    path = tmp_path / "photo.png"
    path.write_bytes(encoded(noise(8, 8)))
    with pytest.raises(ImageError, match=r"^images\[0\]: not a data URL"):
        decode_image(str(path), F)
    with pytest.raises(ImageError, match=r"not PosixPath"):
        decode_image(path, F)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("hello", "not a data URL (data:image/png;base64,...); it starts 'hello'"),
        ("data:text/html;base64,PGI+", "a data URL of text/html, not of an image"),
        ("data:image/png,abc", "the data URL must be base64 (data:image/png;base64,...)"),
        ("data:image/png;charset=x;base64,QUJD", "the data URL must be base64 (data:image/png;"),
        ("data:image/;base64,QUJD", "a data URL of image/, not of an image"),
        ("data:image/png;base64,@@@@", "the data URL's data is not valid base64"),
    ],
)
def test_a_data_url_of_the_wrong_shape(url, says):
    with pytest.raises(ImageError) as info:
        decode_data_url(url, F)
    assert str(info.value).startswith(f"{F}: {says}"), str(info.value)


def test_the_declared_type_does_not_decide():
    d = decode_data_url(data_url(encoded(noise(8, 8), "JPEG"), "image/png"), F)
    assert d.type == "jpeg"
    assert data_url_payload("data:image/webp;base64,QUJD") == "QUJD"
    assert sniff(base64.b64decode(data_url_payload(data_url(encoded(noise(4, 4)))))) == "png"


def test_a_decoded_image_as_a_data_url_decodes_to_the_same_pixels():
    exif = Image.Exif()
    exif[0x0112] = 6
    d = decode_bytes(encoded(noise(12, 6), "JPEG", exif=exif), F)
    again = decode_data_url(d.to_data_url(), F)
    assert (again.type, again.size, again.rotated) == ("png", (6, 12), False)
    assert again.image.tobytes() == d.image.tobytes()
