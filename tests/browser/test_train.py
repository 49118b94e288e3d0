"""Train mode in the browser: the induction task (its run watched forming where Learn step 12
trains it: ``watch_the_head_form``), an ablation preset's variants side by side, the reverser's
cross-attention, a cancelled run, the runs listed after a reload, and asking a model."""

from __future__ import annotations

import base64
import re

import torch

from tests.browser.helpers import fresh_page, screenshot, slide, traces_drawn, wait_for_trace
from tests.support.oracles import readable

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
    run_id = page.locator("#t-run-card").get_attribute("data-run")
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


def test_the_train_tab_opens_on_the_induction_task_and_says_what_it_shows(page, live_server):
    """The tab's first task is the induction task, said in words; its run, trained in the page,
    is watched forming (``watch_the_head_form``) where Learn step 12 trains it for step 13
    (test_circuit.py): the suite trains that run once."""
    open_train(page, live_server)
    assert page.locator("#t-task").input_value() == "induction"
    assert "induction head" in page.locator("#t-about").inner_text()


def watch_the_head_form(page, api, run: dict) -> None:
    """On the induction run in view, trained in the page (the Train tab's form at seed 0): the
    loss plot is the run's losses; its best head, as it measured it on held-out strings, is in
    layer 2; that head's heatmap is the API's snapshot at each checkpoint and shows the
    induction stripe at the last and none at step 0; Play runs through the checkpoints; the
    trained model opens in sentence mode on the probe."""
    assert run["state"] == "done", run["reason"]
    v = run["variants"][0]
    assert "done" in page.locator("#t-rate").inner_text()
    # The loss plot is the run's losses, every step.
    loss = page.evaluate("() => document.getElementById('t-loss').data")
    assert loss[0]["x"] == v["history"]["step"] and loss[0]["y"] == v["history"]["loss"]
    assert loss[1]["y"] == [c["heldout"] for c in v["checkpoints"]]

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
    scrub(page, last)
    labels, matrix = heat(page)
    assert labels == run["probe"]["tokens"]
    assert torch.equal(matrix, snapshot(v["checkpoints"][last], layer, head))
    final = stripe(matrix, n)
    assert final >= 0.5, final
    screenshot(page, "train-induction.png")

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
    names = models.locator(".t-model-name")
    assert names.evaluate_all("ns => ns.map((n) => n.dataset.model)") == [
        v["model"] for v in run["variants"]
    ]
    # Each named by what it is, never by an id (issue 41).
    # A preset by its title, as the presets list gives it, never its id.
    assert run["title"] == f"{preset['title']} (induction, 2 models)"
    assert run["preset"] not in run["title"]
    for i, v in enumerate(run["variants"]):
        assert names.nth(i).inner_text().startswith(f"{run['title']}, ")
        assert names.nth(i).inner_text().endswith(f", {v['label']}")
        assert run["id"] not in names.nth(i).inner_text()
    # The card's list of this server's runs names it so too: the title, no id (issue 41).
    listed = page.locator(f"#t-runs li[data-run='{run['id']}']")
    listed.wait_for()
    assert listed.inner_text().startswith(f"{run['title']}, ")
    assert run["preset"] not in listed.inner_text() and run["id"] not in listed.inner_text()
    # The preset's claims, measured on these very models, are listed with what they measured.
    claims = page.locator("#t-claims li")
    assert claims.count() == len(preset["claims"]) == len(run["claims"])
    for i, c in enumerate(run["claims"]):
        assert c["holds"], c
        assert claims.nth(i).inner_text() == f"✓ {c['says']}"
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


SMALL = {"#t-layers": "1", "#t-heads": "2", "#t-d-model": "16"}


def small_form(page, steps: int, **more: str) -> None:
    """A model small enough to train in a moment on two cores, for `steps` steps."""
    for selector, value in {**SMALL, **more}.items():
        page.select_option(selector, value)
    page.fill("#t-steps", str(steps))
    page.fill("#t-batch", "8")


def train_and_wait(page, api) -> dict:
    page.click("#t-start")
    page.wait_for_function("() => document.getElementById('train-mode').dataset.run === 'running'")
    page.wait_for_function(RUN_OVER, timeout=180_000)
    return run_of(api, page)


def test_a_cancelled_run_shows_the_checkpoints_it_has_and_the_slider_spans_those(
    page, live_server, api
):
    open_train(page, live_server)
    small_form(page, 5000)
    page.click("#t-start")
    page.wait_for_function("() => document.getElementById('train-mode').dataset.run === 'running'")
    run_id = page.locator("#t-run-card").get_attribute("data-run")
    # A few checkpoints in (0, 12, 50: square-spaced over 5,000 steps), then Cancel.
    deadline = 0
    while len(api.get(f"/api/train/{run_id}").json()["variants"][0]["checkpoints"]) < 3:
        deadline += 1
        assert deadline < 600, "the run took no checkpoints"
        page.wait_for_timeout(100)
    page.click("#t-cancel")
    page.wait_for_function(RUN_OVER, timeout=60_000)
    run = run_of(api, page)
    assert run["state"] == "cancelled"
    v = run["variants"][0]
    steps = [c["step"] for c in v["checkpoints"]]
    last = v["history"]["step"][-1]
    # The scheduled checkpoints it reached, and one where it stopped (which may be one of them).
    assert steps == sorted({s for s in run["checkpoint_steps"] if s < last} | {last})
    assert len(steps) < len(run["checkpoint_steps"])

    # The slider runs over the checkpoints the run has, and stands at the last.
    slider = page.locator("#t-checkpoint")
    assert slider.get_attribute("max") == str(len(steps) - 1)
    assert slider.input_value() == str(len(steps) - 1)
    held = readable(v["checkpoints"][-1]["heldout"])
    assert page.locator("#t-checkpoint-out").inner_text() == f"step {last} · held-out {held}"
    assert page.locator("#t-grids .t-variant-label").inner_text() == (
        f"model · step {last} · held-out {held}"
    )
    assert page.locator("#t-grids button.mv-cell").count() == 2  # 1 layer x 2 heads, drawn
    title = page.locator("#t-large .hc-title").inner_text()
    assert title.endswith(f"at step {last}"), title
    assert "undefined" not in page.locator("#t-heads-card").inner_text()
    assert page.locator("#t-rate").inner_text() == f"cancelled · {last:,} steps, held-out {held}"
    screenshot(page, "train-cancelled.png")

    # Each step of the slider is one of the run's checkpoints, by keyboard too.
    slider.focus()
    page.keyboard.press("Home")
    page.wait_for_function(
        "() => document.getElementById('t-checkpoint-out').textContent.startsWith('step 0 ')"
    )
    for i, step in enumerate(steps[1:], start=1):
        page.keyboard.press("ArrowRight")
        page.wait_for_function(
            "s => document.getElementById('t-checkpoint-out').textContent.startsWith(`step ${s} `)",
            arg=step,
        )
        _, matrix = heat(page)
        assert torch.equal(matrix, snapshot(v["checkpoints"][i], 0, 0)), step


def test_runs_are_listed_after_a_reload_and_a_copied_link_opens_the_run(
    page, live_server, api, browser, console
):
    open_train(page, live_server)
    small_form(page, 24, **{"#t-positional": "learned"})
    page.fill("#t-seed", "7")
    run = train_and_wait(page, api)
    assert run["state"] == "done"

    # A page opened on the Train tab lists the server's runs, with their state, to open.
    page.goto(live_server + "/#train")
    page.reload()
    open_train(page, live_server)
    page.wait_for_selector(f'#t-runs li[data-run="{run["id"]}"]')
    item = page.locator(f'#t-runs li[data-run="{run["id"]}"]')
    assert (
        f"induction · done · 24 / 24 steps, held-out {readable(run['variants'][0]['checkpoints'][-1]['heldout'])}"
        in item.inner_text()
    )
    assert page.locator("#t-models .t-model").count() == 0  # nothing open yet
    assert item.locator(".t-model-name").inner_text().startswith(f"{run['title']}, ")
    item.get_by_role("button", name=re.compile(rf"^Open: {re.escape(run['title'])}, ")).click()
    page.wait_for_function(
        "id => document.getElementById('t-run-card').dataset.run === id", arg=run["id"]
    )
    page.wait_for_function(RUN_OVER)
    assert page.locator("#t-run-id").inner_text().startswith(f"{run['title']}, ")
    assert page.locator("#t-models .t-model-name").get_attribute("data-model") == run["id"]
    assert page.locator("#t-steps").input_value() == "24"  # the run's settings, in the form

    # Copy link: the run and the form's settings.
    page.click("#copy-link")
    page.wait_for_function("() => document.getElementById('status').textContent.includes('cop')")
    link = page.evaluate("() => location.href")
    assert link.startswith(f"{live_server}/#train/{run['id']}?task=induction&"), link
    for part in ("layers=1", "heads=2", "d_model=16", "positional=learned", "steps=24",
                 "batch=8", "seed=7"):  # fmt: skip
        assert part in link, part

    # The link, opened by someone else, shows that run with those settings.
    with fresh_page(browser) as (other, errors):
        other.goto(link)
        other.wait_for_function(
            "id => document.getElementById('t-run-card').dataset.run === id"
            " && document.getElementById('train-mode').dataset.run === 'done'"
            " && document.documentElement.dataset.pending === '0'",
            arg=run["id"],
        )
        assert other.evaluate("() => document.documentElement.dataset.mode") == "train"
        assert other.locator("#t-positional").input_value() == "learned"
        assert other.locator("#t-seed").input_value() == "7"
        assert other.locator("#t-grids button.mv-cell").count() == 2
        assert other.locator("#error").is_hidden()
        assert errors == []

    # A link to a run this server no longer has says so, and keeps the link's settings.
    console.allow(r"status of 404")
    page.goto("about:blank")
    page.goto(f"{live_server}/#train/gone0000?task=reverse&layers=1&steps=77&lr=0.01")
    page.wait_for_function("() => !document.getElementById('error').hidden")
    message = page.locator("#error").inner_text()
    assert "This link's run is no longer on this server" in message, message
    assert "gone0000" not in message  # never an id (issue 41)
    assert "press Start training to train it again" in message
    assert page.locator("#t-task").input_value() == "reverse"
    assert page.locator("#t-steps").input_value() == "77"
    assert page.locator("#t-lr").input_value() == "0.01"
    assert page.locator("#t-run-id").inner_text() == ""


def test_ask_the_model_says_what_it_reads_and_why_it_will_not_write(
    page, live_server, api, console
):
    console.allow(r"status of 422 .*/decode")  # the refusal, which the page then says
    open_train(page, live_server)
    page.select_option("#t-task", "reverse")
    small_form(page, 15)
    run = train_and_wait(page, api)
    ask = run["ask"]
    assert ask == {"alphabet": "abcdefghijklmnopqrstuvwxyz", "max_len": 12, "min_len": 4}

    # Beside the box: the letters and how many, from the run.
    assert page.locator("#t-try-rule").inner_text() == (
        f"a to z, 1 to {ask['max_len']} of them (it trained on {ask['min_len']} to "
        f"{ask['max_len']})"
    )
    # Capitals: the page says why, in its own words, by the box (no browser bubble).
    box = page.locator("#t-try-text")
    box.fill("ABC")
    box.press("Enter")
    say = page.locator("#t-try-say")
    say.wait_for(state="visible")
    assert say.inner_text() == (
        "The model was not asked: source: the model has no token for 'A', 'B', 'C'; it reads "
        "only lowercase letters a to z"
    )
    assert box.get_attribute("aria-invalid") == "true"
    assert "t-try-say" in (box.get_attribute("aria-describedby") or "")
    assert page.locator("#t-try-view figure").is_hidden()
    screenshot(page, "train-ask-refused.png")
    # Letters it reads: it writes, and the message goes.
    box.fill("abcd")
    box.press("Enter")
    page.wait_for_function(
        "() => !document.querySelector('#t-try-view figure').hidden"
        " && document.documentElement.dataset.pending === '0'"
    )
    assert say.is_hidden() and box.get_attribute("aria-invalid") == "false"

    # Where the buttons of a model would be, why an encoder-decoder has none.
    row = page.locator("#t-models .t-model")
    assert row.locator("button, a").count() == 0
    why = row.locator(".t-model-why").inner_text()
    assert why.startswith("Not opened in sentence mode nor saved as a folder: ")


def test_an_ablation_shows_each_variants_steps_and_loss_side_by_side(page, live_server, api):
    open_train(page, live_server)
    small_form(page, 20)
    page.select_option("#t-compare", "scale")
    run = train_and_wait(page, api)
    assert run["state"] == "done" and len(run["variants"]) == 2

    # Each variant's own steps and held-out loss, not their sum and one variant's loss.
    figures = [
        f"{v['label']}: 20 steps, held-out {readable(v['checkpoints'][-1]['heldout'])}"
        for v in run["variants"]
    ]
    assert page.locator("#t-rate").inner_text() == "done · " + " · ".join(figures)
    rows = page.locator("#t-models .t-model")
    for i, v in enumerate(run["variants"]):
        text = rows.nth(i).inner_text()
        assert f"20 steps, held-out {readable(v['checkpoints'][-1]['heldout'])}" in text, text

    # Side by side at 1280 px: the two grids share a row.
    boxes = [page.locator("#t-grids .t-variant").nth(i).bounding_box() for i in range(2)]
    assert boxes[0]["y"] == boxes[1]["y"] and boxes[1]["x"] >= boxes[0]["x"] + boxes[0]["width"]
    screenshot(page, "train-compare.png")
