"""Nothing on any page offers to send data off the machine: every mode of the live page (Learn,
Toy lab, Sentence with its 3-D trajectories, Train with a small trained run) and every kind of
exported file (a text trace's, the toy lab's, a trained run's, opened from file://).

Each Plotly toolbar (the modebar) is read as drawn: every button and anything else clickable in
it must be one of the known on-machine actions below, so that a Plotly release that adds a button
(its "Share chart...", which uploads the chart to Plotly Cloud, was one) fails this test until it
is looked at. No link, form or frame in the page points to another origin, no text or tooltip
names Plotly's cloud, and each modebar still offers the PNG download, which downloads a PNG.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page

import attnviz
from tests.browser.helpers import MODEL, open_app, open_sentence, wait_for_views
from tests.browser.test_train import open_train, small_form, train_and_wait
from tests.python.offline import opened, wait_drawn
from tests.support.waits import until

pytestmark = pytest.mark.more_views  # sentence mode with every card open (conftest)

ROOT = Path(__file__).resolve().parents[2]
PNG = "Download plot as a PNG"

# The modebar buttons that act on the chart in this page and nowhere else, as plotly.js draws
# them: (data-title, data-attr, data-val); None where the button has no such attribute.
ON_MACHINE = {
    (PNG, None, None),
    ("Zoom", "dragmode", "zoom"),
    ("Pan", "dragmode", "pan"),
    ("Zoom in", "zoom", "in"),
    ("Zoom out", "zoom", "out"),
    ("Autoscale", "zoom", "auto"),
    ("Reset axes", "zoom", "reset"),
    ("Toggle Spike Lines", "_cartesianSpikesEnabled", "on"),
    ("Show closest data on hover", "hovermode", "closest"),
    ("Compare data on hover", "hovermode", "x"),
    ("Compare data on hover", "hovermode", "y"),
    ("Toggle show closest data on hover", "hovermode", None),
    ("Zoom", "scene.dragmode", "zoom"),
    ("Pan", "scene.dragmode", "pan"),
    ("Orbital rotation", "scene.dragmode", "orbit"),
    ("Turntable rotation", "scene.dragmode", "turntable"),
    ("Reset camera to default", "resetDefault", None),
    ("Reset camera to last save", "resetLastSave", None),
    ("Reset views", None, None),
}

# Names of off-machine services, anywhere a reader could see them (text, tooltips, labels).
CLOUD = re.compile(r"plotly cloud|chart studio|plot\.ly|plotly\.com", re.IGNORECASE)

READ = """(png) => {
  const attrs = (e) => ({
    tag: e.tagName.toLowerCase(), cls: e.getAttribute('class') || '',
    title: e.getAttribute('data-title'), attr: e.getAttribute('data-attr'),
    val: e.getAttribute('data-val'), href: e.getAttribute('href'),
    label: e.getAttribute('aria-label') || e.textContent.trim()});
  const plots = [...document.querySelectorAll('.js-plotly-plot')].filter((p) => p.querySelector('.main-svg'));
  const clickable = '.modebar-btn, a, button, input, select, textarea, [href], [role], [tabindex], [onclick]';
  const bars = [...document.querySelectorAll('.modebar')];
  const buttons = [...new Set(bars.flatMap((b) => [...b.querySelectorAll(clickable)]))].map(attrs);
  // Where each link, form or frame goes (an SVG <a> too, by href or xlink:href), resolved.
  const target = (e) => e.getAttribute('href') ?? e.getAttributeNS('http://www.w3.org/1999/xlink', 'href')
    ?? e.getAttribute('action') ?? e.getAttribute('src') ?? e.getAttribute('formaction');
  const resolved = (raw) => { try { return new URL(raw, document.baseURI).href; } catch { return raw; } };
  const links = [...document.querySelectorAll('a, area, form[action], iframe[src], [formaction]')]
    .filter((e) => target(e) !== null)
    .map((e) => ({tag: e.tagName.toLowerCase(), raw: target(e), url: resolved(target(e))}));
  const tips = [...document.querySelectorAll('[title], [aria-label], [data-title], [placeholder]')]
    .flatMap((e) => ['title', 'aria-label', 'data-title', 'placeholder'].map((a) => e.getAttribute(a) || ''));
  return {origin: location.origin, protocol: location.protocol, plots: plots.length,
    withBar: plots.filter((p) => p.querySelector('.modebar')).length,
    pngs: plots.filter((p) => [...p.querySelectorAll('.modebar-btn')].some((b) => b.dataset.title === png)).length,
    buttons, links, text: document.body.innerText, tips,
    dialogs: document.querySelectorAll('.plotly-cloud-dialog, [class*="cloud-dialog"]').length};
}"""


def off_machine(page: Page, where: str) -> list[str]:
    """Everything in the page as it is now that offers to leave the machine, one line each."""
    seen = page.evaluate(READ, PNG)
    found: list[str] = []
    assert seen["plots"] > 0, f"{where}: no plot drawn"
    if seen["withBar"] != seen["plots"] or seen["pngs"] != seen["plots"]:
        found.append(
            f"{where}: {seen['plots']} plots, {seen['withBar']} with a modebar, "
            f"{seen['pngs']} with its PNG download"
        )
    for b in seen["buttons"]:
        key = (b["title"], b["attr"], b["val"])
        if key not in ON_MACHINE or b["tag"] != "button" or "modebar-btn" not in b["cls"].split():
            found.append(f"{where}: modebar control not known to stay on this machine: {b}")
        if b["href"] is not None:
            found.append(f"{where}: modebar link {b['href']!r}")
    for link in seen["links"]:
        url = link["url"] or ""
        local = (
            (link["raw"] or "").startswith("#")
            or url.startswith(("data:", "blob:"))
            or (seen["protocol"] == "file:" and url.startswith("file:"))
            or (seen["protocol"] != "file:" and url.startswith(seen["origin"] + "/"))
        )
        if not local:
            found.append(f"{where}: {link['tag']} to {(url or link['raw'])!r}")
    for text in [seen["text"], *seen["tips"]]:
        for m in CLOUD.finditer(text):
            found.append(f"{where}: says {text[max(0, m.start() - 40) : m.end() + 40]!r}")
    if seen["dialogs"]:
        found.append(f"{where}: a cloud dialog is open")
    return found


def png_downloads(page: Page) -> str:
    """Click the first plot's modebar PNG button (as a visitor would: hover, then click); the
    downloaded file's suggested name, once its bytes are a PNG."""
    plot = page.locator(".js-plotly-plot:has(.modebar):visible").first
    plot.scroll_into_view_if_needed()
    plot.hover()
    with page.expect_download() as download:
        plot.locator(f'.modebar-btn[data-title="{PNG}"]').click()
    path = download.value.path()
    assert path is not None and Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return download.value.suggested_filename


def nothing_leaves(page: Page, where: str) -> None:
    found = off_machine(page, where)
    assert not found, "\n".join(found)


def press_every_button(page: Page) -> list[str]:
    """Press each of the first visible plot's modebar buttons but the PNG one (zoom, pan,
    autoscale, hover modes...); the pages they opened (a popup, a new tab), which should be none."""
    popups: list[str] = []

    def opened(p: Page) -> None:
        popups.append(p.url)

    page.context.on("page", opened)
    try:
        plot = page.locator(".js-plotly-plot:has(.modebar):visible").first
        buttons = plot.locator(f'.modebar-btn:not([data-title="{PNG}"])')
        for i in range(buttons.count()):
            plot.hover()
            buttons.nth(i).click()
        page.wait_for_timeout(200)  # a popup or a dialog would be open by now
    finally:
        page.context.remove_listener("page", opened)
    return popups


def check(page: Page, where: str) -> None:
    nothing_leaves(page, where)
    assert png_downloads(page).endswith(".png")
    assert press_every_button(page) == []
    nothing_leaves(page, where + ", after pressing every modebar button")


# ---- The live page ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_run(api) -> dict:
    """A small induction run trained to its end (seconds), as the server reports it: the
    exported run's."""
    r = api.post(
        "/api/train",
        json={"arch": {"layers": 1, "heads": 2, "d_model": 16},
              "opt": {"steps": 24, "batch": 8, "seed": 0}},
    )  # fmt: skip
    assert r.status_code == 202, r.text
    run_id = r.json()["id"]
    run = until(lambda: api.get(f"/api/train/{run_id}").json(),
                lambda run: run["state"] in ("done", "cancelled", "failed"), "the run's end",
                every=0.2)  # fmt: skip
    assert run["state"] == "done", run.get("reason")
    return run


def test_learn_offers_nothing_that_leaves_the_machine(page, live_server, api):
    steps = api.get("/api/learn").json()["steps"]
    n = next(s["n"] for s in steps if s["lab"] == "toy")
    page.goto(f"{live_server}/#learn/{n}")
    page.wait_for_function(
        "() => document.getElementById('learn-guide').dataset.ready === '1'"
        " && document.documentElement.dataset.pending === '0'"
        " && document.querySelector('.js-plotly-plot .modebar')"
    )
    assert page.evaluate("document.documentElement.dataset.mode") == "learn"
    check(page, f"Learn, step {n}")


def test_the_toy_lab_offers_nothing_that_leaves_the_machine(page, live_server):
    open_app(page, live_server + "/")
    check(page, "Toy lab")


def test_the_check_finds_what_would_leave_the_machine(page, live_server):
    """The check itself: a button Plotly might add, a link, a form and a frame to another
    host, and the cloud named in a tooltip, put into the toy lab, are each found."""
    open_app(page, live_server + "/")
    page.evaluate(
        """() => {
          const bar = document.querySelector('.modebar-group');
          bar.insertAdjacentHTML('beforeend',
            '<button type="button" class="modebar-btn" data-title="Share chart...">s</button>');
          document.body.insertAdjacentHTML('beforeend', '<a href="https://example.com/x">x</a>'
            + '<svg><a href="//example.com/y"><text>y</text></a></svg>'
            + '<form action="https://example.com/z"></form><iframe src="about:blank"></iframe>'
            + '<span title="Upload to Chart Studio">t</span>');
        }"""
    )
    found = "\n".join(off_machine(page, "planted"))
    for planted in ("'Share chart...'", "a to 'https://example.com/x'", "a to 'http://example.com/y'",
                    "form to 'https://example.com/z'", "iframe to 'about:blank'", "Chart Studio"):  # fmt: skip
        assert planted in found, planted


def test_sentence_mode_offers_nothing_that_leaves_the_machine(page, live_server):
    open_sentence(page, live_server + "/", "The cat sat on the mat")
    check(page, "Sentence")
    before = int(page.evaluate("+(document.documentElement.dataset.views || 0)"))
    page.check("#traj-3d")  # the 3-D plot has a modebar of its own
    wait_for_views(page, before)
    page.wait_for_selector("#traj-view .js-plotly-plot .modebar")
    nothing_leaves(page, "Sentence, 3-D trajectories")


def test_train_mode_offers_nothing_that_leaves_the_machine(page, live_server, api):
    open_train(page, live_server)
    small_form(page, 24)
    assert train_and_wait(page, api)["state"] == "done"
    page.wait_for_selector("#t-loss.js-plotly-plot .modebar")
    page.wait_for_selector("#t-grads.js-plotly-plot .modebar")
    check(page, "Train")


# ---- Exported files -----------------------------------------------------------------------


def check_file(browser, path: Path, where: str) -> None:
    with opened(browser, path) as (page, errors):
        if "run" in where:
            page.wait_for_function("document.documentElement.dataset.run === '1'")
        else:
            wait_drawn(page)
        page.wait_for_selector(".js-plotly-plot .modebar")
        check(page, where)
        assert errors == []


def test_a_text_traces_file_offers_nothing_that_leaves_the_machine(browser, tmp_path):
    trace = attnviz.trace(model=MODEL, text="The cat sat on the mat", fields="thumbs", thumb=1)
    check_file(browser, trace.save_html(tmp_path / "trace.html"), "a text trace's file")


def test_the_toy_labs_file_offers_nothing_that_leaves_the_machine(browser, tmp_path):
    trace = attnviz.trace(
        tokens=["a", "b", "c"],
        embeddings=[[1, 0, 0.5, 0], [0, 1, 0.25, 0], [0.2, 0.3, 1, 1]],
        config={"layers": 1, "heads": 2, "projections": "random", "seed": 3},
    )
    check_file(browser, trace.save_html(tmp_path / "toy.html"), "the toy lab's file")


def test_a_trained_runs_file_offers_nothing_that_leaves_the_machine(
    browser, api, small_run, tmp_path
):
    r = api.get(f"/api/train/{small_run['id']}/export")
    assert r.status_code == 200, r.text
    path = tmp_path / "run.html"
    path.write_bytes(r.content)
    check_file(browser, path, "a trained run's file")


# ---- One config for every plot ------------------------------------------------------------


def test_every_plot_is_drawn_through_the_shared_config():
    """Only core/theme.js's draw() calls Plotly to make a plot, with plotConfig(): a module that
    built its own config could bring back what that one turns off."""
    calls = re.compile(r"Plotly\s*\.\s*(newPlot|react|plot|setPlotConfig)\s*\(")
    found = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in sorted((ROOT / "static" / "js").rglob("*.js"))
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1)
        if calls.search(line)
    ]
    assert len(found) == 1 and found[0].startswith("static/js/core/theme.js:"), found
