"""The "Many texts" card (views/corpus.js, views/headclusters.js): nothing is asked for until
the button; then the map draws every token the API sent (queries and keys), a user point's
tooltip under the pointer names its token, the keyboard's cursor reads the API's coordinates as
given, a file of 3 lines makes a set of 3 texts beside the sentence, a head picked in the
clusters' matrix is asked for and titles the map, a point's text opens in the views; axe finds
nothing serious in the card; no sideways scroll at 480 px; screenshots at 1280 and 480 px."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from attnviz.numbers import readable_percent
from tests.browser.helpers import (
    ARTIFACTS,
    AXE,
    MODEL,
    SERIOUS,
    open_sentence,
    select_and_wait,
    snap,
    type_sentence,
    view_change,
    wait_for_trace,
)

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

SHOTS = Path("/tmp/shots-corpus")
SENTENCE = "The cat sat on the warm mat"
SLOW_MS = 180_000  # a new set runs every head of the model over it on two CPU cores
LINES = "Rivers run to the sea.\nA bank can hold money.\n\nThe dog slept under the table.\n"


def answers(page) -> int:
    return int(
        page.evaluate("() => +(document.getElementById('corpus-card').dataset.answers || 0)")
    )


def wait_for_answer(page, after: int) -> None:
    page.wait_for_function(
        "n => +(document.getElementById('corpus-card').dataset.answers || 0) > n",
        arg=after,
        timeout=SLOW_MS,
    )


def place(page, action) -> tuple[dict, dict]:
    """Do `action` (which asks for a map), wait for the answer to be drawn: (request, answer)."""
    before = answers(page)
    with page.expect_response(
        lambda r: r.url.endswith("/corpus") and r.request.method == "POST", timeout=SLOW_MS
    ) as got:
        action()
    response = got.value
    assert response.status == 200, response.text()
    wait_for_answer(page, before)
    return json.loads(response.request.post_data), response.json()


def frame(page) -> dict:
    """The map's frame (the API's coordinates to the canvas's pixels) and the canvas's box."""
    return page.evaluate(
        """() => { const root = document.querySelector('#corpus-view .cm');
          const c = root.__corpus; const r = root.querySelector('canvas').getBoundingClientRect();
          return {...c.frame, left: c.left, top: c.top, x: r.left, y: r.top}; }"""
    )


def pixel(f: dict, x: float, y: float) -> tuple[float, float]:
    return (
        f["x"] + f["left"] + (x - f["x0"]) * f["scale"],
        f["y"] + f["top"] + (f["y1"] - y) * f["scale"],
    )


def live(page) -> str:
    return page.locator("#corpus-view .plot-live").text_content()


def said_xy(text: str) -> tuple[float, float]:
    m = re.search(r": x (\S+), y (\S+)\. Nearest", text)
    assert m, text
    return float(m.group(1)), float(m.group(2))


def axe_in_card(page) -> list[str]:
    found = page.evaluate(
        """async () => (await axe.run('#corpus-card', {runOnly: {type: 'tag',
          values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']}})).violations
          .map((v) => ({id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' '))}))"""
    )
    return [f"{v['id']} ({v['impact']}): {v['nodes'][:5]}" for v in found if v["impact"] in SERIOUS]


def test_many_texts_map_draws_the_apis_points_and_follows_a_head(page, live_server, api):
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if r.url.endswith("/corpus") else None)
    page.add_init_script(path=str(AXE))
    open_sentence(page, live_server + "/", SENTENCE)
    limits = api.get("/api/models").json()["corpus"]
    card = page.locator("#corpus-card")
    card.scroll_into_view_if_needed()
    assert page.locator("#corpus-budget").input_value() == str(limits["default_tokens"])
    assert page.locator("#corpus-budget").get_attribute("max") == str(limits["max_tokens"])
    projections = page.locator("#corpus-projection option").evaluate_all(
        "os => os.map((o) => o.value)"
    )
    assert projections == limits["projections"]
    assert asked == []  # nothing before the button

    # The card starts from the head the views show.
    view_change(page, lambda: page.click('#mv-grid button.mv-cell[data-layer="2"][data-head="3"]'))
    assert page.locator("#corpus-layer").input_value() == "2"
    assert page.locator("#corpus-head").input_value() == "3"
    # The docs set, 600 tokens.
    page.select_option("#corpus-source", "docs")
    page.fill("#corpus-budget", "600")
    page.locator("#corpus-budget").dispatch_event("change")
    body, a = place(page, lambda: page.click("#corpus-go"))
    assert body == {"source": "docs", "text": SENTENCE, "layer": 2, "head": 3, "projection": "pca",
                    "seed": 0, "max_tokens": 600, "clusters": 6}  # fmt: skip
    assert len(asked) == 1 and page.locator("#corpus-go").is_hidden()
    p = a["points"]
    view = page.locator("#corpus-view")
    assert int(view.get_attribute("data-points")) == a["tokens"] == len(p["qx"])
    assert a["texts"][0]["user"] and a["texts"][0]["text"] == SENTENCE
    title = page.locator("#corpus-view .cm-title").text_content()
    assert title.startswith("Queries and keys of layer 3 head 4: ")
    drawn = page.evaluate("() => document.querySelector('#corpus-view .cm').__corpus.axes")
    # each axis's share of the variance a whole percentage, as numbers.js readablePercent says it
    assert drawn == [f"PC{k + 1} ({readable_percent(a['explained'][k])})" for k in (0, 1)]
    summary = page.locator("#corpus-view .plot-summary").text_content()
    assert summary.startswith(f"{a['tokens']:,} tokens from {len(a['texts'])} texts")
    user = [i for i, t in enumerate(p["text"]) if t == 0]
    tokens = a["texts"][0]["tokens"]
    assert len(user) == len(tokens)
    assert f"your {len(tokens)} tokens' queries sit nearest keys of" in summary
    rows = page.locator("#corpus-view .plot-numbers tbody tr")
    assert rows.count() == len(tokens)
    first = rows.nth(1).locator("td").all_text_contents()
    assert [float(v) for v in first] == [p["qx"][1], p["qy"][1], p["kx"][1], p["ky"][1]]

    # Hover a user point (its query): the tooltip names its token in its text.
    k = 2  # the sentence's second word
    page.locator("#corpus-view canvas").scroll_into_view_if_needed()
    f = frame(page)
    page.mouse.move(*pixel(f, p["qx"][user[k]], p["qy"][user[k]]))
    tip = page.locator("#corpus-view .cm-tip")
    tip.wait_for(state="visible")
    said = tip.inner_text()
    assert f"[{tokens[k]}]" in said and f"query · your sentence · token {k + 1}" in said, said
    x, y = (float(v) for v in re.search(r"x (\S+), y (\S+)", said).groups())
    assert (x, y) == (p["qx"][user[k]], p["qy"][user[k]])

    # The keyboard: focus reads the first token's query; Right the next; Down its key.
    page.mouse.move(0, 0)
    page.focus("#corpus-view canvas")
    assert live(page).startswith(f"“{tokens[0]}” query, your sentence, token 1: ")
    assert said_xy(live(page)) == (p["qx"][0], p["qy"][0])
    page.keyboard.press("ArrowRight")
    assert said_xy(live(page)) == (p["qx"][1], p["qy"][1])
    page.keyboard.press("ArrowDown")
    assert live(page).startswith(f"“{tokens[1]}” key, your sentence, token 2: ")
    assert said_xy(live(page)) == (p["kx"][1], p["ky"][1])
    page.keyboard.press("End")
    last = len(p["qx"]) - 1
    t = p["text"][last]
    assert live(page).startswith(
        f"“{a['texts'][t]['tokens'][p['pos'][last]]}” key, text {t + 1} of {len(a['texts'])}, "
    )
    assert said_xy(live(page)) == (p["kx"][last], p["ky"][last])
    assert page.locator("#corpus-view .cm-cursor").is_visible()  # the cursor's ring
    page.keyboard.press("ArrowLeft")  # back into the sentence: its last token
    assert said_xy(live(page)) == (p["kx"][user[-1]], p["ky"][user[-1]])

    # The heads' clusters: a matrix of every head, each cluster listed.
    c = a["clusters"]
    n = c["layers"] * c["heads"]
    assert len(c["order"]) == n
    listed = page.locator("#corpus-heads .hcl-list li")
    assert listed.count() == max(c["labels"]) + 1
    # Pick a head in another cluster by a click on its row: asked for, and the map says so.
    row = next(i for i, h in enumerate(c["order"]) if c["labels"][h] != c["labels"][0])
    head = c["order"][row]
    layer_, head_ = divmod(head, c["heads"])
    page.locator("#corpus-heads canvas").scroll_into_view_if_needed()
    g = page.evaluate(
        """() => { const root = document.querySelector('#corpus-heads .hcl');
          const r = root.querySelector('canvas').getBoundingClientRect();
          return {...root.__clusters.geometry, x: r.left, y: r.top}; }"""
    )
    at = (g["x"] + g["left"] + (row + 0.5) * g["cell"], g["y"] + g["top"] + (row + 0.5) * g["cell"])
    body, b = place(page, lambda: page.mouse.click(*at))
    assert (body["layer"], body["head"]) == (layer_, head_)
    assert (b["layer"], b["head"]) == (layer_, head_) and b["cached"]
    title = page.locator("#corpus-view .cm-title").text_content()
    assert title.startswith(f"Queries and keys of layer {layer_ + 1} head {head_ + 1}: ")
    assert page.locator("#corpus-layer").input_value() == str(layer_)
    assert page.locator("#corpus-head").input_value() == str(head_)
    assert int(view.get_attribute("data-points")) == b["tokens"]
    hs = page.locator("#corpus-heads .plot-summary").text_content()
    assert (
        f"L{layer_ + 1} H{head_ + 1}, shown in the map, is in cluster {b['clusters']['labels'][head] + 1}"
        in hs
    )
    # The keyboard in the matrix: Enter picks the row's head.
    page.focus("#corpus-heads canvas")
    page.keyboard.press("Control+Home")
    top_head = b["clusters"]["order"][0]
    assert (
        page.locator("#corpus-heads .plot-live")
        .text_content()
        .startswith(f"L{top_head // c['heads'] + 1} H{top_head % c['heads'] + 1} and ")
    )
    body, _ = place(page, lambda: page.keyboard.press("Enter"))
    assert (body["layer"], body["head"]) == divmod(top_head, c["heads"])

    # axe: nothing serious or critical in the card.
    assert axe_in_card(page) == []
    SHOTS.mkdir(exist_ok=True)
    ARTIFACTS.mkdir(exist_ok=True)
    for width in (1280, 480):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_function(
            "w => document.querySelector('#corpus-view .cm').__corpus.width <= w", arg=width
        )  # redrawn for the window
        snap(card, path=str(SHOTS / f"corpus-card-{width}.png"))
        snap(card, path=str(ARTIFACTS / f"corpus-card-{width}.png"))
        overflow = page.evaluate("document.documentElement.scrollWidth - innerWidth")
        assert overflow <= 0, width
    page.set_viewport_size({"width": 1280, "height": 900})

    # A file of 3 texts (and a blank line): a new set puts the button back; then the sentence and 3.
    page.select_option("#corpus-source", "upload")
    assert page.locator("#corpus-go").is_visible() and page.locator("#corpus-go").is_disabled()
    # A file past the server's cap is refused here, before any request.
    n = len(asked)
    big = limits["max_chars"] + 1
    page.set_input_files(
        "#corpus-file", files=[{"name": "big.txt", "mimeType": "text/plain", "buffer": b"a" * big}]
    )
    error = page.locator("#error")
    error.wait_for(state="visible")
    assert error.text_content() == (
        f"upload: the file has {big:,} characters; at most {limits['max_chars']:,}"
    )
    assert page.locator("#corpus-go").is_disabled() and len(asked) == n
    page.set_input_files(
        "#corpus-file",
        files=[{"name": "three.txt", "mimeType": "text/plain", "buffer": LINES.encode()}],
    )
    page.wait_for_function("() => !document.getElementById('corpus-go').disabled")
    body, u = place(page, lambda: page.click("#corpus-go"))
    assert body["source"] == "upload" and body["upload"] == LINES
    assert len(u["texts"]) == 1 + 3 and u["texts"][0]["user"]
    assert [t["text"] for t in u["texts"][1:]] == [line for line in LINES.splitlines() if line]
    assert int(view.get_attribute("data-points")) == u["tokens"]

    # A click on a point of another text opens that text at this head in the views above.
    q = u["points"]
    page.locator("#corpus-view canvas").scroll_into_view_if_needed()
    f = frame(page)
    mine = [pixel(f, q["qx"][i], q["qy"][i]) for i in range(len(q["qx"])) if q["text"][i] == 0]
    mine += [pixel(f, q["kx"][i], q["ky"][i]) for i in range(len(q["qx"])) if q["text"][i] == 0]

    def clear(pt) -> bool:  # away from every user point (they are hit first)
        return all((pt[0] - m[0]) ** 2 + (pt[1] - m[1]) ** 2 > 12**2 for m in mine)

    i, pt = next(
        (i, pixel(f, q["qx"][i], q["qy"][i]))
        for i in range(len(q["qx"]))
        if q["text"][i] != 0 and clear(pixel(f, q["qx"][i], q["qy"][i]))
    )
    before = int(page.evaluate("document.documentElement.dataset.traces || '0'"))
    page.mouse.click(*pt)
    wait_for_trace(page, before)
    assert page.locator("#s-text").input_value() == u["texts"][q["text"][i]]["text"]
    chosen = page.locator("#mv-grid button.mv-cell.selected")
    assert (int(chosen.get_attribute("data-layer")), int(chosen.get_attribute("data-head"))) == (
        u["layer"], u["head"])  # fmt: skip
    assert page.locator("#s-model").input_value() == MODEL

    # Another model puts the button back, and its heads in the selects.
    type_sentence(page, "I sat on the river bank")  # a text the tiny GPT-2 reads
    select_and_wait(page, "#s-model", "tiny-gpt2")
    assert page.locator("#corpus-go").is_visible() and page.locator("#corpus-go").is_enabled()
    assert page.locator("#corpus-view .cm").count() == 0
    info = next(m for m in api.get("/api/models").json()["models"] if m["name"] == "tiny-gpt2")
    assert page.locator("#corpus-layer option").count() == info["layers"]
    assert page.locator("#corpus-head option").count() == info["heads"]
