"""The page works with no internet: it asks nothing of another host, and the guard that
checks this in every browser test does catch such a request."""

from tests.browser.helpers import open_app


def test_the_page_needs_no_other_host(page, live_server, console):
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    open_app(page, live_server)
    assert requests and all(u.startswith(live_server) or u.startswith("data:") for u in requests)
    assert any("/vendor/plotly-" in u for u in requests)


def test_a_request_to_another_host_is_caught(page, live_server, console):
    open_app(page, live_server)
    page.evaluate("fetch('https://cdn.example.invalid/lib.js').catch(() => null)")
    page.wait_for_function("true")  # let the route handler run
    page.wait_for_timeout(300)
    assert "request to another host: https://cdn.example.invalid/lib.js" in console.errors
    console.allow(r"cdn\.example\.invalid")  # this test made it on purpose
    console.allow(r"net::ERR_FAILED")
