"""The trajectories view (static/js/trajectories.js): one path per picked token through the
trace's single PCA, from layer 0 to the last layer, in 2-D or 3-D."""

from __future__ import annotations

from tests.browser.helpers import ARTIFACTS, MOUNT_VIEW, assert_close

MODEL = "all-MiniLM-L6-v2"
TEXT = "The animal didn't cross the street because it was too tired"

RENDER = """async (sel) => {
  const host = document.getElementById('traj-host');
  window.__picked = [];
  await window.__module.renderTrajectories(host, window.__trace, {...sel,
    onPick: (i) => window.__picked.push(i)});
  const plot = host.querySelector('.traj-plot');
  return {data: JSON.parse(JSON.stringify(plot.data)),
          layout: JSON.parse(JSON.stringify(plot.layout)), text: host.innerText};
}"""


def mount(page, live_server, width=840) -> dict:
    page.goto(live_server + "/")
    page.wait_for_function("() => window.Plotly")
    request = {"model": MODEL, "text": TEXT}
    assert (
        page.evaluate(
            MOUNT_VIEW,
            {
                "request": request,
                "width": width,
                "hostId": "traj-host",
                "module": "/static/js/trajectories.js",
            },
        )
        == 200
    )
    return page.evaluate("() => window.__trace")


def check_paths(trace: dict, data: list[dict], picked: list[int], dims: int) -> None:
    """One path per picked token (and no other), through projection.coords at every layer."""
    coords = trace["projection"]["coords"]
    assert len(coords) == trace["layers"] + 1
    paths = [t for t in data if str(t.get("uid", "")).startswith("traj-")]
    assert [t["uid"] for t in paths] == [f"traj-{i}" for i in picked]
    for t, i in zip(paths, picked, strict=True):
        assert t["type"] == ("scatter3d" if dims == 3 else "scatter")
        for c, axis in enumerate("xyz"[:dims]):
            assert_close(t[axis], [layer[i][c] for layer in coords], 0)
        if dims == 2:
            assert "z" not in t
        # The token's label at the end of its path, nowhere else.
        if dims == 2:
            assert t["text"][-1] == trace["tokens"][i] and not any(t["text"][:-1])


def axis_titles(trace: dict, dims: int) -> list[str]:
    ratios = trace["projection"]["explained_variance_ratio"][:dims]
    return [f"PC{c + 1} ({100 * r:.1f}%)" for c, r in enumerate(ratios)]


def test_2d_paths_of_the_picked_tokens(page, live_server):
    trace = mount(page, live_server)
    toks = trace["tokens"]
    picked = [toks.index("animal"), toks.index("street"), toks.index("it")]
    drawn = page.evaluate(RENDER, {"tokens": [picked[2], picked[0], picked[1]], "dims": 2})
    check_paths(trace, drawn["data"], picked, 2)
    assert [t["name"] for t in drawn["data"]] == ["animal", "street", "it"]
    layout = drawn["layout"]
    titles = axis_titles(trace, 2)
    assert [layout["xaxis"]["title"]["text"], layout["yaxis"]["title"]["text"]] == titles
    assert titles[0] in drawn["text"] and "3 of 15 tokens" in drawn["text"]
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#traj-host").screenshot(path=str(ARTIFACTS / "trajectories-2d.png"))
    # Hover names the layer and the token.
    box = page.evaluate(
        """(i) => { const p = document.querySelector('#traj-host .traj-plot');
          const c = window.__trace.projection.coords[3][i];
          const xa = p._fullLayout.xaxis, ya = p._fullLayout.yaxis, r = p.getBoundingClientRect();
          return {x: r.left + xa._offset + xa.l2p(c[0]), y: r.top + ya._offset + ya.l2p(c[1])}; }""",
        picked[0],
    )
    page.mouse.move(box["x"], box["y"])
    hover = page.locator("#traj-host .hoverlayer").text_content()
    assert "animal" in hover and "layer 3" in hover
    # Clicking a path picks its token (the page makes it the query of the other views).
    page.mouse.click(box["x"], box["y"])
    page.wait_for_function("() => window.__picked.length > 0")
    assert page.evaluate("() => window.__picked") == [picked[0]]


def test_3d_paths_of_every_token(page, live_server):
    trace = mount(page, live_server)
    drawn = page.evaluate(RENDER, {"tokens": None, "dims": 3})
    n = len(trace["tokens"])
    check_paths(trace, drawn["data"], list(range(n)), 3)
    scene = drawn["layout"]["scene"]
    titles = [scene[f"{a}axis"]["title"]["text"] for a in "xyz"]
    assert titles == axis_titles(trace, 3)
    # "the" occurs twice: the legend tells them apart by position.
    names = [t["name"] for t in drawn["data"]]
    assert names[1] == "the (1)" and names[7] == "the (7)" and names[2] == "animal"
    labels = [a["text"] for a in scene["annotations"]]
    assert labels == trace["tokens"]
    page.locator("#traj-host").screenshot(path=str(ARTIFACTS / "trajectories-3d.png"))


def test_switching_dims_and_picking_none(page, live_server):
    trace = mount(page, live_server)
    page.evaluate(RENDER, {"tokens": [1, 2], "dims": 3})
    plot = page.evaluate_handle("() => document.querySelector('#traj-host .traj-plot')")
    drawn = page.evaluate(RENDER, {"tokens": [2, 99, 2, -1], "dims": 2})
    check_paths(trace, drawn["data"], [2], 2)
    assert page.evaluate("p => p === document.querySelector('#traj-host .traj-plot')", plot)
    drawn = page.evaluate(RENDER, {"tokens": [], "dims": 2})
    check_paths(trace, drawn["data"], [], 2)
    assert [a["text"] for a in drawn["layout"]["annotations"]] == ["No tokens picked"]
    drawn = page.evaluate(RENDER, {"tokens": [], "dims": 3})
    check_paths(trace, drawn["data"], [], 3)


def test_token_text_is_never_html(page, live_server):
    mount(page, live_server)
    evil = '<img src=x onerror="window.__xss=1">'
    page.evaluate("t => { window.__trace.tokens[3] = t; }", evil)
    for dims in (2, 3):
        drawn = page.evaluate(RENDER, {"tokens": [3], "dims": dims})
        assert drawn["data"][0]["name"].startswith("&lt;img")
        assert page.locator("#traj-host img").count() == 0
        assert page.locator("#traj-host .legendtext").first.text_content() == evil
    assert page.evaluate("() => window.__xss") is None
