"""Renaming a run in the Train tab, by keyboard: its owner opens Rename, a name the server
refuses is said in plain words beside the field (the field kept open, marked invalid), Escape
leaves the name as it was, Enter saves; the new name is on the Run card, in the trained models
and the runs list at once, and after a reload in them and in sentence mode's model pickers.
Another visitor opening the run by its link reads the name and is offered no Rename."""

from __future__ import annotations

from tests.browser.helpers import (
    ARTIFACTS,
    AXE,
    TRAIN_TINY,
    axe_serious,
    fresh_page,
    screenshot,
    snap,
    wait_for_trace,
)

NAME = "My first induction heads"
SHOWN = "id => document.getElementById('t-run-card').dataset.run === id"


def focused(page) -> str:
    return page.evaluate("() => document.activeElement?.id ?? ''")


def names_in_train(page, run_id: str) -> tuple[str, str, str]:
    """The run's name on the Run card, in the trained models and in the runs list."""
    card = page.locator("#t-run-id").inner_text()
    model = page.locator(f'#t-models .t-model-name[data-model="{run_id}"]').inner_text()
    listed = page.locator(f'#t-runs li[data-run="{run_id}"] .t-model-name').inner_text()
    return card, model, listed


def test_the_owner_renames_a_run_by_keyboard_and_the_name_stays(
    page, browser, live_server, console
):
    console.allow(r"status of 422")  # the name refused on purpose, said beside the field
    page.add_init_script(path=str(AXE))
    page.goto(live_server + "/")
    wait_for_trace(page, 0)
    run_id = page.evaluate(TRAIN_TINY)  # a finished run of this page's visitor
    page.goto(f"{live_server}/#train/{run_id}")
    page.wait_for_function(SHOWN, arg=run_id)
    page.wait_for_selector(f'#t-runs li[data-run="{run_id}"]')
    before = page.locator("#t-run-id").inner_text()
    assert before.startswith("induction, 2 layers, ")  # what it trains and its start's time

    # By keyboard: Rename opens a labelled field holding the name, focused.
    rename = page.locator("#t-rename")
    assert rename.is_visible() and rename.get_attribute("aria-expanded") == "false"
    page.locator("#t-start").focus()
    page.keyboard.press("Tab")  # past Cancel, disabled once the run has ended
    assert focused(page) == "t-rename"
    page.keyboard.press("Enter")
    field = page.locator("#t-rename-text")
    field.wait_for(state="visible")
    assert focused(page) == "t-rename-text" and rename.get_attribute("aria-expanded") == "true"
    assert field.input_value() == "induction, 2 layers"
    # Saved unchanged: nothing to rename, the name keeps its start's time.
    page.keyboard.press("Enter")
    field.wait_for(state="hidden")
    assert focused(page) == "t-rename" and page.locator("#t-run-id").inner_text() == before
    page.keyboard.press("Enter")
    field.wait_for(state="visible")
    assert page.locator("label[for=t-rename-text]").inner_text() == "Name of this run"
    assert field.get_attribute("maxlength") == "80"  # the server's cap, from its options

    # Spaces only: refused, in plain words beside the field, which stays open for a fix.
    page.keyboard.press("Control+A")
    page.keyboard.type("   ")
    page.keyboard.press("Enter")
    say = page.locator("#t-rename-say")
    say.wait_for(state="visible")
    assert say.inner_text() == (
        "Not renamed: A run's name needs at least one character that is not a space."
    )
    assert field.get_attribute("aria-invalid") == "true" and focused(page) == "t-rename-text"
    assert "title:" not in say.inner_text() and run_id not in say.inner_text()
    assert axe_serious(page) == []
    screenshot(page, "train-rename-refused-1280.png")
    snap(page.locator("#t-run-card"), path=str(ARTIFACTS / "train-rename-card-1280.png"))
    page.set_viewport_size({"width": 480, "height": 900})
    assert page.evaluate("() => document.documentElement.scrollWidth <= 480")
    snap(page.locator("#t-run-card"), path=str(ARTIFACTS / "train-rename-card-480.png"))
    screenshot(page, "train-rename-refused-480.png")
    assert axe_serious(page) == []
    page.set_viewport_size({"width": 1280, "height": 800})

    # Escape: the field closes, the name as it was, focus back on Rename.
    page.keyboard.press("Escape")
    field.wait_for(state="hidden")
    assert focused(page) == "t-rename" and page.locator("#t-run-id").inner_text() == before

    # Enter saves: the name is the card's, the trained model's and the runs list's at once.
    page.keyboard.press("Enter")
    field.wait_for(state="visible")
    assert say.is_hidden()  # the refusal went with the field
    page.keyboard.press("Control+A")
    page.keyboard.type(f"  {NAME} ")
    page.keyboard.press("Enter")
    field.wait_for(state="hidden")
    page.wait_for_function(
        "([id, name]) => document.querySelector(`#t-runs li[data-run='${id}'] .t-model-name`)"
        "?.textContent === name",
        arg=[run_id, NAME],
    )
    assert names_in_train(page, run_id) == (NAME, NAME, NAME)
    assert focused(page) == "t-rename"
    assert "Open" not in page.locator(f'#t-runs li[data-run="{run_id}"]').inner_text()  # shown
    screenshot(page, "train-rename-saved-1280.png")

    # A reload: the server's name, everywhere.
    page.reload()
    page.wait_for_function(SHOWN, arg=run_id)
    page.wait_for_selector(f'#t-runs li[data-run="{run_id}"]')
    assert names_in_train(page, run_id) == (NAME, NAME, NAME)
    page.set_viewport_size({"width": 480, "height": 900})
    assert page.evaluate("() => document.documentElement.scrollWidth <= 480")
    snap(page.locator("#t-run-card"), path=str(ARTIFACTS / "train-rename-saved-480.png"))
    page.set_viewport_size({"width": 1280, "height": 800})
    # ... and in sentence mode's pickers: the model, and (the default model being an encoder)
    # the causal model to generate with.
    page.click("#mode-sentence")
    page.wait_for_function(
        "id => [...document.querySelectorAll('#s-model option')].some((o) => o.value === id)",
        arg=run_id,
    )
    assert page.locator(f'#s-model option[value="{run_id}"]').inner_text() == NAME
    assert page.locator(f'#s-gen-causal option[value="{run_id}"]').inner_text() == NAME

    # Another visitor, by the link: the name, and no Rename.
    with fresh_page(browser) as (b, errors):
        b.goto(f"{live_server}/#train/{run_id}")
        b.wait_for_function(SHOWN, arg=run_id)
        assert b.locator("#t-run-id").inner_text() == NAME
        assert b.locator("#t-rename").is_hidden() and b.locator("#t-rename-form").is_hidden()
        assert "not cancel or rename it" in b.locator("#t-owner").inner_text()
        status = b.evaluate(
            "id => fetch(`/api/train/${id}`, {method: 'PATCH', headers: {'content-type': "
            "'application/json'}, body: JSON.stringify({title: 'taken'})}).then((r) => r.status)",
            run_id,
        )
        assert status == 404  # the 404 of a run that does not exist
        assert [e for e in errors if "404" not in e] == []
    assert (
        page.evaluate(
            "id => fetch(`/api/train/${id}`).then((r) => r.json()).then((r) => r.title)", run_id
        )
        == NAME
    )
