"""What the tests of the Python API's files share: one headless Chromium per test module (Debian's,
never downloaded), for opening the exported files from file://."""

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()
