"""One image for a model, decoded with Pillow: a data URL (what the HTTP API carries), raw
bytes or a PIL image; a file only through ``read_image_file`` (the Python API's), so that a
request can never make the server read one of its own files.

The type is sniffed from the bytes (PNG, JPEG, WebP; the data URL's media type and a file's
extension decide nothing), the size read from the header and checked against the pixel cap
before any pixel is decoded, EXIF orientation applied, and the result converted to RGB
(transparent pixels on white). Every refusal is an ``ImageError`` whose message names the field
(``images[0]: empty``); Pillow's own messages never reach the client.
"""

from __future__ import annotations

import base64
import binascii
import io
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from PIL import Image, ImageFile, ImageOps, JpegImagePlugin, PngImagePlugin, WebPImagePlugin

from attnviz.errors import TraceError
from attnviz.limits import LIMITS

ImageType = Literal["png", "jpeg", "webp"]
NAMES: dict[str, str] = {"png": "PNG", "jpeg": "JPEG", "webp": "WebP", "pil": "PIL image"}
# The header readers of each type, called directly rather than through Image.open: the type is
# already known, and the pixel cap is this module's (checked below), not Pillow's global one.
OPENERS: dict[ImageType, type[ImageFile.ImageFile]] = {
    "png": PngImagePlugin.PngImageFile,
    "jpeg": JpegImagePlugin.JpegImageFile,
    "webp": WebPImagePlugin.WebPImageFile,
}
DEFAULT_MAX_BYTES = 10 * 2**20  # Settings.max_image_bytes' default

# What a refused file looks like, for the message: (magic at offset 0, name).
_OTHERS: tuple[tuple[bytes, str], ...] = (
    (b"GIF8", "GIF"),
    (b"BM", "BMP"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
    (b"%PDF", "PDF"),
    (b"\x00\x00\x01\x00", "ICO"),
    (b"8BPS", "Photoshop"),
    (b"PK\x03\x04", "ZIP"),
    (b"\x1f\x8b", "gzip"),
)
# An image's data URL, up to its data: the schema's pattern (schemas/trace.py) too.
DATA_URL_RULE = r"^data:image/[^;,]+;base64,"
_DATA_URL_RULE = re.compile(DATA_URL_RULE)


class ImageError(TraceError):
    """An image that cannot be read; the message names its field (a 422 over HTTP)."""


@dataclass(frozen=True)
class DecodedImage:
    """An image ready for a processor, with what later code may tell about it."""

    image: Image.Image  # RGB, EXIF orientation applied
    type: str  # "png", "jpeg", "webp", or "pil" (given as a PIL image)
    original_size: tuple[int, int]  # (width, height) as stored, before orientation
    nbytes: int  # the encoded file's bytes (0 for a PIL image)
    orientation: int = 1  # its EXIF orientation (1: as stored; 2 to 8 turned or flipped)

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) after EXIF orientation: what the processor receives."""
        return self.image.size

    @property
    def rotated(self) -> bool:
        """Its EXIF orientation turned or flipped it (a quarter turn swaps width and height)."""
        return self.orientation in range(2, 9)

    def describe(self) -> str:
        """A few words for the page: ``JPEG, 4,032 × 3,024 pixels (turned upright: 3,024 ×
        4,032)``."""
        text = f"{NAMES[self.type]}, {_dims(self.original_size)} pixels"
        if self.rotated:
            text += f" (turned upright by its EXIF orientation: {_dims(self.size)})"
        return text

    def to_data_url(self) -> str:
        """The decoded image as a PNG data URL (lossless, upright, RGB): what a trace's request
        carries, and what a one-file export embeds so that it still draws offline."""
        buf = io.BytesIO()
        self.image.save(buf, "PNG")
        return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()

    def as_json(self) -> dict[str, object]:
        """The same as JSON: type, width, height (as decoded), stored size, description."""
        return {
            "type": self.type,
            "width": self.size[0],
            "height": self.size[1],
            "original_width": self.original_size[0],
            "original_height": self.original_size[1],
            "description": self.describe(),
        }


# -- entry points ------------------------------------------------------------------------------


def decode_image(
    value: str | bytes | Image.Image, field: str = "image", max_bytes: int = DEFAULT_MAX_BYTES
) -> DecodedImage:
    """A data URL string, raw bytes or a PIL image, decoded; never a path (``read_image_file``
    reads files), so that what a client sends can never name a file of the server's."""
    if isinstance(value, Image.Image):
        return decode_pil(value, field)
    if isinstance(value, str):
        return decode_data_url(value, field, max_bytes)
    if isinstance(value, bytes | bytearray | memoryview):
        return decode_bytes(bytes(value), field, max_bytes)
    raise ImageError(
        f"{field}: a data URL, bytes or a PIL image, not {type(value).__name__} "
        "(a file: read_image_file or load_image)"
    )


def load_image(
    value: str | Path | bytes | Image.Image,
    field: str = "image",
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> DecodedImage:
    """The Python API's: ``decode_image``'s inputs, or a path (a ``Path``, or a string that is
    not a data URL). Never for what a client sent over HTTP."""
    if isinstance(value, Path) or (isinstance(value, str) and not value.startswith("data:")):
        return read_image_file(value, field, max_bytes)
    return decode_image(value, field, max_bytes)


def read_image_file(
    path: str | Path, field: str = "image", max_bytes: int = DEFAULT_MAX_BYTES
) -> DecodedImage:
    """An image file, its size checked before it is read."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if not p.is_file():
            raise ImageError(f"{field}: {p} is not a file")
        if size > max_bytes:
            raise ImageError(_too_many_bytes(field, size, max_bytes))
        data = p.read_bytes()
    except OSError as exc:
        raise ImageError(
            f"{field}: cannot read {p} ({exc.strerror or type(exc).__name__})"
        ) from exc
    return decode_bytes(data, field, max_bytes)


def decode_data_url(
    url: str, field: str = "image", max_bytes: int = DEFAULT_MAX_BYTES
) -> DecodedImage:
    """``data:image/<type>;base64,<data>``: its bytes decoded (the declared type is not
    trusted: ``decode_bytes`` sniffs it)."""
    payload = data_url_payload(url, field)
    size = len(payload) * 3 // 4 - payload[-2:].count("=")  # the bytes, before decoding them
    if size > max_bytes:
        raise ImageError(_too_many_bytes(field, size, max_bytes))
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ImageError(
            f"{field}: the data URL's data is not valid base64 (A-Z, a-z, 0-9, + and /, "
            "= padding, no spaces)"
        ) from exc
    return decode_bytes(data, field, max_bytes)


def data_url_payload(url: str, field: str = "image") -> str:
    """The base64 data of ``data:image/<type>;base64,<data>``, or an ``ImageError`` saying what
    is wrong with its shape."""
    return url[data_url_start(url, field) :]


def data_url_start(url: str, field: str = "image") -> int:
    """Where the base64 data of ``data:image/<type>;base64,<data>`` starts (the schema's check
    of each of a request's images: its rule, ``DATA_URL_RULE``, exactly), or an ``ImageError``
    saying what is wrong with its shape."""
    match = _DATA_URL_RULE.match(url)
    if match is not None:
        return match.end()
    if not url.startswith("data:"):
        start = url[:20] + ("..." if len(url) > 20 else "")
        raise ImageError(
            f"{field}: not a data URL (data:image/png;base64,...); it starts {start!r}"
        )
    media = re.split(r"[;,]", url[5:60], maxsplit=1)[0]
    if not media.startswith("image/") or len(media) == len("image/"):
        raise ImageError(f"{field}: a data URL of {media or 'text/plain'}, not of an image")
    raise ImageError(f"{field}: the data URL must be base64 (data:{media};base64,...)")


def decode_bytes(
    data: bytes, field: str = "image", max_bytes: int = DEFAULT_MAX_BYTES
) -> DecodedImage:
    """An encoded PNG, JPEG or WebP: sniffed, its size checked from the header, decoded."""
    if not data:
        raise ImageError(f"{field}: empty")
    if len(data) > max_bytes:
        raise ImageError(_too_many_bytes(field, len(data), max_bytes))
    kind = sniff(data)
    if kind is None:
        raise ImageError(f"{field}: not a PNG, JPEG or WebP image ({looks_like(data)})")
    name = NAMES[kind]
    if kind == "webp" and (size := webp_size(data)) is not None:
        check_pixels(size, field)  # Pillow's WebP reader checks its own cap as it opens
    try:
        im = OPENERS[kind](io.BytesIO(data))  # the header only: no pixel decoded yet
    except Exception as exc:  # Pillow raises SyntaxError, OSError, struct.error, ...
        raise ImageError(
            f"{field}: the {name} is truncated or damaged (its header could not be read)"
        ) from exc
    check_pixels(im.size, field)
    try:
        im.load()
        return DecodedImage(upright_rgb(im), kind, im.size, len(data), orientation(im))
    except ImageError:
        raise
    except Image.DecompressionBombError as exc:  # a frame past Pillow's own cap
        raise ImageError(_too_many_pixels(field, im.size)) from exc
    except Exception as exc:  # the pixels: OSError "truncated", SyntaxError, zlib.error, ...
        raise ImageError(
            f"{field}: the {name} is truncated or damaged (its {len(data):,} bytes do not "
            f"decode to the {_dims(im.size)} pixels its header says)"
        ) from exc


def decode_pil(im: Image.Image, field: str = "image") -> DecodedImage:
    """A PIL image as given: the same cap, orientation and conversion as a file's."""
    check_pixels(im.size, field)
    try:
        return DecodedImage(upright_rgb(im), "pil", im.size, 0, orientation(im))
    except ImageError:
        raise
    except Exception as exc:
        raise ImageError(f"{field}: the PIL image could not be read (mode {im.mode})") from exc


# -- the steps ---------------------------------------------------------------------------------


def sniff(data: bytes) -> ImageType | None:
    """The type the bytes' magic says, of the three this server reads; else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


def webp_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a WebP's first chunk (VP8X, VP8 or VP8L), or None if cut short."""
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:  # the canvas: 24-bit width - 1, height - 1
        return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
    if chunk == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":  # a key frame
        w, h = struct.unpack("<HH", data[26:30])
        return w & 0x3FFF, h & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:  # 14-bit width - 1, height - 1
        bits = int.from_bytes(data[21:25], "little")
        return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    return None


def looks_like(data: bytes) -> str:
    """What the start of a refused file resembles, for its message: ``it starts like GIF``."""
    for magic, name in _OTHERS:
        if data.startswith(magic):
            return f"it starts like {name}"
    if data[4:8] == b"ftyp":
        return "it starts like HEIC/AVIF (an ISO media file)"
    head = data[:256].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith(b"<svg") or (head.startswith(b"<?xml") and b"<svg" in data[:4096].lower()):
        return "it starts like SVG/XML"
    if head.startswith((b"<!doctype html", b"<html")):
        return "it starts like HTML"
    if head.startswith(b"<"):
        return "it starts like XML"
    if data.startswith((b"\x89PNG", b"\xff\xd8")) or data.startswith(b"RIFF"):
        return "it starts like one but is cut short"
    return "it starts with bytes " + " ".join(f"{b:02x}" for b in data[:8])


def check_pixels(size: tuple[int, int], field: str) -> None:
    """Refuse an image past the pixel cap (or with no pixels), from its header's size."""
    w, h = size
    if w < 1 or h < 1:
        raise ImageError(f"{field}: {_dims(size)} pixels: the image has no pixels")
    if w * h > LIMITS.max_image_pixels:
        raise ImageError(_too_many_pixels(field, size))


def orientation(im: Image.Image) -> int:
    """The image's EXIF orientation tag (1 when it has none)."""
    value = im.getexif().get(0x0112, 1)
    return value if isinstance(value, int) else 1


def upright_rgb(im: Image.Image) -> Image.Image:
    """EXIF orientation applied, then RGB, transparent pixels laid on white."""
    im = ImageOps.exif_transpose(im)  # a copy, turned when its EXIF says so
    if im.mode == "RGB":
        return im
    if im.mode == "P":
        im = im.convert("RGBA")
    if im.mode in ("I;16", "I;16B", "I;16L", "I"):  # 16-bit grey: scaled to 8 bits
        im = im.point(lambda v: v / 256).convert("L")
    if im.mode in ("RGBA", "LA", "La", "RGBa", "PA") or "transparency" in im.info:
        rgba = im.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return im.convert("RGB")


def _dims(size: tuple[int, int]) -> str:
    return f"{size[0]:,} × {size[1]:,}"


def _too_many_pixels(field: str, size: tuple[int, int]) -> str:
    return (
        f"{field}: {_dims(size)} pixels is past this server's cap of "
        f"{LIMITS.max_image_pixels:,} pixels"
    )


def _too_many_bytes(field: str, n: int, cap: int) -> str:
    return f"{field}: {n:,} bytes is past this server's cap of {cap:,} bytes"
