"""Knocking a head out on the page (modes/sentence/cards/knockout.js, views/knockout.js): with the
model view's "knock out" switch on, a click on a head (or Enter on it) reruns the model without
it; the Knock-out card's losses, top predictions and difference heatmap are the API's numbers
for the knocked-out and the clean runs; the share link carries the knock-out and restores it;
axe finds nothing serious; screenshots at 1280 and 480 px. A model served through transformers
is knocked out the same way; BLOOM's switch is off, with the server's reason."""

from __future__ import annotations

import base64
import json
import math
from decimal import Decimal
from pathlib import Path

import httpx
import pytest

from attnviz.app import create_app
from attnviz.numbers import readable_percent, readable_prose, readable_weight
from attnviz.settings import Settings
from tests.browser.helpers import (
    AXE,
    axe_serious,
    f32,
    open_sentence,
    select_and_wait,
    snap,
    spoken_token,
    view_change,
    wait_for_trace,
)
from tests.support.checkpoints_bridge import make_tiny_bloom, make_tiny_starcoder2
from tests.support.servers import served

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

TEXT = "The animal didn't cross the street because it was too tired."
MODEL = "tiny-gpt2"
SHOTS = Path("/tmp/shots-knock")
CHIP = "L1 H2 ×: put layer 1 head 2 back"  # the chip's text: seen, and read by a screen reader


def change(v: float) -> str:
    """knockout.js's change(): a change of weight as a sentence says it (attnviz.numbers, the
    twin of numbers.js): its size by readable_prose (readable_weight short of 1), a sign (− for
    minus) before its digits ("+0.0523", "about −0.00008")."""
    a = abs(v)
    size = readable_weight(a) if 0.999 < a < 1 else readable_prose(a)
    at = next((n for n, ch in enumerate(size) if ch.isdigit()), -1)
    if v == 0 or at < 0 or size == "0" or size.startswith("practically"):
        return size
    return size[:at] + ("+" if v > 0 else "−") + size[at:]


def api_trace(api, ablate: list | None, **params) -> dict:
    body = {"model": MODEL, "text": TEXT, **({"ablate": ablate} if ablate else {})}
    r = api.post("/api/trace", params=params, json=body)
    assert r.status_code == 200, r.text
    return r.json()


def cell(page, layer: int, head: int):
    return page.locator(f'#mv-grid button.mv-cell[data-layer="{layer}"][data-head="{head}"]')


def exact_change(knocked: float, clean: float) -> str:
    """numbers.js exactChange: knocked - clean of the two JSON spellings, in plain decimals."""
    d = Decimal(repr(knocked)) - Decimal(repr(clean))
    if d == 0:
        return "0"
    s = format(abs(d), "f")
    s = s.rstrip("0").rstrip(".") if "." in s else s
    return ("+" if d > 0 else "−") + s


def test_knock_a_head_out_and_read_the_card(page, live_server, api):
    page.add_init_script(path=str(AXE))
    open_sentence(page, live_server + "/", TEXT)
    select_and_wait(page, "#s-model", MODEL)
    note = page.locator("#ko-note")
    assert note.text_content().startswith("No head is knocked out")
    assert page.locator("#ko-view").inner_html() == ""

    # The switch on, a click on layer 1 head 2 knocks it out: a new trace, its cell marked.
    page.check("#mv-knock")
    assert page.locator("#mv-knock-hint").is_visible()
    before = int(page.evaluate("document.documentElement.dataset.traces || '0'"))
    cell(page, 0, 1).click()
    wait_for_trace(page, before)
    page.locator("#ko-view .ko-table").wait_for()
    assert "knocked" in (cell(page, 0, 1).get_attribute("class") or "")
    assert cell(page, 0, 1).get_attribute("aria-label").endswith("knocked out")
    assert page.locator("#ko-heads button.ko-chip").all_text_contents() == [CHIP]

    # Each position's losses are -ln of the API's probabilities of the next token, clean and
    # knocked out; a changed top prediction is marked.
    ablate = [{"layer": 0, "head": 1, "mode": "zero"}]
    knocked = api_trace(api, ablate, fields="top_k", k=1)
    clean = api_trace(api, None, fields="top_k", k=1)
    assert knocked["ablated"][0]["layer"] == 0 and knocked["ablated"][0]["head"] == 1
    n = knocked["n"]
    rows = page.locator("#ko-view .ko-table tbody tr")
    assert rows.count() == n - 1
    losses: list[tuple[float, float]] = []
    for i in range(n - 1):
        lc = -math.log(f32(clean["top_k"]["target_probs"][i]))
        lk = -math.log(f32(knocked["top_k"]["target_probs"][i]))
        losses.append((lc, lk))
        row = rows.nth(i)
        # each loss to 3 significant digits, as a sentence says it (readable_prose)
        assert row.locator(".ko-loss-clean").text_content() == readable_prose(lc)
        assert row.locator(".ko-loss-knocked").text_content() == readable_prose(lk)
        changed = clean["top_k"]["ids"][i][0] != knocked["top_k"]["ids"][i][0]
        assert (row.locator(".ko-changed").count() == 1) == changed

    # The difference heatmap: by default the chosen head's index (head 1) in the layer after
    # the knocked-out head; its keyboard cursor reads the API's weights of both runs and their
    # difference.
    assert page.locator("#ko-diff-layer").input_value() == "1"
    assert page.locator("#ko-diff-head").input_value() == "0"
    att = {"fields": "attentions", "layer": 1, "head": 0}
    a_k = api_trace(api, ablate, **att)["attentions"][0][0]
    a_c = api_trace(api, None, **att)["attentions"][0][0]
    tokens = knocked["tokens"]
    canvas = page.locator("#ko-view canvas.ko-canvas")
    canvas.focus()
    for key in ("ArrowDown", "ArrowDown", "ArrowDown", "ArrowRight"):
        page.keyboard.press(key)
    i, j = 3, 1
    c, k = f32(a_c[i][j]), f32(a_k[i][j])
    live = page.locator("#ko-view .plot-live").text_content()
    # the tokens named as a screen reader hears them (issue 28, 5.10: " animal" is "space animal")
    # the weights as the API spells them, to 3 significant digits, never "1" short of it
    assert live == (f"{spoken_token(tokens[i])} → {spoken_token(tokens[j])}: {change(k - c)} (clean "
                    f"{readable_weight(a_c[i][j])}, knocked out {readable_weight(a_k[i][j])}; "
                    f"query {i + 1}, key {j + 1})")  # fmt: skip
    assert abs(k - c) > 0  # the head read what the knocked-out head no longer wrote
    # Its numbers table: each change exactly, the difference of the two weights the API spelled.
    numbers = page.locator("#ko-view .plot-numbers")
    assert numbers.count() == 1
    numbers.locator("summary").click()
    row = numbers.locator("tbody tr").nth(i)
    assert row.locator("td").nth(j).text_content() == exact_change(a_k[i][j], a_c[i][j])
    assert row.locator("td").nth(i).text_content() == exact_change(a_k[i][i], a_c[i][i])
    summary = page.locator("#ko-view .ko-summary").text_content()
    assert summary.startswith("Knocked out layer 1 head 2 by zeroing its output.")
    # the mean losses (summed, then divided, as the page does) as a sentence says them
    mc, mk = (readable_prose(sum(ls) / len(ls)) for ls in zip(*losses, strict=True))
    assert f" Mean loss {mc} → {mk} (" in summary, summary
    assert "Largest change: layer 2 head 1, “" in summary

    # The keyboard path: Enter on a focused cell knocks a second head out; its chip puts it back.
    before = int(page.evaluate("document.documentElement.dataset.traces || '0'"))
    cell(page, 1, 3).focus()
    page.keyboard.press("Enter")
    wait_for_trace(page, before)
    assert page.locator("#ko-heads button.ko-chip").count() == 2
    assert (
        "layer 1 head 2, layer 2 head 4 by zeroing their outputs"
        in page.locator(".ko-summary").text_content()
    )
    before = int(page.evaluate("document.documentElement.dataset.traces || '0'"))
    page.locator('#ko-heads button.ko-chip[data-layer="1"]').click()
    wait_for_trace(page, before)
    assert page.locator("#ko-heads button.ko-chip").all_text_contents() == [CHIP]

    assert axe_serious(page) == []
    SHOTS.mkdir(exist_ok=True)
    snap(page.locator("#model-view-card"), path=str(SHOTS / "knock-model-1280.png"))
    page.locator("#knock-card").scroll_into_view_if_needed()
    snap(page.locator("#knock-card"), path=str(SHOTS / "knock-1280.png"))
    page.set_viewport_size({"width": 480, "height": 900})
    view_change(page, lambda: page.select_option("#ko-diff-head", "2"))
    snap(page.locator("#knock-card"), path=str(SHOTS / "knock-480.png"))
    # Its exact numbers scroll inside their own box, never the page.
    page.locator("#ko-view .plot-numbers summary").click()
    page.locator("#ko-view .plot-numbers table").scroll_into_view_if_needed()
    snap(page.locator("#knock-card"), path=str(SHOTS / "knock-numbers-480.png"))
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 480
    scroll = page.locator("#ko-view .plot-numbers .table-scroll")
    assert scroll.evaluate(
        "(e) => e.scrollWidth > e.clientWidth && e.getBoundingClientRect().right <= 480"
    )
    page.set_viewport_size({"width": 1280, "height": 800})

    # The link carries the knock-out: a new page on it reruns the same knock-out.
    link = page.evaluate("location.hash")
    raw = json.loads(base64.urlsafe_b64decode(link.removeprefix("#s=") + "=="))
    assert raw["sentence"]["ablate"] == [{"layer": 0, "head": 1}]
    assert raw["sentence"]["diffHead"] == 2
    losses = page.locator("#ko-view .ko-loss-knocked").all_text_contents()
    page.goto("about:blank")
    page.goto(live_server + "/" + link)
    wait_for_trace(page, 0)
    page.locator("#ko-view .ko-table").wait_for()
    assert page.locator("#ko-heads button.ko-chip").all_text_contents() == [CHIP]
    assert page.locator("#ko-diff-head").input_value() == "2"
    assert page.locator("#ko-view .ko-loss-knocked").all_text_contents() == losses
    assert "knocked" in (cell(page, 0, 1).get_attribute("class") or "")


def test_mean_and_patch_from_the_card(page, live_server, api):
    open_sentence(page, live_server + "/", TEXT)
    select_and_wait(page, "#s-model", MODEL)
    page.check("#mv-knock")
    before = int(page.evaluate("document.documentElement.dataset.traces || '0'"))
    cell(page, 1, 0).click()
    wait_for_trace(page, before)
    select_and_wait(page, "#ko-mode", "mean")
    assert "with its mean over the text" in page.locator(".ko-summary").text_content()
    # Patch: no trace until a source is typed (the card says so), then the source's outputs.
    page.select_option("#ko-mode", "patch")
    page.locator("#ko-source").wait_for(state="visible")
    page.wait_for_function(
        "() => document.getElementById('ko-note').textContent.startsWith('Type a source')"
    )
    before = int(page.evaluate("document.documentElement.dataset.traces || '0'"))
    page.fill("#ko-source", "A cat sat.")
    page.locator("#ko-source").dispatch_event("change")
    wait_for_trace(page, before)
    page.locator("#ko-view .ko-table").wait_for()
    got = api_trace(api, [{"layer": 1, "head": 0, "mode": "patch", "source": "A cat sat."}],
                    fields="top_k", k=1)  # fmt: skip
    patched = got["ablated"][0]["patched"]
    assert 0 < patched < got["n"]
    assert f"The source text has {patched} tokens" in page.locator("#ko-note").text_content()
    first = page.locator("#ko-view .ko-loss-knocked").first.text_content()
    assert first == readable_prose(-math.log(f32(got["top_k"]["target_probs"][0])))


# ---- a model served through transformers (the bridge): knocked out as the engine's are, except
# where the server refuses (BLOOM, whose attention is its own), as /api/models says why


@pytest.fixture(scope="module")
def bridge_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("knock-bridge")
    folders = [make_tiny_starcoder2(root / "tiny-starcoder2"), make_tiny_bloom(root / "tiny-bloom")]
    settings = Settings(device="cpu", builtin_model=False, models=":".join(str(f) for f in folders))
    with served(create_app(settings)) as url:
        yield url


def test_knock_a_head_out_of_a_model_served_through_transformers(page, bridge_server):
    def bridged_trace(model: str, ablate: list | None) -> dict:
        body = {"model": model, "text": TEXT, **({"ablate": ablate} if ablate else {})}
        r = httpx.post(f"{bridge_server}/api/trace", params={"fields": "top_k", "k": 1},
                       json=body, timeout=60)  # fmt: skip
        assert r.status_code == 200, r.text
        return r.json()

    open_sentence(page, bridge_server + "/", TEXT)
    assert page.locator("#s-model").input_value() == "tiny-starcoder2"
    assert page.locator("#mv-knock").is_enabled()
    page.check("#mv-knock")
    before = int(page.evaluate("document.documentElement.dataset.traces || '0'"))
    cell(page, 0, 1).click()
    wait_for_trace(page, before)
    page.locator("#ko-view .ko-table").wait_for()
    assert page.locator("#ko-heads button.ko-chip").all_text_contents() == [CHIP]
    knocked = bridged_trace("tiny-starcoder2", [{"layer": 0, "head": 1, "mode": "zero"}])
    clean = bridged_trace("tiny-starcoder2", None)
    assert knocked["backend"] == "transformers"
    rows = page.locator("#ko-view .ko-table tbody tr")
    assert rows.count() == knocked["n"] - 1
    moved = 0
    for i in range(knocked["n"] - 1):
        lc = -math.log(f32(clean["top_k"]["target_probs"][i]))
        lk = -math.log(f32(knocked["top_k"]["target_probs"][i]))
        moved += lc != lk
        assert rows.nth(i).locator(".ko-loss-clean").text_content() == readable_prose(lc)
        assert rows.nth(i).locator(".ko-loss-knocked").text_content() == readable_prose(lk)
    assert moved  # the knock-out changed the model's predictions

    # BLOOM: the switch is off and the card gives the server's reason.
    models = httpx.get(f"{bridge_server}/api/models", timeout=30).json()["models"]
    why = {m["name"]: m["ablate_refused"] for m in models}
    assert why["tiny-starcoder2"] is None and "AttentionInterface" in why["tiny-bloom"]
    select_and_wait(page, "#s-model", "tiny-bloom")
    assert page.locator("#mv-knock").is_disabled()
    assert page.locator("#ko-note").text_content() == f"No knock-out here: {why['tiny-bloom']}."


def traced(page, action) -> None:
    """Do something that asks for a new trace, and wait until it is drawn."""
    before = int(page.evaluate("document.documentElement.dataset.traces || '0'"))
    action()
    wait_for_trace(page, before)


def test_a_knock_out_compares_only_what_can_change(page, live_server, api):
    """Issue 41, 3: a head's attention is computed from what comes into its layer, so only the
    layers after the first one knocked out are offered for the difference map; a head of the
    last layer changes no attention map, and the card says so and shows what it does change,
    each token's output (its last hidden state), from the API's numbers of both runs."""
    model = "all-MiniLM-L6-v2"  # the default model: an encoder with no predictions, 6 layers
    open_sentence(page, live_server + "/", TEXT)
    select_and_wait(page, "#s-model", model)
    page.check("#mv-knock")
    traced(page, lambda: cell(page, 0, 0).click())
    page.locator("#ko-view .ko-summary").wait_for()
    options = page.locator("#ko-diff-layer option").all_text_contents()
    assert options == [f"layer {n}" for n in range(2, 7)]  # not layer 1: it cannot change
    # Layer 1's head back, layer 6's out: no later layer, so no map and no layer to pick.
    traced(page, lambda: cell(page, 5, 11).click())
    traced(page, lambda: page.locator('#ko-heads button.ko-chip[data-layer="0"]').click())
    page.wait_for_function("() => document.querySelector('#ko-view .ko-no-diff') !== null")
    assert page.locator("#ko-diff-layer-box").is_hidden()
    assert page.locator("#ko-view canvas.ko-canvas").count() == 0
    assert (
        page.locator("#ko-view .ko-no-diff")
        .text_content()
        .startswith(
            "Layer 6 is the model's last: a head's attention is computed from what comes into its "
            "layer, so knocking out a head there changes no attention map"
        )
    )
    # What it changes: each token's output, |h' - h| / |h| of the last hidden states.
    body = {"model": model, "text": TEXT}
    ablate = [{"layer": 5, "head": 11, "mode": "zero"}]
    hs = {}
    for name, extra in (("clean", {}), ("knocked", {"ablate": ablate})):
        r = api.post("/api/trace", params={"fields": "hidden_states"}, json={**body, **extra})
        assert r.status_code == 200, r.text
        hs[name] = [[f32(x) for x in row] for row in r.json()["hidden_states"][-1]]
    want = []
    for c, k in zip(hs["clean"], hs["knocked"], strict=True):
        diff = math.sqrt(sum((b - a) ** 2 for a, b in zip(c, k, strict=True)))
        want.append(diff / math.sqrt(sum(a * a for a in c)))
    page.locator("#ko-view .ko-moved > summary").click()
    cells = page.locator("#ko-view .ko-moved tbody td.num")
    got = cells.evaluate_all("cs => cs.map((c) => +c.dataset.value)")
    assert got == pytest.approx(want, rel=1e-6, abs=1e-9)
    # A list read as prose: each share as the summary's sentence says it (readablePercent), the
    # exact share kept in the row's data.
    assert cells.all_text_contents() == [readable_percent(v) for v in got]
    assert max(want) > 0
    at = want.index(max(want))
    tokens = api.post("/api/trace", params={"fields": "attentions", "layer": 0, "head": 0},
                      json=body).json()["tokens"]  # fmt: skip
    summary = page.locator("#ko-view .ko-summary").text_content()
    moved = readable_percent(got[at])  # the API's share, as a whole percentage
    assert f"The output moved most at “{tokens[at]}”: by {moved} of its length." in summary
    SHOTS.mkdir(exist_ok=True)
    snap(page.locator("#knock-card"), path=str(SHOTS / "knock-last-layer-1280.png"))
