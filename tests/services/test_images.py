"""A trace request's images decoded for its model (attnviz/services/images.py): in order, each
error naming its place, and any image refused for a model that reads text only."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from attnviz.errors import TraceError
from attnviz.schemas.trace import TextTraceRequest
from attnviz.services.images import request_images
from tests.support.images import data_url, encoded, noise

READER = SimpleNamespace(name="vlm", reads_images=True)
TEXT_ONLY = SimpleNamespace(name="gpt2", reads_images=False)


def request(*images: str) -> TextTraceRequest:
    return TextTraceRequest(model="vlm", text="a dog", images=list(images))


def test_a_model_that_reads_images_gets_them_decoded_in_order():
    png, jpeg = encoded(noise(16, 8)), encoded(noise(8, 4), "JPEG")
    got = request_images(request(data_url(png), data_url(jpeg, "image/jpeg")), READER, 2**20)
    assert [(d.type, d.size) for d in got] == [("png", (16, 8)), ("jpeg", (8, 4))]


def test_no_images_is_an_empty_list_for_any_model():
    assert request_images(request(), TEXT_ONLY, 2**20) == []


def test_a_text_only_model_refuses_any_image():
    with pytest.raises(TraceError) as info:
        request_images(request(data_url(encoded(noise(4, 4)))), TEXT_ONLY, 2**20)
    assert str(info.value) == "images: model 'gpt2' reads text only"


def test_the_servers_byte_cap_names_the_image():
    big = encoded(noise(32, 32))
    with pytest.raises(TraceError, match=r"^images\[1\]: [\d,]+ bytes is past this server's cap"):
        request_images(request(data_url(encoded(noise(2, 2))), data_url(big)), READER, 1024)
