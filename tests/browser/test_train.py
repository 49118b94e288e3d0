"""Train mode in the browser: train the induction task, watch the checkpoints, scrub back to
before the induction head formed, play, and open the trained model in sentence mode."""

from __future__ import annotations

import base64

import torch

from tests.browser.helpers import screenshot, slide, traces_drawn, wait_for_trace

RUN_OVER = (
    "() => ['done', 'cancelled', 'failed'].includes("
    "document.getElementById('train-mode').dataset.run)"
    " && document.documentElement.dataset.pending === '0'"
)


def open_train(page, url: str) -> None:
    page.goto(url + "/#train")
    page.wait_for_function(
        "() => document.documentElement.dataset.mode === 'train'"
        " && document.documentElement.dataset.pending === '0'"
        " && document.getElementById('t-task').options.length > 0"
    )


def run_of(api, page) -> dict:
    run_id = page.locator("#t-run-id").inner_text()
    r = api.get(f"/api/train/{run_id}")
    assert r.status_code == 200
    return r.json()


def snapshot(cp: dict, layer: int, head: int, kind: str = "thumbs") -> torch.Tensor:
    """A checkpoint's 8-bit snapshot of one head, as the page decodes it (float32)."""
    t = cp[kind]
    values = torch.frombuffer(bytearray(base64.b64decode(t["values"])), dtype=torch.uint8)
    values = values.view(*t["shape"])[layer, head].double()
    # As the page: the scale as float32 (a Float32Array), the product in float64, kept as float32.
    scale = float(torch.tensor(t["scale"][layer][head], dtype=torch.float32))
    return (values * (scale / 255)).float()


def heat(page, where: str = "#t-large") -> tuple[list[str], torch.Tensor]:
    drawn = page.evaluate(
        "w => { const h = document.querySelector(`${w} .hc`).__heat;"
        " return {labels: h.labels, rows: h.rowLabels, data: Array.from(h.matrix.data),"
        " shape: h.matrix.shape}; }",
        where,
    )
    matrix = torch.tensor(drawn["data"], dtype=torch.float32).view(*drawn["shape"])
    return drawn["labels"], matrix


def stripe(matrix: torch.Tensor, n: int) -> float:
    """Mean weight from each query of the repeat to the token after its earlier occurrence."""
    queries = torch.arange(n, 2 * n - 1)
    return float(matrix[queries, queries - n + 1].mean())


def scrub(page, index: int) -> None:
    slide(page, "#t-checkpoint", index)


def test_train_induction_watch_the_head_form_and_open_the_model(page, live_server, api):
    open_train(page, live_server)
    assert page.locator("#t-task").input_value() == "induction"
    assert "induction head" in page.locator("#t-about").inner_text()
    page.click("#t-start")
    page.wait_for_function("() => document.getElementById('train-mode').dataset.run === 'running'")
    page.wait_for_function(RUN_OVER, timeout=180_000)
    run = run_of(api, page)
    assert run["state"] == "done", run["reason"]
    v = run["variants"][0]
    screenshot(page, "train-induction.png")

    # The loss plot is the run's losses, every step.
    loss = page.evaluate("() => document.getElementById('t-loss').data")
    assert loss[0]["x"] == v["history"]["step"] and loss[0]["y"] == v["history"]["loss"]
    assert loss[1]["y"] == [c["heldout"] for c in v["checkpoints"]]
    assert "done" in page.locator("#t-rate").inner_text()

    # The best induction head, as the run measured it on held-out strings.
    scores = torch.tensor(v["induction"])
    layer, head = divmod(int(scores.argmax()), scores.shape[1])
    assert layer == 1 and float(scores.max()) >= 0.6, scores
    page.click(f'#t-grids button.mv-cell[data-layer="{layer}"][data-head="{head}"]')
    page.wait_for_function(
        "([l, h]) => document.querySelector('#t-large .hc-title')?.textContent"
        ".startsWith(`layer ${l + 1}, head ${h + 1}`)",
        arg=[layer, head],
    )
    n = (len(run["probe"]["tokens"]) + 1) // 2

    # The last checkpoint: the chosen head's heatmap is the snapshot the API has, and shows
    # the induction stripe.
    last = len(run["checkpoint_steps"]) - 1
    labels, matrix = heat(page)
    assert labels == run["probe"]["tokens"]
    assert torch.equal(matrix, snapshot(v["checkpoints"][last], layer, head))
    final = stripe(matrix, n)
    assert final >= 0.5, final

    # Scrubbed back to the start, the same head has no such stripe.
    scrub(page, 0)
    assert "step 0" in page.locator("#t-checkpoint-out").inner_text()
    _, matrix = heat(page)
    assert torch.equal(matrix, snapshot(v["checkpoints"][0], layer, head))
    assert stripe(matrix, n) < 0.25 < final
    screenshot(page, "train-step0.png")

    # Play runs through the checkpoints to the last.
    page.click("#t-play")
    page.wait_for_function(
        "last => +document.getElementById('t-checkpoint').value === last"
        " && document.getElementById('t-play').getAttribute('aria-pressed') === 'false'",
        arg=last,
        timeout=60_000,
    )

    # The trained model, in sentence mode, on the probe.
    drawn = traces_drawn(page)
    page.click("#t-models button")
    wait_for_trace(page, drawn)
    assert page.evaluate("() => document.documentElement.dataset.mode") == "sentence"
    assert page.locator("#s-model").input_value() == run["id"]
    assert page.locator("#s-text").input_value() == run["probe"]["text"]
    screenshot(page, "train-sentence.png")


def test_an_ablation_preset_trains_its_variants_side_by_side(page, live_server, api):
    options = api.get("/api/train/options").json()
    preset = next(p for p in options["presets"] if p["id"] == "scale-large-heads")
    open_train(page, live_server)
    page.select_option("#t-preset", preset["id"])
    assert preset["shows"] in page.locator("#t-preset-about").inner_text()
    assert page.locator("#t-compare-row").is_hidden()
    assert page.locator("#t-steps").is_disabled()  # the preset sets the optimiser
    assert page.locator("#t-steps").input_value() == str(preset["opt"]["steps"])
    page.click("#t-start")
    page.wait_for_function("() => document.getElementById('train-mode').dataset.run === 'running'")
    page.wait_for_function(RUN_OVER, timeout=180_000)
    run = run_of(api, page)
    assert run["state"] == "done" and run["preset"] == preset["id"]
    labels = [v["label"] for v in preset["variants"]]
    assert [v["label"] for v in run["variants"]] == labels

    # One loss curve per variant, overlaid, with its held-out dots; a grid of heads each.
    loss = page.evaluate("() => document.getElementById('t-loss').data")
    lines = [t for t in loss if t["mode"] == "lines"]
    assert [t["name"] for t in lines] == labels
    for line, v in zip(lines, run["variants"], strict=True):
        assert line["y"] == v["history"]["loss"]
    grids = page.locator("#t-grids .t-variant")
    assert grids.count() == 2
    for i, label in enumerate(labels):
        assert grids.nth(i).locator(".t-variant-label").inner_text().startswith(label)
        assert grids.nth(i).locator("button.mv-cell").count() == 2  # 2 layers x 1 head
    # The preset's claim, on the page's numbers: unscaled, the loss stays near chance.
    unscaled = run["variants"][1]["history"]["loss"][-20:]
    assert sum(unscaled) / 20 >= 3.1
    # Each model is listed, to open or download.
    models = page.locator("#t-models .t-model")
    assert models.count() == 2
    assert [models.nth(i).locator(".t-model-name").inner_text() for i in range(2)] == [
        v["model"] for v in run["variants"]
    ]
    # The preset's claims, measured on these very models, are listed with what they measured.
    claims = page.locator("#t-claims li")
    assert claims.count() == len(preset["claims"]) == len(run["claims"])
    for i, c in enumerate(run["claims"]):
        assert c["holds"], c
        assert claims.nth(i).inner_text().startswith(f"✓ {c['claim']}")
    screenshot(page, "train-preset.png")


def test_train_the_reverser_watch_cross_attention_align_and_ask_it(page, live_server, api):
    open_train(page, live_server)
    page.select_option("#t-task", "reverse")
    assert "cross-attention" in page.locator("#t-about").inner_text()
    assert page.locator("#t-layers").input_value() == "1"  # the task's own defaults
    page.click("#t-start")
    page.wait_for_function("() => document.getElementById('train-mode').dataset.run === 'running'")
    page.wait_for_function(RUN_OVER, timeout=180_000)
    run = run_of(api, page)
    assert run["state"] == "done", run["reason"]
    v, probe = run["variants"][0], run["probe"]
    screenshot(page, "train-reverse.png")

    # The cross-attention is shown first: rows are what the decoder writes, columns the source.
    assert page.locator("#t-attention").input_value() == "cross"
    scores = torch.tensor(v["alignment"])
    layer, head = divmod(int(scores.argmax()), scores.shape[1])
    assert float(scores.max()) >= 0.7, scores
    page.click(f'#t-grids button.mv-cell[data-layer="{layer}"][data-head="{head}"]')
    page.wait_for_function(
        "h => document.querySelector('#t-large .hc-title')?.textContent"
        ".startsWith(`cross-attention, layer 1, head ${h + 1}`)",
        arg=head,
    )
    labels, matrix = heat(page)
    rows = page.evaluate("() => document.querySelector('#t-large .hc').__heat.rowLabels")
    assert labels == probe["source"] and rows == probe["writes"]
    last = run["variants"][0]["checkpoints"][-1]
    assert torch.equal(matrix, snapshot(last, layer, head, "cross"))
    assert "the model reverses pathfinder as rednifhtap" in page.locator("#t-sample").inner_text()

    # The encoder's attention is a choice away, over the source both ways.
    page.select_option("#t-attention", "encoder")
    page.wait_for_function(
        "() => document.querySelector('#t-large .hc-title')?.textContent"
        ".includes('encoder self-attention')"
    )
    labels, matrix = heat(page)
    assert labels == probe["source"]
    assert torch.equal(matrix, snapshot(last, layer, head, "encoder"))

    # No sentence mode for it: it is asked here, and answers with exact weights.
    assert page.locator("#t-models button").is_hidden()
    page.select_option("#t-attention", "cross")
    page.fill("#t-try-text", "zebra")
    page.click("#t-try-go")
    page.wait_for_function(
        "() => !document.querySelector('#t-try-view figure').hidden"
        " && document.documentElement.dataset.pending === '0'"
    )
    asked = api.post(f"/api/train/{run['id']}/decode", json={"source": "zebra"}).json()
    out = page.locator("#t-try-view .t-try-out").inner_text()
    assert out.startswith(f"zebra → {asked['output']}")
    assert ("✓" in out) == (asked["output"] == "arbez")
    labels, matrix = heat(page, "#t-try-view .t-try-heat")
    assert labels == asked["source"]
    assert matrix.tolist() == torch.tensor(asked["cross"][layer][head]).tolist()
    screenshot(page, "train-reverse-ask.png")
