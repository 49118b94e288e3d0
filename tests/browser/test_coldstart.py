"""The page's cold start (issue 28): a first visit gets plotly.js's cartesian bundle, never a full
Plotly bundle, and the page's modules as one file, in few requests; the 3-D views load the gl3d
bundle the first time one is drawn, and draw with it, while every 2-D plot keeps the cartesian
one (core/plotly.js)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from tests.browser.helpers import (
    MODEL,
    open_app,
    share_hash,
    views_drawn,
    wait_for_trace,
    wait_for_views,
)

FULL_PLOTLY = re.compile(r"/plotly(-\d[^/]*)?\.min\.js$")  # the wheel's /vendor/plotly-7.1.0.min.js
CARTESIAN = "/static/vendor/plotly-cartesian.min.js"
GL3D = "/static/vendor/plotly-gl3d.min.js"
TRAJ = "#traj-view .js-plotly-plot"
TEXT = "I sat on the river bank"


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
    page's bundle, the favicon, the presets and the trace; its first preset has 3 dimensions,
    so the token vectors' 3-D plot adds the gl3d bundle. No module comes on its own."""
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    open_app(page, live_server)
    paths = paths_of(requests)
    assert not [p for p in paths if FULL_PLOTLY.search(p)], paths
    assert paths.count(CARTESIAN) == 1 and paths.count(GL3D) == 1
    scripts = sorted(p for p in paths if p.endswith(".js"))
    assert scripts == ["/static/bundle/main.js", CARTESIAN, GL3D], scripts
    assert len(requests) <= 12, paths  # 66 before (76 modules since)
    vectors = page.evaluate("() => document.getElementById('vectors-plot').data.map((t) => t.type)")
    assert "scatter3d" in vectors and "cone" in vectors
    # The page's Plotly is still the cartesian bundle (the heatmaps' library), not the gl3d one.
    assert page.evaluate("() => 'heatmap' in window.Plotly.PlotSchema.get().traces")


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
    """At 480 px the toy lab's token vectors lie screens below the first one: their 3-D scene
    (a second or more in software WebGL, blocking the page) waits until it comes near the view,
    so the first trace is drawn without it and the gl3d bundle is not asked; scrolled to, it
    loads and draws. Sentence mode's trajectories, linked in 3-D and out of view, draw the
    same way and take the click listener their view set before they were drawn."""
    page.set_viewport_size({"width": 480, "height": 800})
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    open_app(page, live_server)
    vectors = "#vectors-plot"
    assert page.get_attribute(vectors, "data-deferred") == "3d"
    assert page.evaluate(f"() => document.querySelector({vectors!r}).data") is None
    assert GL3D not in paths_of(requests)
    # Its caption (what the scene shows, in words) is there before the scene.
    caption = page.locator("#vectors-plot").locator("xpath=..").locator("[data-role=caption]")
    assert "token" in (caption.first.text_content() or "")
    page.locator(vectors).scroll_into_view_if_needed()
    page.wait_for_function(f"() => !document.querySelector({vectors!r}).dataset.deferred")
    page.wait_for_selector(f"{vectors} .gl-container canvas")
    types = page.evaluate(f"() => document.querySelector({vectors!r}).data.map((t) => t.type)")
    assert "scatter3d" in types and paths_of(requests).count(GL3D) == 1

    page.goto(
        live_server
        + "/"
        + share_hash({"mode": "sentence", "sentence": {"model": MODEL, "text": TEXT, "dims": 3}})
    )
    wait_for_trace(page, 0)
    plot = page.locator("#traj-view .traj-plot")
    assert plot.get_attribute("data-deferred") == "3d"
    assert page.locator(TRAJ).count() == 0  # no Plotly plot made yet
    plot.scroll_into_view_if_needed()
    page.wait_for_selector(f"{TRAJ} .gl-container canvas")
    types = page.evaluate(f"() => document.querySelector({TRAJ!r}).data.map((t) => t.type)")
    assert set(types) == {"scatter3d"}
    assert click_path(page, 2) == 2
