"""A vision-language model's vision tower and projector through transformers, without its
language model: the model's class built on the meta device, only the modules outside its
language model (the tower, the projector or merger) made real and given the folder's weights,
read from the safetensors keys as transformers renames them (its conversion mapping). The
language model's weights stay on the meta device: the native engine runs it.

The tower's attention is recorded as the bridge records it (``bridge.record``: the
``"attnviz"`` attention function, the tower's modules marked), so that a trace keeps its calls
(``capture.vision.TowerCall``) and lays them on the images' tiles (``bridge.towers``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from attnviz.capture.vision import TowerCall
from attnviz.engine.device import DTYPES, memory_refusal
from attnviz.pretrained.bridge.multimodal import mark_towers
from attnviz.pretrained.bridge.record import NAME, recording, register, vision_layers
from attnviz.pretrained.folder import ModelFolderError, _read_tensors
from attnviz.pretrained.native_vlm.layout import first_position


@dataclass
class VisionPart:
    """The transformers model of a folder (``hf``: its language model on the meta device) whose
    vision tower and projector (``parts``, by module name) run on ``device``."""

    hf: Any = field(repr=False)
    parts: dict[str, torch.nn.Module] = field(repr=False)
    device: torch.device
    dtype: torch.dtype
    first: int = 0  # the rotary index the model gives a text's first token (layout.py)

    def features(
        self, inputs: Mapping[str, torch.Tensor]
    ) -> tuple[torch.Tensor, list[list[TowerCall]] | None]:
        """(N, C): the images' features as the model writes them into its image tokens' rows
        (its own ``get_image_features``: the tower, then the projector), every image's in
        order; and the tower's attention calls by layer (None when none was recorded)."""
        fn = getattr(self.hf, "get_image_features", None)
        if fn is None:
            fn = self.hf.model.get_image_features
        params = inspect.signature(fn).parameters
        kwargs = {k: v for k, v in inputs.items() if k in params}
        with torch.inference_mode(), recording() as records:
            out = fn(**kwargs, return_dict=True)
        pooled = getattr(out, "pooler_output", out)
        pieces = pooled if isinstance(pooled, (tuple, list)) else [pooled]
        width = pieces[0].shape[-1]
        features = torch.cat([p.reshape(-1, width) for p in pieces])  # (N, C)
        return features, vision_layers(records)


def _text_modules(hf: Any) -> set[int]:
    """The ids of the language model's modules (and the unembedding's)."""
    text = {id(m) for m in hf.get_decoder().modules()}
    head = hf.get_output_embeddings()
    if head is not None:
        text |= {id(m) for m in head.modules()}
    return text


def vision_parts(hf: Any) -> dict[str, torch.nn.Module]:
    """The largest modules of ``hf`` that hold none of its language model's, by name: the
    vision tower and the projector (or merger). A ValueError for a parameter that sits on a
    module holding both."""
    text = _text_modules(hf)
    parts: dict[str, torch.nn.Module] = {}

    def walk(prefix: str, module: torch.nn.Module) -> None:
        if id(module) in text:
            return
        if not any(id(m) in text for m in module.modules()):
            parts[prefix] = module
            return
        own = [n for n, p in module._parameters.items() if p is not None]
        if own:
            raise ValueError(f"{prefix or 'the model'} holds {own[0]!r} beside its language model")
        for name, child in module.named_children():
            walk(f"{prefix}.{name}" if prefix else name, child)

    walk("", hf)
    if not parts:
        raise ValueError("it has no module outside its language model (no vision tower)")
    return parts


def _renamed(hf: Any, keys: list[str]) -> dict[str, str]:
    """Each saved key -> the name transformers gives it in ``hf`` (its conversion mapping's
    renamings); "" for a key a conversion computes from (not a rename), which is not read."""
    from transformers.conversion_mapping import get_model_conversion_mapping
    from transformers.core_model_loading import WeightConverter, WeightRenaming, rename_source_key

    transforms = get_model_conversion_mapping(hf)
    converters = [t for t in transforms if isinstance(t, WeightConverter)]
    renamings = [t for t in transforms if isinstance(t, WeightRenaming)]
    meta = hf.state_dict()
    out = {}
    for key in keys:
        name, converted = rename_source_key(key, renamings, converters, hf.base_model_prefix, meta)
        out[key] = name if converted is None else ""
    return out


def _init_buffers(part: torch.nn.Module, owner: Any, where: str) -> None:
    """The buffers of ``part`` the checkpoint does not hold (rotary frequencies, position ids),
    made by the model's own ``_init_weights`` as transformers makes them when it loads; a
    ModelFolderError naming one it leaves unset (each starts as a marker it would overwrite)."""
    unset: list[tuple[str, torch.Tensor]] = []
    for name, module in part.named_modules():
        if not module._non_persistent_buffers_set:
            continue
        for key in module._non_persistent_buffers_set:
            b = module._buffers.get(key)
            if b is not None:
                b.fill_(torch.nan if b.is_floating_point() else torch.iinfo(b.dtype).min)
                unset.append((f"{name}.{key}" if name else key, b))
        owner._init_weights(module)
    for name, b in unset:
        marker = torch.isnan(b) if b.is_floating_point() else b == torch.iinfo(b.dtype).min
        if bool(marker.any()):
            raise ModelFolderError(
                f"{where}.{name}: transformers' initialisation leaves this buffer unset, so "
                "the tower cannot be made without its language model (--backend transformers "
                "serves it)"
            )


def load_vision(folder: Path, config: Any, device: torch.device, dtype: torch.dtype) -> VisionPart:
    """The vision tower and projector of ``folder`` (transformers' ``config`` of it) on
    ``device`` in ``dtype``, its attention recorded; a ModelFolderError naming the folder when
    they cannot be made."""
    from transformers import AutoModelForImageTextToText, PreTrainedModel

    register()
    try:
        with torch.device("meta"):
            hf = AutoModelForImageTextToText.from_config(config, attn_implementation=NAME)
        parts = vision_parts(hf)
    except (ValueError, KeyError, TypeError, ImportError, RuntimeError) as exc:
        raise ModelFolderError(f"{folder}: its vision tower could not be built ({exc})") from exc
    n = sum(p.numel() for part in parts.values() for p in part.parameters())
    refusal = memory_refusal(
        f"{folder.name}'s vision tower", {k: n * dt.itemsize for k, dt in DTYPES.items()}, dtype,
        device,
    )  # fmt: skip
    if refusal is not None:
        raise ModelFolderError(f"{folder}: {refusal}")
    raw = _read_tensors(folder)  # memory-mapped
    names = _renamed(hf, list(raw))
    for prefix, part in parts.items():
        mine = {n.removeprefix(f"{prefix}."): raw[k] for k, n in names.items()
                if n.startswith(f"{prefix}.")}  # fmt: skip
        part.to_empty(device=device)
        owner = part if isinstance(part, PreTrainedModel) else hf
        _init_buffers(part, owner, f"{folder}: {prefix}")
        state = {k: v.to(device=device, dtype=dtype) if v.is_floating_point() else v.to(device)
                 for k, v in mine.items()}  # fmt: skip
        try:  # the parameters become the converted tensors; the buffers made above stay
            part.load_state_dict(state, strict=True, assign=True)
        except RuntimeError as exc:
            first = " ".join(str(exc).split())[:300]
            raise ModelFolderError(
                f"{folder}: its {prefix} could not be read from the checkpoint ({first}); a "
                "tensor transformers computes when it loads (not a rename) is not read here "
                "(--backend transformers serves it)"
            ) from exc
        part.eval()
    mark_towers(hf)
    try:
        start = first_position(hf)
    except (ValueError, TypeError, RuntimeError) as exc:
        raise ModelFolderError(
            f"{folder}: where its forward places a text's tokens could not be read ({exc})"
        ) from exc
    return VisionPart(hf=hf, parts=parts, device=device, dtype=dtype, first=start)
