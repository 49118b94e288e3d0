"""The page's cold start (issue 28): a first visit gets plotly.js's cartesian bundle, never a full
Plotly bundle, and the page's modules as one file, in few requests; the toy lab's token vectors
open as a still picture; the 3-D views load the gl3d bundle the first time one is drawn, and
draw with it, while every 2-D plot keeps the cartesian one (core/plotly.js). Each test's page
is a first visit's: a context of its own, which has cached nothing (``cold_page``)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

from tests.browser.helpers import (
    MODEL,
    fresh_page,
    open_app,
    share_hash,
    traces_drawn,
    view_change,
    views_drawn,
    wait_for_trace,
    wait_for_views,
)

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

FULL_PLOTLY = re.compile(r"/plotly(-\d[^/]*)?\.min\.js$")  # the wheel's /vendor/plotly-7.1.0.min.js
CARTESIAN = "/static/vendor/plotly-cartesian.min.js"
GL3D = "/static/vendor/plotly-gl3d.min.js"
TRAJ = "#traj-view .js-plotly-plot"
VECTORS = "#vectors-plot"
TEXT = "I sat on the river bank"


@pytest.fixture
def page(cold_page):
    return cold_page


def linked_query(page) -> int | None:
    """The sentence's query token in the page's share link."""
    return page.evaluate(
        """() => {
          const b = /#s=([\\w-]+)/.exec(location.hash)[1].replace(/-/g, "+").replace(/_/g, "/");
          const raw = JSON.parse(atob(b + "=".repeat((4 - (b.length % 4)) % 4)));
          return (raw.sentence ?? raw).query ?? null;
        }"""
    )


def click_path(page, i: int) -> int | None:
    """Click the trajectories' path of token ``i`` (as Plotly tells a click) and wait for the
    views it redraws: the query the share link then holds."""
    before = views_drawn(page)
    page.evaluate(
        f"""() => document.querySelector({TRAJ!r}).emit("plotly_click",
            {{ points: [{{ data: {{ uid: "traj-{i}" }} }}] }})"""
    )
    wait_for_views(page, before)
    return linked_query(page)


def paths_of(requests: list[str]) -> list[str]:
    return [urlsplit(u).path for u in requests]


def test_a_first_visit_asks_few_requests_and_no_full_plotly(page, live_server):
    """The toy lab's first screen, cold: the page, two style sheets, the cartesian bundle, the
    page's bundle, the favicon, the presets and the trace. Its first preset has 3 dimensions:
    the token vectors open as their still picture (2-D Plotly), so no gl3d bundle and no WebGL
    until Rotate in 3-D, which loads it once and draws the scene with cones; pressed again, the
    still picture is back. No module comes on its own."""
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    open_app(page, live_server)
    paths = paths_of(requests)
    assert not [p for p in paths if FULL_PLOTLY.search(p)], paths
    scripts = sorted(p for p in paths if p.endswith(".js"))
    assert scripts == ["/static/bundle/main.js", CARTESIAN], scripts
    assert len(requests) <= 12, paths  # 66 before (76 modules since)
    kinds = f"() => document.querySelector({VECTORS!r}).data.map((t) => t.type)"
    assert set(page.evaluate(kinds)) == {"scatter"}
    assert page.locator(f"{VECTORS} canvas").count() == 0  # (Plotly's 2-D is SVG)
    rotate = page.locator("#vec-rotate")
    assert rotate.is_visible() and rotate.get_attribute("aria-pressed") == "false"

    rotate.click()  # (the view alone draws again)
    page.wait_for_selector(f"{VECTORS} .gl-container canvas")
    assert "scatter3d" in page.evaluate(kinds) and "cone" in page.evaluate(kinds)
    assert paths_of(requests).count(GL3D) == 1 and rotate.get_attribute("aria-pressed") == "true"
    # The page's Plotly is still the cartesian bundle (the heatmaps' library), not the gl3d one.
    assert page.evaluate("() => 'heatmap' in window.Plotly.PlotSchema.get().traces")
    # An edit redraws the live scene; pressed again, the still picture.
    view_change(page, lambda: page.locator("#vec-layer").fill("0"))
    assert "scatter3d" in page.evaluate(kinds)
    rotate.click()
    page.wait_for_selector(f"{VECTORS} .main-svg .scatterlayer")
    assert set(page.evaluate(kinds)) == {"scatter"} and paths_of(requests).count(GL3D) == 1


def test_a_press_on_the_still_picture_makes_it_the_live_scene(page, live_server):
    """Turning the picture by hand starts with a press on it: the live scene comes."""
    open_app(page, live_server)
    page.locator(VECTORS).click(position={"x": 200, "y": 200})
    page.wait_for_selector(f"{VECTORS} .gl-container canvas")
    assert page.get_attribute("#vec-rotate", "aria-pressed") == "true"


def test_the_3d_view_loads_its_bundle_when_first_opened_and_still_draws(page, live_server):
    """Sentence mode's first screen (a link that opens it) is 2-D: no gl3d bundle. The trajectories in 3-D load it
    once, draw a scatter3d scene, keep their click (the plot changed library) and go back to
    2-D; the other views keep drawing with the cartesian bundle meanwhile."""
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(
        live_server
        + "/"
        + share_hash({"mode": "sentence", "sentence": {"model": MODEL, "text": TEXT}})
    )
    wait_for_trace(page, 0)
    assert GL3D not in paths_of(requests)
    assert page.evaluate(f"() => document.querySelector({TRAJ!r}).data[0].type") == "scatter"

    before = views_drawn(page)
    page.check("#traj-3d")
    wait_for_views(page, before)
    page.wait_for_selector(f"{TRAJ} .gl-container canvas")
    assert paths_of(requests).count(GL3D) == 1
    types = page.evaluate(f"() => document.querySelector({TRAJ!r}).data.map((t) => t.type)")
    assert types and set(types) == {"scatter3d"}
    assert page.evaluate("() => 'heatmap' in window.Plotly.PlotSchema.get().traces")
    # A click on a path picks its token as the query of the other views: the listener the view
    # set on the 2-D plot survives the change of library.
    assert click_path(page, 2) == 2

    before = views_drawn(page)
    page.check("#traj-2d")
    wait_for_views(page, before)
    page.wait_for_selector(f"{TRAJ} .main-svg")
    types = page.evaluate(f"() => document.querySelector({TRAJ!r}).data.map((t) => t.type)")
    assert set(types) == {"scatter"}
    assert paths_of(requests).count(GL3D) == 1  # loaded once


def test_a_3d_plot_out_of_view_is_drawn_when_it_comes_near(page, live_server):
    """At 480 px sentence mode's trajectories, linked in 3-D, lie screens below the first one:
    their scene (a second or more in software WebGL, blocking the page) waits until it comes
    near the view, so the first trace is drawn without it and the gl3d bundle is not asked;
    scrolled to, they load it, draw, and take the click listener their view set before they
    were drawn."""
    page.set_viewport_size({"width": 480, "height": 800})
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(
        live_server
        + "/"
        + share_hash({"mode": "sentence", "sentence": {"model": MODEL, "text": TEXT, "dims": 3}})
    )
    wait_for_trace(page, 0)
    plot = page.locator("#traj-view .traj-plot")
    assert plot.get_attribute("data-deferred") == "3d"
    assert page.locator(TRAJ).count() == 0  # no Plotly plot made yet
    assert GL3D not in paths_of(requests)
    plot.scroll_into_view_if_needed()
    page.wait_for_selector(f"{TRAJ} .gl-container canvas")
    types = page.evaluate(f"() => document.querySelector({TRAJ!r}).data.map((t) => t.type)")
    assert set(types) == {"scatter3d"} and paths_of(requests).count(GL3D) == 1
    assert click_path(page, 2) == 2


def test_sentence_modes_first_screen_runs_no_plotly_until_a_card_draws_a_plot(browser, live_server):
    """A newcomer's sentence mode (its cards as they first open) draws no Plotly plot: neither
    bundle is asked for and the page has no Plotly (running the cartesian bundle takes about
    0.1 s of a page's CPU). The trajectories' card, opened, loads the cartesian bundle once
    and draws with it; the toy lab then draws its heatmaps with the same library, asking for
    nothing again."""
    with fresh_page(browser) as (page, errors):
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(f"{live_server}/#sentence")
        wait_for_trace(page, 0)
        assert CARTESIAN not in paths_of(requests) and GL3D not in paths_of(requests)
        assert page.evaluate("() => typeof window.Plotly") == "undefined"
        view_change(page, lambda: page.click('#more-list button[data-view="traj"]'))
        page.wait_for_selector(f"{TRAJ} .main-svg")
        assert paths_of(requests).count(CARTESIAN) == 1 and GL3D not in paths_of(requests)
        types = page.evaluate(f"() => document.querySelector({TRAJ!r}).data.map((t) => t.type)")
        assert types and set(types) == {"scatter"}
        before = traces_drawn(page)
        page.click("#mode-toy")
        wait_for_trace(page, before)
        page.wait_for_selector("#scores-plot .main-svg")
        assert paths_of(requests).count(CARTESIAN) == 1
        assert page.evaluate("() => 'heatmap' in window.Plotly.PlotSchema.get().traces")
        assert errors == []
