"""Where a bridged model's layers live: a device map (``--device-map``, ``--max-memory``,
``--offload-folder``) passed to transformers' ``from_pretrained``, which has accelerate place
the layers over the GPUs, then the CPU, then the disk; what the memory check counts for it; and
the placement a served model reports (``placement``: the embedding's, each layer's and the
head's device)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from attnviz.engine.device import free_bytes
from attnviz.engine.placement import Placement as EnginePlacement
from attnviz.engine.placement import device_name
from attnviz.settings import DeviceMap

# What a served model reports of where it lives: {"embed": ..., "layers": [...], "head": ...}.
Placement = dict[str, Any]


def whole(device: torch.device | str, n_layers: int) -> Placement:
    """The placement of a model all on ``device``."""
    return EnginePlacement.single(device, n_layers).as_dict()


def _order(name: str) -> tuple[int, int, str]:
    """Devices in accelerate's order: the GPUs by index, then the CPU, then the disk."""
    if name.startswith("cuda:") and name[5:].isdigit():
        return (0, int(name[5:]), name)
    return (1 if name == "cpu" else 2, 0, name)


def capacities(
    max_memory: Mapping[int | str, int] | None, offload_folder: Path | None
) -> dict[str, int]:
    """Each device's bytes a device map may fill, by name: ``max_memory``'s (a GPU that torch
    does not see refused), else every GPU's free memory and the CPU's; the disk only with an
    offload folder (``max_memory``'s figure, else the folder's free space)."""
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    out: dict[str, int] = {}
    if max_memory is not None:
        for key, size in max_memory.items():
            if isinstance(key, int) and key >= gpus:
                raise ValueError(
                    f"--max-memory (ATTNVIZ_MAX_MEMORY): GPU {key} was named, but torch "
                    f"sees {gpus} GPU{'' if gpus == 1 else 's'}"
                )
            if key != "disk" or offload_folder is not None:
                out[device_name(key)] = size
    else:
        devices = [torch.device("cuda", i) for i in range(gpus)] + [torch.device("cpu")]
        for dev in devices:
            free = free_bytes(dev)
            if free is not None:
                out[str(dev)] = free
    if offload_folder is not None and "disk" not in out:
        folder = Path(offload_folder)
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent  # the folder is made when the first layer is offloaded
        out["disk"] = shutil.disk_usage(folder).free
    return out


def load_kwargs(
    device_map: DeviceMap, max_memory: Mapping[int | str, int] | None, offload_folder: Path | None
) -> dict[str, Any]:
    """What ``from_pretrained`` is given for a device map (nothing for "none")."""
    if device_map == "none":
        return {}
    kwargs: dict[str, Any] = {"device_map": device_map}
    if max_memory is not None:
        kwargs["max_memory"] = dict(max_memory)
    if offload_folder is not None:
        kwargs["offload_folder"] = str(offload_folder)
    return kwargs


def _layers(hf: Any, n_layers: int) -> list[Any]:
    """The language model's blocks: the first list of ``n_layers`` modules outside a vision
    tower (``record.VISION_MARK``)."""
    from attnviz.pretrained.bridge.record import VISION_MARK

    if n_layers == 0:
        return []
    for module in hf.modules():
        if (
            isinstance(module, torch.nn.ModuleList)
            and len(module) == n_layers
            and not getattr(module, VISION_MARK, False)
        ):
            return list(module)
    return []


def placement_of(hf: Any, n_layers: int, device: torch.device) -> Placement:
    """Where ``hf``'s embedding, layers and head live: its ``hf_device_map`` (accelerate's, each
    module at its longest named prefix), else all on ``device``. The head is the unembedding,
    else (an encoder's body) the last layer's device."""
    device_map = getattr(hf, "hf_device_map", None)
    if not device_map:
        return whole(device, n_layers)
    names = {id(m): n for n, m in hf.named_modules()}

    def where(module: Any) -> str:
        name = names.get(id(module), "")
        best = max(
            (k for k in device_map if k == "" or name == k or name.startswith(k + ".")),
            key=len,
            default=None,
        )
        if best is not None:
            return device_name(device_map[best])
        # A module split between devices (accelerate placed its parts): each, in device order.
        parts = {device_name(v) for k, v in device_map.items() if k.startswith(name + ".")}
        return "+".join(sorted(parts, key=_order)) or str(device)

    embed = where(hf.get_input_embeddings())
    layers = [where(m) for m in _layers(hf, n_layers)] or [embed] * n_layers
    head = hf.get_output_embeddings()
    last = layers[-1] if layers else embed
    return {"embed": embed, "layers": layers, "head": where(head) if head is not None else last}


def input_device(placement: Placement) -> torch.device:
    """Where a device-mapped model's inputs go: its embedding's device; an offloaded one
    computes on the first GPU of the map (accelerate's main device), else the CPU."""
    embed = placement["embed"].split("+")[0]  # a split embedding: its first part's
    if embed != "disk":
        return torch.device(embed)
    every = "+".join((*placement["layers"], placement["head"])).split("+")
    gpus = sorted({d for d in every if d.startswith("cuda")}, key=_order)
    return torch.device(gpus[0] if gpus else "cpu")
