"""The page works with no internet: it asks nothing of another host, and a request to one is
refused by the page's own Content-Security-Policy (connect-src 'self') before it leaves; the
route guard of every browser test is a second line behind it."""

import pytest

from tests.browser.helpers import open_app

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)


def test_the_page_needs_no_other_host(page, live_server, console):
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    open_app(page, live_server)
    assert requests and all(u.startswith(live_server) or u.startswith("data:") for u in requests)
    assert any("/vendor/plotly-" in u for u in requests)


def test_a_request_to_another_host_is_caught(page, live_server, console):
    open_app(page, live_server)
    page.evaluate("fetch('https://cdn.example.invalid/lib.js').catch(() => null)")
    page.wait_for_function("() => true")  # let the route handler run
    page.wait_for_timeout(300)
    refused = [e for e in console.errors if "cdn.example.invalid" in e]
    assert refused and "violates the following Content Security Policy directive" in refused[0]
    assert "connect-src 'self'" in refused[0]
    console.allow(r"cdn\.example\.invalid")  # this test made it on purpose
    console.allow(r"net::ERR_FAILED")
