"""Test images, made in memory: real PNG, JPEG and WebP files from Pillow, and a PNG whose
header claims 30,000 x 30,000 pixels, written by hand (no such buffer is ever allocated)."""

from __future__ import annotations

import base64
import io
import random
import struct
import zlib

from PIL import Image

SVG = b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"/>\n'


def encoded(im: Image.Image, kind: str = "PNG", **save) -> bytes:
    buf = io.BytesIO()
    im.save(buf, kind, **save)
    return buf.getvalue()


def noise(w: int = 64, h: int = 48, mode: str = "RGB") -> Image.Image:
    """An image of ``w`` x ``h`` pseudo-random pixels (they compress badly: a cut shows)."""
    raw = random.Random(w * 100_003 + h).randbytes(w * h * len(mode))
    return Image.frombytes(mode, (w, h), raw)


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header says ``width`` x ``height`` RGB pixels, with one row of data: a few
    dozen bytes that would decode into width x height x 3 bytes."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    row = zlib.compress(b"\x00" + b"\x00" * 3 * min(width, 16))
    return (
        b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", row) + _chunk(b"IEND", b"")
    )


def data_url(data: bytes, media: str = "image/png") -> str:
    return f"data:{media};base64,{base64.b64encode(data).decode()}"


def webp_claiming(width: int, height: int) -> bytes:
    """A WebP whose VP8X header says ``width`` x ``height`` (at most 16,384 each), no image."""
    vp8x = (
        b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    )
    body = b"WEBP" + b"VP8X" + struct.pack("<I", len(vp8x)) + vp8x
    return b"RIFF" + struct.pack("<I", len(body)) + body


def gradient(width: int = 40, height: int = 30) -> Image.Image:
    """A picture with something in it everywhere: three gradients, one a product of both axes."""
    img = Image.new("RGB", (width, height))
    img.putdata(
        [(x * 6 % 256, y * 8 % 256, (x * y) % 256) for y in range(height) for x in range(width)]
    )
    return img
