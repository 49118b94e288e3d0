"""Token labels never overprint (issue 41, 6): the toy lab's token vectors (the still picture of
three dimensions, and a 2-D plot) and sentence mode's 2-D trajectories place each token's label
in pixel space (static/js/core/labels.js), on the page's own examples and on texts whose tokens
repeat and crowd one point. Read as drawn: every label's text element's box on screen, at 1280
and 480 px, after a zoom and after the data change. A label with no room is left off, and its
token is still named: the line under the plot says which, and the keyboard cursor reads it.
The live 3-D scene, which turns, places nothing in pixels: tokens close in 3-D share one label
(sceneGroups, issue 41 item 4), and on the page's example its labels are apart as drawn."""

from __future__ import annotations

import re

import pytest

from tests.browser.helpers import (
    MODEL,
    VIEWPORT,
    open_app,
    open_sentence,
    rotate,
    share_hash,
    shoot,
    shown_token,
    spoken_token,
    type_sentence,
    vector_points,
    vector_range,
    view_change,
    wait_for_trace,
)
from tests.support.oracles import scene_groups

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

VECTORS = "#vectors-plot"
TRAJ = "#traj-view .traj-plot"

# Every label annotation (core/labels.js names them "token-label") as drawn: its text
# element's box on screen; the ones left off (visible: false); the line naming them.
LABELS = """(sel) => {
  const plot = document.querySelector(sel);
  const anns = plot.layout.annotations || [];
  const shown = [...plot.querySelectorAll('g.annotation')].flatMap((g) => {
    const i = Number(g.getAttribute('data-index'));
    const text = g.querySelector('text.annotation-text');
    if (!text || anns[i]?.name !== 'token-label') return [];
    const r = text.getBoundingClientRect();
    return [{i, text: text.textContent, left: r.left, top: r.top, right: r.right, bottom: r.bottom}];
  });
  const hidden = anns.filter((a) => a.name === 'token-label' && a.visible === false).length;
  const labels = anns.filter((a) => a.name === 'token-label').length;
  let box = plot.nextElementSibling;
  while (box && !box.classList.contains('plot-text')) box = box.nextElementSibling;
  const note = box.querySelector('.plot-unlabelled');
  return {shown, hidden, labels, note: note && !note.hidden ? note.textContent : ''};
}"""


def resize(page, plot: str, width: int) -> None:
    """The window `width` px wide, once the plot is drawn to its new size and its labels are
    placed for it (core/labels.js marks the size: data-labels-at)."""
    page.set_viewport_size({"width": width, "height": VIEWPORT["height"]})
    page.wait_for_function(
        """s => { const p = document.querySelector(s), f = p._fullLayout;
          return Math.abs(f.width - p.clientWidth) <= 1
            && p.dataset.labelsAt === `${f.width}x${f.height}`; }""",
        arg=plot,
    )


def labels_apart(page, plot: str) -> dict:
    """The plot's labels as drawn; asserts that no two shown labels' text boxes overlap, that
    every label is either drawn or left off (and then named under the plot), and that each has
    a size on screen."""
    got = page.evaluate(LABELS, plot)
    shown = got["shown"]
    assert got["labels"] == len(shown) + got["hidden"], got
    for a in shown:
        assert a["right"] - a["left"] > 3 and a["bottom"] - a["top"] > 5, a
    for n, a in enumerate(shown):
        for b in shown[n + 1 :]:
            apart = (
                a["right"] <= b["left"]
                or b["right"] <= a["left"]
                or a["bottom"] <= b["top"]
                or b["bottom"] <= a["top"]
            )
            assert apart, (a, b)
    assert bool(got["note"]) == bool(got["hidden"]), got
    return got


def unlabelled(got: dict) -> str:
    return got["note"].removeprefix("No room for the label of ").split(": hover a point")[0]


def read_by_keys(page, plot: str, count: int, step: str, start: tuple[str, ...]) -> list[str]:
    """What the plot's keyboard cursor reads at `count` points, from the first cell (then the
    keys `start`), one press of `step` apart."""
    page.focus(plot)
    for key in ("Control+Home", *start):
        page.keyboard.press(key)
    said = []
    for k in range(count):
        if k:
            page.keyboard.press(step)
        said.append(
            page.evaluate(
                """s => { let box = document.querySelector(s).nextElementSibling;
                  while (!box.classList.contains('plot-text')) box = box.nextElementSibling;
                  return box.querySelector('.plot-live').textContent; }""",
                plot,
            )
        )
    page.locator(plot).blur()
    return said


def every_token_named(page, plot: str, tokens: list[str], got: dict) -> None:
    """Each token is in a drawn label or in the line under the plot, and the keyboard reads
    every one of them by its spoken name: the vectors' tokens along the row of the layer shown
    (the second row), the trajectories' paths down the first column."""
    drawn = ", ".join(a["text"] for a in got["shown"])
    left_off = unlabelled(got)
    for t in tokens:
        assert shown_token(t) in drawn or shown_token(t) in left_off, (t, got)
    vectors = plot == VECTORS
    keys = ("ArrowRight", ("ArrowDown",)) if vectors else ("ArrowDown", ())
    said = read_by_keys(page, plot, len(tokens), *keys)
    for t, line in zip(tokens, said, strict=True):
        assert line.startswith(f"{spoken_token(t)} · layer "), (t, line)


def toy_link(tokens: list[str], axes: list[str], embeddings: list[list[float]]) -> str:
    return share_hash(
        {
            "v": 1,
            "tokens": tokens,
            "axes": axes,
            "embeddings": embeddings,
            "config": {"residual": True},
        }
    )


# 24 tokens, most of them repeated, their vectors within 0.05 of each other.
CROWD = ["the", "cat", "the", "cat", "sat", "on", "the", "mat", "the", "cat", "sat", "on"] * 2


def crowd(dims: int) -> list[list[float]]:
    """24 distinct vectors, each within 0.05 of the others in every coordinate."""
    steps = [lambda i: i, lambda i: (5 * i) % 24, lambda i: (7 * i) % 24]
    return [[round(0.5 + 0.002 * steps[c](i), 3) for c in range(dims)] for i in range(len(CROWD))]


def open_vectors(page, url: str) -> None:
    open_app(page, url)
    page.locator("#vectors-card").scroll_into_view_if_needed()
    page.wait_for_function(
        "s => document.querySelector(s).layout?.annotations?.some((a) => a.name === 'token-label')",
        arg=VECTORS,
    )


def test_token_vectors_labels_never_overlap(page, live_server):
    # The apple/banana example: its still picture (3-D), every token labelled.
    open_vectors(page, live_server + "/")
    got = labels_apart(page, VECTORS)
    assert sorted(a["text"] for a in got["shown"]) == ["An, a", "and", "apple", "banana"]
    assert got["note"] == ""
    tokens = ["An", "apple", "and", "a", "banana"]
    every_token_named(page, VECTORS, tokens, got)
    shoot(page, "labels-vectors-apple", "#vectors-card")
    resize(page, VECTORS, 480)
    labels_apart(page, VECTORS)
    resize(page, VECTORS, VIEWPORT["width"])

    # 24 tokens crowding one point, in three dimensions (the still picture) and in two.
    for dims in (3, 2):
        page.goto("about:blank")
        open_vectors(page, live_server + "/" + toy_link(CROWD, list("xyz")[:dims], crowd(dims)))
        got = labels_apart(page, VECTORS)
        assert got["hidden"] > 0 and len(got["shown"]) >= 6, got
        every_token_named(page, VECTORS, CROWD, got)
        shoot(page, f"labels-vectors-crowd-{dims}d", "#vectors-card")
        resize(page, VECTORS, 480)
        narrow = labels_apart(page, VECTORS)
        assert narrow["labels"] == got["labels"]
        resize(page, VECTORS, VIEWPORT["width"])

    # Zoomed in (a drag around the points after the layer), the points spread and more labels
    # fit; still apart.
    before = labels_apart(page, VECTORS)
    page.locator(VECTORS).scroll_into_view_if_needed()
    box = page.evaluate(
        """s => { const p = document.querySelector(s), xa = p._fullLayout.xaxis,
          ya = p._fullLayout.yaxis, r = p.getBoundingClientRect();
          const at = (x, y) => [r.left + xa._offset + xa.l2p(x), r.top + ya._offset + ya.l2p(y)];
          const after = p.data.find((t) => t.uid === 'after');
          const mid = (v) => (Math.min(...v) + Math.max(...v)) / 2, x = mid(after.x), y = mid(after.y);
          return [at(x - 0.12, y + 0.12), at(x + 0.12, y - 0.12)]; }""",
        VECTORS,
    )
    page.mouse.move(*box[0])
    page.mouse.down()
    page.mouse.move(*box[1], steps=8)
    page.mouse.up()
    page.wait_for_function(
        "([s, n]) => document.querySelector(s).layout.annotations"
        ".filter((a) => a.name === 'token-label' && a.visible !== false).length > n",
        arg=[VECTORS, len(before["shown"])],
    )
    zoomed = labels_apart(page, VECTORS)
    assert len(zoomed["shown"]) > len(before["shown"])
    shoot(page, "labels-vectors-zoomed", "#vectors-card")

    # The data change (the slider's layer): placed again for the new points.
    view_change(page, lambda: page.locator("#vec-layer").fill("0"))
    labels_apart(page, VECTORS)


TEXT_CROWD = "the cat the cat the cat sat on the mat the mat the cat sat on the mat"


def test_trajectory_labels_never_overlap(page, live_server, api):
    open_sentence(page, live_server + "/")
    page.locator(TRAJ).scroll_into_view_if_needed()
    page.wait_for_selector(f"{TRAJ} .main-svg")
    tokens = api.post(
        "/api/trace",
        json={"model": MODEL, "text": page.locator("#s-text").input_value()},
    ).json()["tokens"]
    got = labels_apart(page, TRAJ)
    assert got["labels"] == len(tokens)
    every_token_named(page, TRAJ, tokens, got)
    shoot(page, "labels-traj-default", "#traj-card")

    # A text of repeated tokens, whose paths end close together.
    crowd_tokens = api.post("/api/trace", json={"model": MODEL, "text": TEXT_CROWD}).json()
    type_sentence(page, TEXT_CROWD)
    page.wait_for_function(
        "([s, n]) => (document.querySelector(s).layout?.annotations || [])"
        ".filter((a) => a.name === 'token-label').length === n",
        arg=[TRAJ, len(crowd_tokens["tokens"])],
    )
    got = labels_apart(page, TRAJ)
    every_token_named(page, TRAJ, crowd_tokens["tokens"], got)
    shoot(page, "labels-traj-crowd", "#traj-card")
    resize(page, TRAJ, 480)
    labels_apart(page, TRAJ)
    resize(page, TRAJ, VIEWPORT["width"])
    labels_apart(page, TRAJ)


def test_a_linked_crowd_opens_apart(page, live_server):
    """A link to the crowded text opens with its labels apart (the first draw, not a redraw)."""
    url = (
        live_server
        + "/"
        + share_hash({"mode": "sentence", "sentence": {"model": MODEL, "text": TEXT_CROWD}})
    )
    page.goto(url)
    wait_for_trace(page, 0)
    page.locator(TRAJ).scroll_into_view_if_needed()
    page.wait_for_selector(f"{TRAJ} .main-svg")
    labels_apart(page, TRAJ)


# A live 3-D scene's labels (scene annotations, drawn by Plotly in the SVG over the WebGL) as
# drawn: each one's text element's box on screen; and the line under the plot.
SCENE_LABELS = """(sel) => {
  const plot = document.querySelector(sel);
  const shown = [...plot.querySelectorAll('g.annotation-scene')].map((g) => {
    const r = g.querySelector('text.annotation-text').getBoundingClientRect();
    return {text: g.textContent, left: r.left, top: r.top, right: r.right, bottom: r.bottom};
  });
  let box = plot.nextElementSibling;
  while (box && !box.classList.contains('plot-text')) box = box.nextElementSibling;
  const note = box.querySelector('.plot-unlabelled');
  return {shown, note: note && !note.hidden ? note.textContent : ''};
}"""


def scene_apart(page, plot: str, count: int) -> dict:
    """The scene's `count` labels as drawn, once drawn at the plot's size: no two overlap."""
    page.wait_for_function(
        "([s, n]) => document.querySelectorAll(`${s} g.annotation-scene`).length === n",
        arg=[plot, count],
    )
    got = page.evaluate(SCENE_LABELS, plot)
    for n, a in enumerate(got["shown"]):
        assert a["right"] - a["left"] > 3 and a["bottom"] - a["top"] > 5, a
        for b in got["shown"][n + 1 :]:
            apart = (
                a["right"] <= b["left"]
                or b["right"] <= a["left"]
                or a["bottom"] <= b["top"]
                or b["bottom"] <= a["top"]
            )
            assert apart, (a, b)
    return got


def expected_scene_labels(tokens: list[str], groups: list[list[int]]) -> list[str]:
    """Each group's label as it reads: up to 4 of its tokens, then how many more."""
    return [
        ", ".join(shown_token(tokens[i]) for i in g[:4])
        + (f" +{len(g) - 4} more" if len(g) > 4 else "")
        for g in groups
    ]


def test_live_scene_labels_share_close_tokens(page, live_server):
    # The apple/banana example turned live: "An, a" beside "and" and "apple" on "banana"
    # overprinted there; tokens within a tenth of the axes' span share one label.
    open_vectors(page, live_server + "/")
    rotate(page)
    tokens = ["An", "apple", "and", "a", "banana"]
    lo, hi = vector_range(page)
    groups = scene_groups(vector_points(page), [hi - lo] * 3)
    assert groups == [[0, 2, 3], [1, 4]]
    scene = page.evaluate("() => document.getElementById('vectors-plot').layout.scene.annotations")
    texts = [re.sub(r"<[^>]+>", "", a["text"]) for a in scene]
    assert texts == expected_scene_labels(tokens, groups) == ["An, and, a", "apple, banana"]
    got = scene_apart(page, VECTORS, len(groups))
    assert sorted(a["text"] for a in got["shown"]) == sorted(texts) and got["note"] == ""
    shoot(page, "labels-vectors-live", "#vectors-card")
    page.set_viewport_size({"width": 480, "height": VIEWPORT["height"]})
    page.wait_for_function(
        "s => Math.abs(document.querySelector(s)._fullLayout.width"
        " - document.querySelector(s).clientWidth) <= 1",
        arg=VECTORS,
    )
    scene_apart(page, VECTORS, len(groups))
    page.set_viewport_size(VIEWPORT)
    page.wait_for_function(
        "s => Math.abs(document.querySelector(s)._fullLayout.width"
        " - document.querySelector(s).clientWidth) <= 1",
        arg=VECTORS,
    )

    # Turned by a drag: once the scene rests, its labels are placed again for the new camera.
    placed = int(page.locator(VECTORS).get_attribute("data-labels-placed") or 0)
    box = page.locator(VECTORS).bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 160, y + 40, steps=10)
    page.mouse.up()
    page.wait_for_function(
        "([s, n]) => +(document.querySelector(s).dataset.labelsPlaced || 0) > n",
        arg=[VECTORS, placed],
    )
    turned = page.evaluate("s => document.querySelector(s).layout.scene.camera.eye", VECTORS)
    assert turned != {"x": 1.45, "y": -1.5, "z": 0.75}
    scene_apart(page, VECTORS, len(groups))
    shoot(page, "labels-vectors-live-turned", "#vectors-card")

    # 24 tokens crowding one point: one label names 4 of them and how many more; the line
    # under the plot names the others, which the keyboard reads as every token.
    page.goto("about:blank")
    open_vectors(page, live_server + "/" + toy_link(CROWD, list("xyz"), crowd(3)))
    rotate(page)
    got = scene_apart(page, VECTORS, 1)
    assert [a["text"] for a in got["shown"]] == expected_scene_labels(CROWD, [list(range(24))])
    left_off = got["note"].removeprefix("No room for the label of ").split(": hover a point")[0]
    # Named as the 2-D plot's note names them: a repeated token with its number.
    named = [f"{shown_token(t)} (token {i + 1})" for i, t in enumerate(CROWD)]
    assert left_off.split(", ") == named[4:]
    said = read_by_keys(page, VECTORS, len(CROWD), "ArrowRight", ("ArrowDown",))
    for t, line in zip(CROWD, said, strict=True):
        assert line.startswith(f"{spoken_token(t)} · layer "), (t, line)
