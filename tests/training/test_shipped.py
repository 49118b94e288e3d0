"""The character model that ships with attnviz (attnviz/models/charlm-pydoc): it loads, it is
what its recipe (attnviz/training/shipped.py) says, its held-out loss, recomputed here on the
held-out part of the text it learned (kept beside it: the same on every Python), is
recipe.json's and far below a bigram model's; and the recipe, trained again, starts as the
shipped run did."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from attnviz import __version__
from attnviz.pretrained.folder import load_folder
from attnviz.pretrained.native import characters_of
from attnviz.training.shipped import (
    LOSS_STEPS,
    RECIPE,
    SHIPPED_NAME,
    heldout_loss,
    heldout_windows,
    read_recipe,
    shipped_dir,
    shipped_task,
    text_facts,
)
from attnviz.training.tasks import CharLM, bigram_heldout_loss  # noqa: F401
from attnviz.training.trainer import model_config, train

CPU = torch.device("cpu")
# The shipped model must beat the bigram baseline by at least this many nats a character (it
# does by about one).
MARGIN = 0.5
# A folder a learner's browser and the wheel carry: its cap.
MAX_BYTES = 1_600_000


@pytest.fixture(scope="module")
def task() -> CharLM:
    return shipped_task()


@pytest.fixture(scope="module")
def shipped():
    return load_folder(shipped_dir(), CPU, SHIPPED_NAME, dtype="float32")


def test_the_folder_is_in_the_package_and_small():
    folder = shipped_dir()
    names = {p.name for p in folder.iterdir()}
    assert names == {
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "recipe.json",
        "text.txt.gz",
    }
    assert sum(p.stat().st_size for p in folder.iterdir()) < MAX_BYTES


def test_it_is_the_model_its_recipe_describes(shipped, task):
    recipe = read_recipe()
    assert recipe["recipe_version"] == 1 and recipe["name"] == SHIPPED_NAME
    assert recipe["recipe"] == json.loads(json.dumps(RECIPE.as_dict()))
    assert recipe["attnviz_version"] == __version__
    # The engine's configuration is the trainer's for this recipe, field by field.
    assert shipped.cfg == model_config(RECIPE.arch, task.vocab.size, RECIPE.context)
    assert (shipped.family, shipped.cfg.causal, shipped.cfg.n_ctx) == ("attnviz", True, 128)
    config = json.loads((shipped_dir() / "config.json").read_text())
    assert config["task"] == "charlm" and config["vocab"] == task.vocab.chars
    assert config["training"]["steps"] == RECIPE.opt.steps
    assert characters_of(shipped.tokenizer.tok) == task.vocab.chars
    assert recipe["parameters"] == sum(p.numel() for p in shipped.model.parameters())


def test_the_text_kept_beside_it_is_the_one_recipe_json_names(task):
    """The text the model learned, kept in its folder (another Python's pydoc_data differs a
    little): the one recipe.json names, by length and SHA-256."""
    learned = read_recipe()["text"]
    here = text_facts(task, learned["python"])
    assert here == learned
    assert task.dropped == ""  # kept as it was trained on: clean already


@pytest.mark.slow
def test_its_heldout_loss_is_recipe_jsons_and_far_below_the_bigram_models(shipped, task):
    recipe = read_recipe()
    windows = heldout_windows(task)
    assert windows == recipe["heldout_windows"]
    # Every held-out character but the windows' first: the whole last tenth, none trained on.
    counted = windows * task.context
    assert 0.99 * len(task.heldout_ids) < counted <= len(task.heldout_ids)
    loss = heldout_loss(shipped.model, task)
    bigram = bigram_heldout_loss(task, windows)
    assert loss == pytest.approx(recipe["heldout_loss"], abs=1e-4)
    assert bigram == pytest.approx(recipe["bigram_loss"], abs=1e-4)
    assert loss < bigram - MARGIN, (loss, bigram)


@pytest.mark.slow
def test_the_recipe_still_trains_the_way_the_shipped_model_was_trained(task):
    """The recipe's first steps, trained again, give recipe.json's losses: the optimiser's rate
    is constant, so a run of the recipe's first 100 steps is the shipped run's first 100 (one
    CPU thread, seeded: the same numbers on one machine; another CPU or torch may round
    differently, hence the tolerance). The whole build, ``attnviz build-model FOLDER``, takes
    minutes on two cores and is not part of the suite (docs/models.md)."""
    losses = read_recipe()["losses"]
    assert set(losses) == {*map(str, LOSS_STEPS), str(RECIPE.opt.steps)}
    first = dataclasses.replace(RECIPE.opt, steps=max(LOSS_STEPS))
    run = train(task, RECIPE.arch, first)
    got = {str(s.step): s.loss for s in run.history if s.step in LOSS_STEPS}
    assert got["1"] == pytest.approx(losses["1"], abs=1e-4)  # the starting weights' loss
    for step in LOSS_STEPS[1:]:
        assert got[str(step)] == pytest.approx(losses[str(step)], abs=0.01), step
    # And the recipe trains: by its last step the loss is far below the first.
    assert losses[str(RECIPE.opt.steps)] < losses["1"] - 2
