from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from attnviz.presets import APPLE_AXES, APPLE_TOKENS, APPLE_X
from attnviz.settings import Settings


@pytest.fixture(scope="session")
def app():
    from attnviz.app import create_app

    return create_app(Settings(device="cpu"))


@pytest.fixture(scope="session")
def client(app):
    with TestClient(app) as c:
        yield c


@pytest.fixture
def apple_request() -> dict:
    return {"tokens": list(APPLE_TOKENS), "axes": list(APPLE_AXES), "embeddings": APPLE_X}
