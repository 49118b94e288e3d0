"""A trace request's images, decoded for its model: each data URL through
``attnviz.pretrained.images`` (an error names ``images[i]``, a 422), then refused for a model
that reads text only."""

from __future__ import annotations

from attnviz.errors import TraceError
from attnviz.pretrained.images import DecodedImage, decode_data_url
from attnviz.pretrained.registry import ServedModel
from attnviz.schemas.trace import TextTraceRequest


def request_images(req: TextTraceRequest, m: ServedModel, max_bytes: int) -> list[DecodedImage]:
    """``req.images`` decoded in order, each at most ``max_bytes`` (the server's
    ATTNVIZ_MAX_IMAGE_BYTES); a ``TraceError`` naming the field for a bad one, or for any when
    the model reads text only. Empty without images."""
    decoded = [decode_data_url(url, f"images[{i}]", max_bytes) for i, url in enumerate(req.images)]
    if decoded and not m.reads_images:
        raise TraceError(f"images: model {m.name!r} reads text only")
    return decoded
