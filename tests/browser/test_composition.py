"""The "How heads compose" card (views/composition.js, issue 29 item 3): nothing is asked for
until "Compose every head"; then the strongest edges of the chosen kind are the API's, in its
order, in words and as edges of the graph; the heads take the atlas's roles once it is scored;
an edge opened by the keyboard opens its later head in the model view; axe finds nothing
serious; screenshots at 1280 and 480 px."""

from __future__ import annotations

import pytest

from attnviz.numbers import readable_weight
from attnviz.pretrained.registry import BUILTIN_NAME
from tests.browser.helpers import (
    ARTIFACTS,
    AXE,
    axe_serious,
    open_sentence,
    snap,
    views_drawn,
    wait_for_views,
)

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

ROLE_AT = 0.4  # views/composition.js: an atlas score from which a head takes that role
ROLES = {"induction": "induction", "previous_token": "previous token", "first_token": "sink"}


def strongest(comp: dict, kind: str, count: int) -> list[tuple[float, int, int, int, int]]:
    """views/composition.js strongestEdges: (score, la, ha, lb, hb), strongest first."""
    heads = comp["heads"]
    edges = [
        (v, i // heads, i % heads, lb, hb)
        for lb, later in enumerate(comp["kinds"][kind])
        for hb, scores in enumerate(later)
        for i, v in enumerate(scores)
        if v is not None
    ]
    edges.sort(key=lambda e: (-e[0], e[1], e[2], e[3], e[4]))
    return edges[:count]


def role(atlas: dict | None, layer: int, head: int) -> str:
    """views/composition.js roleOf, in words: the first role whose atlas score reaches ROLE_AT."""
    if atlas is None:
        return ""
    scores = {s["name"]: s["grid"] for s in atlas["scores"]}
    for name, said in ROLES.items():
        if scores[name][layer][head] >= ROLE_AT:
            return f" ({said})"
    return ""


def words(edge, atlas: dict | None) -> str:
    v, la, ha, lb, hb = edge
    return (
        f"layer {la + 1} head {ha + 1}{role(atlas, la, ha)} → "
        f"layer {lb + 1} head {hb + 1}{role(atlas, lb, hb)}: {readable_weight(v)}"
    )


def listed(page) -> list[str]:
    return page.locator("#comp-view ol.composition-edges button").all_text_contents()


def test_the_composition_card_draws_the_apis_strongest_edges_and_opens_a_head(
    page, live_server, api
):
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/composition" in r.url else None)
    page.add_init_script(path=str(AXE))
    open_sentence(page, live_server + "/")
    assert asked == [] and page.locator("#comp-kind").is_disabled()

    comp = api.get(f"/api/models/{BUILTIN_NAME}/composition").json()
    page.click("#comp-go")
    page.locator("#comp-view ol.composition-edges li").nth(19).wait_for()
    assert len(asked) == 1 and page.locator("#comp-go").is_hidden()
    # K-composition first (how an induction head reads a previous-token head), 20 edges.
    assert page.locator("#comp-kind").input_value() == "k"
    top = strongest(comp, "k", 20)
    assert listed(page) == [words(e, None) for e in top]
    assert page.locator("#comp-view path.composition-edge").count() == 20
    nodes = page.locator("#comp-view svg circle").count()
    assert nodes == comp["layers"] * comp["heads"]
    summary = page.locator("#comp-view .plot-summary").text_content()
    assert summary == f"Strongest K-composition: {words(top[0], None)}."
    assert comp["processing"] in page.locator("#comp-processing").text_content()

    # Another kind, more edges: the list follows.
    page.select_option("#comp-kind", "q")
    page.select_option("#comp-count", "40")
    assert listed(page) == [words(e, None) for e in strongest(comp, "q", 40)]
    assert page.locator("#comp-view path.composition-edge").count() == 40

    # The atlas scored: the heads take its roles (in the list and as the graph's letters).
    atlas = api.get(f"/api/models/{BUILTIN_NAME}/atlas").json()
    page.click("#atlas-go")
    page.locator("#atlas-view button.atlas-cell").first.wait_for()
    page.wait_for_function("() => document.querySelector('#comp-view .composition-role')")
    assert listed(page) == [words(e, atlas) for e in strongest(comp, "q", 40)]
    letters = page.locator("#comp-view .composition-role").count()
    labelled = sum(
        1
        for layer in range(comp["layers"])
        for head in range(comp["heads"])
        if role(atlas, layer, head)
    )
    assert letters == labelled > 0

    # The keyboard: Tab reaches the edges; Enter opens the later head in the views (the same
    # text: no new trace).
    _, _, _, lb, hb = strongest(comp, "q", 40)[2]
    button = page.locator("#comp-view ol.composition-edges button").nth(2)
    button.focus()
    before = views_drawn(page)
    page.keyboard.press("Enter")
    wait_for_views(page, before)
    chosen = page.locator("#mv-grid button.mv-cell.selected")
    assert (chosen.get_attribute("data-layer"), chosen.get_attribute("data-head")) == (
        str(lb), str(hb))  # fmt: skip
    assert button.get_attribute("aria-pressed") == "true"

    assert axe_serious(page) == []
    ARTIFACTS.mkdir(exist_ok=True)
    for width in (1280, 480):
        page.set_viewport_size({"width": width, "height": 900})
        snap(page.locator("#comp-card"), path=str(ARTIFACTS / f"composition-{width}.png"))
        assert not page.evaluate("document.documentElement.scrollWidth > innerWidth")
