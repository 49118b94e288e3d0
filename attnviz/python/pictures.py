"""A trace's pictures in Python: what ``attnviz.trace(image=...)`` and ``Client.trace`` send
(each image a data URL, as ``POST /api/trace`` takes it), and the small copy a one-file export
embeds so that it still draws the picture offline (``meta.images[i]["data_url"]`` of the
file's first part: a PNG of at most ``PREVIEW_PX`` on its long side).
"""

from __future__ import annotations

import base64
import io
import json
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attnviz.pretrained.images import DecodedImage, decode_data_url, load_image
from attnviz.wire.compact import layout

PREVIEW_PX = 512  # the long side of a picture embedded in a file


def _each(image: Any) -> list[Any]:
    """One image (a path, a PIL image, bytes, a data URL) or a list of them, as a list."""
    if image is None:
        return []
    if isinstance(image, list | tuple):
        return list(image)
    return [image]


def request_images(image: Any) -> tuple[list[str], list[str]]:
    """The data URLs a trace request carries for ``image`` (its bytes as given, or a PIL
    image's PNG), each checked here first (an ``ImageError`` naming ``image`` or ``image[i]``),
    and their previews (``preview``)."""
    given = _each(image)
    urls, previews = [], []
    for i, value in enumerate(given):
        field = "image" if not isinstance(image, list | tuple) else f"image[{i}]"
        decoded = load_image(value, field)
        urls.append(_as_sent(value, decoded))
        previews.append(preview(decoded))
    return urls, previews


def _as_sent(value: Any, decoded: DecodedImage) -> str:
    """The file's own bytes (the server sniffs and checks them again), or a PIL image's PNG."""
    if isinstance(value, str) and value.startswith("data:"):
        return value
    if isinstance(value, str | Path):
        data = Path(value).expanduser().read_bytes()
    elif isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
    else:
        return decoded.to_data_url()
    return f"data:image/{decoded.type};base64,{base64.b64encode(data).decode()}"


def preview(decoded: DecodedImage, side: int = PREVIEW_PX) -> str:
    """The decoded picture (upright, RGB) as a PNG data URL, shrunk to at most ``side`` pixels
    on its long side (never enlarged)."""
    im = decoded.image.copy()
    im.thumbnail((side, side))
    buf = io.BytesIO()
    im.save(buf, "PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def previews_of(urls: Sequence[str]) -> list[str]:
    """The previews of a request's images (data URLs), as ``preview`` makes them."""
    return [preview(decode_data_url(u, f"images[{i}]")) for i, u in enumerate(urls)]


def with_pictures(body: bytes, previews: Sequence[str]) -> bytes:
    """A compact part whose meta's ``images[i]`` carry ``data_url``: preview i (its header
    rewritten, its arrays' bytes as they were)."""
    if not previews:
        return body
    head, base = layout(body)
    meta = json.loads(head.get("__metadata__", {}).get("attnviz", "{}"))
    images = meta.get("images") or []
    meta["images"] = [
        {**im, "data_url": previews[i]} if i < len(previews) else im for i, im in enumerate(images)
    ]
    head["__metadata__"] = {**head.get("__metadata__", {}),
                            "attnviz": json.dumps(meta, separators=(",", ":"))}  # fmt: skip
    raw = json.dumps(head, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # padded to 8 bytes, as safetensors writes it
    return struct.pack("<Q", len(raw)) + raw + body[base:]
