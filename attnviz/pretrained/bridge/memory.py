"""A transformers model object already in memory (``AutoModelForCausalLM.from_pretrained(...)``,
or one made from a config), served through the bridge as a folder loaded with ``--backend
transformers`` is, without saving it: the same recorded attention (``record``), the same probe
(``load._probe``), the same trace, and ``unavailable`` where its attention bypasses
AttentionInterface.

The object stays the caller's: for the time of each forward it runs in eval mode with the
``"attnviz"`` attention (eager attention, recorded), then its training flags and attention
implementation are put back as they were.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from attnviz.engine import TransformerConfig
from attnviz.pretrained.bridge.load import BRIDGE_INSTALL, _eos_ids, _probe, transformers_missing
from attnviz.pretrained.bridge.model import BridgedModel
from attnviz.pretrained.bridge.multimodal import Encoded
from attnviz.pretrained.bridge.place import input_device, placement_of
from attnviz.pretrained.bridge.record import NAME, Recording, register
from attnviz.pretrained.folder import ModelFolderError
from attnviz.pretrained.tokenize import TextTokenizer

# What a model in memory has for a folder (never a folder's path, so never taken for one).
SOURCE = Path("<in memory>")
NAME_CHARS = 200  # a model's name is at most this long (TextTraceRequest.model)


class ModelObjectError(ValueError):
    """A model object or tokenizer the bridge cannot serve; the message names the argument
    (``model: ...``, ``tokenizer: ...``)."""


def model_label(hf: Any) -> str:
    """A readable name for ``hf``: its config's ``name_or_path`` (a local folder's own name, or
    the hub's id), else its class's name."""
    path = str(getattr(getattr(hf, "config", None), "name_or_path", "") or "").strip()
    if path and (Path(path).is_absolute() or path.startswith((".", "~"))):
        path = Path(path).name
    return (path or type(hf).__name__)[:NAME_CHARS]


def text_tokenizer(tokenizer: Any) -> TextTokenizer:
    """``tokenizer`` (a transformers tokenizer, fast or slow, or a ``tokenizers.Tokenizer``) as
    the bridge's TextTokenizer: a copy of its ``tokenizers`` form, so that turning truncation and
    padding off there leaves the caller's as it was."""
    from tokenizers import Tokenizer

    if isinstance(tokenizer, Tokenizer):
        backend = tokenizer
    elif isinstance(getattr(tokenizer, "backend_tokenizer", None), Tokenizer):
        backend = tokenizer.backend_tokenizer
    elif callable(getattr(tokenizer, "get_vocab", None)):
        try:  # a slow (Python) tokenizer: transformers' own conversion
            from transformers.convert_slow_tokenizer import convert_slow_tokenizer

            backend = convert_slow_tokenizer(tokenizer)
        except Exception as exc:  # converters raise what their libraries raise
            raise ModelObjectError(
                f"tokenizer: {type(tokenizer).__name__} has no fast (tokenizers) form and "
                f"transformers cannot convert it ({exc}); pass a fast tokenizer"
            ) from exc
    else:
        raise ModelObjectError(
            f"tokenizer: a transformers tokenizer or a tokenizers.Tokenizer, not "
            f"{type(tokenizer).__name__}"
        )
    try:
        return TextTokenizer(Tokenizer.from_str(backend.to_str()))
    except Exception as exc:  # the tokenizers library raises plain Exceptions
        raise ModelObjectError(f"tokenizer: could not be copied ({exc})") from exc


def _configs(hf: Any) -> list[Any]:
    """Every config whose ``_attn_implementation`` a forward of ``hf`` reads: its own, its
    sub-models' and their sub-configs'."""
    from transformers import PreTrainedModel

    found: dict[int, Any] = {}
    todo = [m.config for m in hf.modules() if isinstance(m, PreTrainedModel)]
    while todo:
        c = todo.pop()
        if id(c) in found or not hasattr(c, "_attn_implementation_internal"):
            continue
        found[id(c)] = c
        todo += [s for k in getattr(c, "sub_configs", {}) if (s := getattr(c, k, None))]
    return list(found.values())


@contextmanager
def bridged(hf: Any, attn: str) -> Iterator[None]:
    """``hf`` as the bridge runs it for the block's length: eval mode (no dropout) and the
    attention ``attn`` (``"attnviz"``, or eager for a model whose attention bypasses the
    interface); then every module's training flag and every config's attention as they were."""
    training = [m for m in hf.modules() if m.training]
    saved = [(c, c._attn_implementation_internal) for c in _configs(hf)]
    hf.eval()
    try:
        if hf.config._attn_implementation != attn and (
            attn == NAME or hf._can_set_attn_implementation()
        ):
            hf.set_attn_implementation(attn)
        yield
    finally:
        for c, value in saved:
            c._attn_implementation_internal = value
        for m in training:
            m.training = True


@dataclass
class MemoryModel(BridgedModel):
    """A bridged model whose transformers model is the caller's object (``bridged`` around
    each forward)."""

    attn: str = NAME

    def forward(
        self, ids: torch.Tensor, keep_weights: bool = True,
        inputs: Mapping[str, torch.Tensor] | None = None,
    ) -> tuple[Any, Recording]:  # fmt: skip
        with bridged(self.hf, self.attn):
            return super().forward(ids, keep_weights, inputs)

    def continue_ids(
        self, ids: list[int], n: int, temperature: float = 0.0, seed: int = 0,
        stop: Collection[int] = (), images: Encoded | None = None,
    ) -> list[int]:  # fmt: skip
        with bridged(self.hf, self.attn):
            return super().continue_ids(ids, n, temperature, seed, stop, images)

    def with_tokenizer(self, tokenizer: TextTokenizer) -> MemoryModel:
        """This model read with ``tokenizer`` (the same model, probe and lock)."""
        check_vocab(self.cfg, tokenizer)
        from dataclasses import replace

        return replace(self, tokenizer=tokenizer)


def check_vocab(cfg: TransformerConfig, tokenizer: TextTokenizer) -> None:
    if cfg.vocab_size is not None and tokenizer.vocab_size > cfg.vocab_size:
        raise ModelObjectError(
            f"tokenizer: it has {tokenizer.vocab_size} tokens but the model's embedding table "
            f"only {cfg.vocab_size} rows (is it the model's own tokenizer?)"
        )


def bridge_model(hf: Any, tokenizer: Any, name: str | None = None) -> MemoryModel:
    """``hf``, a transformers model object, served through the bridge with ``tokenizer``, as
    ``load_bridged`` serves a folder (the probe tells what its attention records); nothing is
    written to disk (``tokenizer``: as ``text_tokenizer`` takes it, or a TextTokenizer). A
    ModelObjectError names the argument it refuses."""
    missing = transformers_missing()
    if missing is not None:
        raise ModelObjectError(f"model: a model object needs transformers ({missing}); "
                               f"{BRIDGE_INSTALL}")  # fmt: skip
    from transformers import PreTrainedModel

    if not isinstance(hf, PreTrainedModel):
        raise ModelObjectError(
            f"model: a transformers model (a PreTrainedModel, as AutoModel.from_pretrained "
            f"gives), a model's name or a folder, not {type(hf).__name__}"
        )
    config = hf.config
    if getattr(config, "is_encoder_decoder", False):
        raise ModelObjectError(
            f"model: {config.model_type!r} is an encoder-decoder; the transformers backend "
            "serves models that read one text (a decoder or an encoder)"
        )
    text = tokenizer if isinstance(tokenizer, TextTokenizer) else text_tokenizer(tokenizer)
    first = next(hf.parameters(), None)
    if first is None:
        raise ModelObjectError(f"model: {type(hf).__name__} has no parameters")
    register()
    label = name or model_label(hf)
    model = MemoryModel(
        name=label,
        family=str(getattr(config, "model_type", "") or type(hf).__name__),
        source=SOURCE,
        origin=f"in memory ({type(hf).__name__})",
        cfg=TransformerConfig(d_model=1),  # replaced by the probe
        hf=hf,
        tokenizer=text,
        # A model spread by a device map (accelerate's hf_device_map): its inputs' device.
        device=input_device(placement_of(hf, 0, first.device))
        if getattr(hf, "hf_device_map", None)
        else first.device,
        eos_ids=_eos_ids(config.to_dict()),
    )
    try:
        # Whether its attention goes through the interface is found by running it: a model
        # whose attention is its own code never calls the function, and then runs eager.
        with bridged(hf, NAME):
            if not _probe(model, config):
                model.attn = "eager"
    except ModelFolderError as exc:
        raise ModelObjectError(f"model: {str(exc).removeprefix(f'{SOURCE}: ')}") from exc
    except (ValueError, TypeError, RuntimeError, IndexError) as exc:
        raise ModelObjectError(
            f"model: {type(hf).__name__} could not run through transformers' attention "
            f"interface ({exc})"
        ) from exc
    check_vocab(model.cfg, text)
    if getattr(hf, "hf_device_map", None):
        model.placed = placement_of(hf, model.cfg.n_layers, model.device)
    return model
