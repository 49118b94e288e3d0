"""The trajectories view (static/js/views/trajectories.js): one path per picked token through the
trace's single PCA, from layer 0 to the last layer, in 2-D or 3-D."""

from __future__ import annotations

import re

import pytest

from attnviz.numbers import readable_percent
from tests.browser.helpers import ARTIFACTS, assert_close, f32, mount_view, shown_token, snap
from tests.support.oracles import scene_groups

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

MODEL = "all-MiniLM-L6-v2"
TEXT = "The animal didn't cross the street because it was too tired"
REQUEST = {"model": MODEL, "text": TEXT}

# Ask for the projection as the page does, and draw the paths.
RENDER = """async ({request, sel, tokens}) => {
  const host = document.getElementById('traj-host');
  window.__picked = [];
  const part = await window.__api.fetchTrace(request, {fields: 'projection'});
  const p = part.meta.projection;
  window.__coords = part.arrays['projection.coords'];
  const data = {tokens: tokens || part.meta.tokens, projection: {components: p.components,
    coords: window.__coords, ratio: Array.from(part.arrays['projection.explained_variance_ratio'].data)}};
  await window.__module.render(host, data, sel, {onPick: (i) => window.__picked.push(i)});
  const plot = host.querySelector('.traj-plot');
  return {data: JSON.parse(JSON.stringify(plot.data)),
          layout: JSON.parse(JSON.stringify(plot.layout)), text: host.innerText};
}"""


def mount(page, live_server, api, request=REQUEST, width=840) -> dict:
    mount_view(page, live_server + "/", "traj-host", "/static/js/views/trajectories.js", width)
    return api.post("/api/trace", json=request).json()


def draw(page, sel: dict, tokens=None, request=REQUEST) -> dict:
    return page.evaluate(RENDER, {"request": request, "sel": sel, "tokens": tokens})


def check_paths(trace: dict, drawn: dict, picked: list[int], dims: int) -> None:
    """One path per picked token (and no other), through projection.coords at every layer; in
    2-D its token's label at its end (core/labels.js keeps the labels apart)."""
    data = drawn["data"]
    coords = trace["projection"]["coords"]
    assert len(coords) == trace["layers"] + 1
    paths = [t for t in data if str(t.get("uid", "")).startswith("traj-")]
    assert [t["uid"] for t in paths] == [f"traj-{i}" for i in picked]
    for t, i in zip(paths, picked, strict=True):
        assert t["type"] == ("scatter3d" if dims == 3 else "scatter")
        for c, axis in enumerate("xyz"[:dims]):
            assert_close(t[axis], f32([layer[i][c] for layer in coords]), 0)
        if dims == 2:
            assert "z" not in t
    labels = [a for a in drawn["layout"]["annotations"] if a.get("name") == "token-label"]
    if dims == 2:
        # The token's label at the end of its path, nowhere else.
        ends = [
            (trace["tokens"][i], t["x"][-1], t["y"][-1]) for t, i in zip(paths, picked, strict=True)
        ]
        assert [(a["text"], a["x"], a["y"]) for a in labels] == ends
    else:
        assert labels == []


def axis_titles(trace: dict, dims: int) -> list[str]:
    ratios = trace["projection"]["explained_variance_ratio"][:dims]
    # each share a whole percentage, as numbers.js's readablePercent says it
    return [f"PC{c + 1} ({readable_percent(r)})" for c, r in enumerate(ratios)]


def test_2d_paths_of_the_picked_tokens(page, live_server, api):
    trace = mount(page, live_server, api)
    toks = trace["tokens"]
    picked = [toks.index("animal"), toks.index("street"), toks.index("it")]
    drawn = draw(page, {"tokens": [picked[2], picked[0], picked[1]], "dims": 2})
    check_paths(trace, drawn, picked, 2)
    assert [t["name"] for t in drawn["data"]] == ["animal", "street", "it"]
    layout = drawn["layout"]
    titles = axis_titles(trace, 2)
    assert [layout["xaxis"]["title"]["text"], layout["yaxis"]["title"]["text"]] == titles
    assert titles[0] in drawn["text"] and "3 of 15 tokens" in drawn["text"]
    ARTIFACTS.mkdir(exist_ok=True)
    snap(page.locator("#traj-host"), path=str(ARTIFACTS / "trajectories-2d.png"))
    # Hover names the layer and the token.
    box = page.evaluate(
        """(i) => { const p = document.querySelector('#traj-host .traj-plot');
          const [L1, n, k] = window.__coords.shape, at = (3 * n + i) * k;
          const c = window.__coords.data.slice(at, at + k);
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


def test_3d_paths_of_every_token(page, live_server, api):
    trace = mount(page, live_server, api)
    drawn = draw(page, {"tokens": None, "dims": 3})
    n = len(trace["tokens"])
    check_paths(trace, drawn, list(range(n)), 3)
    scene = drawn["layout"]["scene"]
    titles = [scene[f"{a}axis"]["title"]["text"] for a in "xyz"]
    assert titles == axis_titles(trace, 3)
    # "the" occurs twice: the legend tells them apart by token number, from 1 as everywhere.
    names = [t["name"] for t in drawn["data"]]
    assert names[1] == "the (token 2)" and names[7] == "the (token 8)" and names[2] == "animal"
    # Each path's label at its end; paths that end close together share one, each name in its
    # colour (core/labels.js sceneGroups: within a tenth of each axis's span), so a turn of the
    # scene never pulls them over one another.
    coords = trace["projection"]["coords"]
    every = [f32(layer[i][:3]) for layer in coords for i in range(n)]
    spans = [max(p[a] for p in every) - min(p[a] for p in every) for a in range(3)]
    groups = scene_groups([f32(coords[-1][i][:3]) for i in range(n)], spans)
    assert any(len(g) > 1 for g in groups) and sorted(sum(groups, [])) == list(range(n))
    labels = [re.sub(r"<[^>]+>", "", a["text"]) for a in scene["annotations"]]
    assert labels == [
        ", ".join(shown_token(trace["tokens"][i]) for i in g[:4])
        + (f" +{len(g) - 4} more" if len(g) > 4 else "")
        for g in groups
    ]
    snap(page.locator("#traj-host"), path=str(ARTIFACTS / "trajectories-3d.png"))


def test_switching_dims_and_picking_none(page, live_server, api):
    trace = mount(page, live_server, api)
    draw(page, {"tokens": [1, 2], "dims": 3})
    plot = page.evaluate_handle("() => document.querySelector('#traj-host .traj-plot')")
    drawn = draw(page, {"tokens": [2, 99, 2, -1], "dims": 2})
    check_paths(trace, drawn, [2], 2)
    assert page.evaluate("p => p === document.querySelector('#traj-host .traj-plot')", plot)
    drawn = draw(page, {"tokens": [], "dims": 2})
    check_paths(trace, drawn, [], 2)
    assert [a["text"] for a in drawn["layout"]["annotations"]] == ["No tokens picked"]
    drawn = draw(page, {"tokens": [], "dims": 3})
    check_paths(trace, drawn, [], 3)


def test_token_text_is_never_html(page, live_server, api):
    trace = mount(page, live_server, api)
    evil = '<img src=x onerror="window.__xss=1">'
    tokens = [*trace["tokens"][:3], evil, *trace["tokens"][4:]]
    for dims in (2, 3):
        drawn = draw(page, {"tokens": [3], "dims": dims}, tokens)
        assert drawn["data"][0]["name"].startswith("&lt;img")
        assert page.locator("#traj-host img").count() == 0
        # the text as text, drawn as every token is (issue 28, 5.10: core/tokens.js)
        assert page.locator("#traj-host .legendtext").first.text_content() == shown_token(evil)
    assert page.evaluate("() => window.__xss") is None
