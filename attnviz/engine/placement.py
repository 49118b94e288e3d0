"""Where a native model's parts live when one device cannot hold it: a plan of devices for the
embedding, each block and the head (``plan_layers``), balanced by bytes across the GPUs given as
accelerate's ``get_balanced_memory`` balances them, then the CPU; and the model put there
(``place_model``): each block's parameters on its device, the residual stream moved to the next
block's device as it enters it (a forward pre-hook), a generation's cached keys and values kept
on their layer's device (they are made there).

Capacities are the bytes of weights each device may take (``max_memory``, or the free memory less
the activations' margin); "disk" is the transformers backend's (the engine computes from memory).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import torch
from torch import nn

from attnviz.engine.device import ACTIVATION_MARGIN_BYTES, free_bytes, gb
from attnviz.errors import TraceError
from attnviz.settings import size_bytes

if TYPE_CHECKING:
    from attnviz.engine.model import Transformer

PlacementMode = Literal["auto", "balanced", "sequential"]


class PlacementError(TraceError):
    """A model that fits on none of the devices given, or a plan that cannot be made; the message
    gives the bytes needed and what each device holds."""


@dataclass(frozen=True)
class Placement:
    """The device of each part: ``embed`` (token and position tables, any embedding norm, an
    encoder), ``layers`` (block i on layers[i]), ``head`` (final norm and unembedding)."""

    embed: str
    layers: tuple[str, ...]
    head: str

    @classmethod
    def single(cls, device: torch.device | str, n_layers: int) -> Placement:
        name = str(device)
        return cls(name, (name,) * n_layers, name)

    def as_dict(self) -> dict:
        """The shape a served model reports: {"embed": .., "layers": [..], "head": ..}."""
        return {"embed": self.embed, "layers": list(self.layers), "head": self.head}


def device_name(key: str | int) -> str:
    """A max_memory key as a device name: a GPU index ``0`` -> "cuda:0"; "cpu", "cuda:1" kept."""
    text = str(key).strip().lower()
    return f"cuda:{text}" if text.isdigit() else text


def parse_bytes(value: str | int | float, what: str = "max_memory") -> int:
    """``"20GiB"``, ``"3.5GB"``, ``"500MB"`` or a number of bytes -> bytes (``size_bytes``,
    the settings' own reading of --max-memory)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    try:
        return size_bytes(str(value))
    except ValueError:
        raise ValueError(f"{what}: {value!r} is not a size (e.g. 20GiB, 3.5GB, 500MB)") from None


def capacities_of(max_memory: Mapping[int | str, str | int]) -> dict[str, int]:
    """max_memory as the engine's capacities: device name -> bytes (refusing "disk")."""
    out: dict[str, int] = {}
    for key, value in max_memory.items():
        name = device_name(key)
        if name == "disk":
            raise PlacementError(
                "max_memory: the native engine computes from memory, it does not offload to "
                "disk (the transformers backend does: --backend transformers)"
            )
        out[name] = parse_bytes(value, f"max_memory[{key}]")
    return out


def _fill(sizes: Sequence[int], caps: Sequence[int]) -> list[int]:
    """Sequential: the index of the device each item goes to, filling ``caps`` in order; an item
    that fits on no later device gets len(caps)."""
    where, d, used = [], 0, 0
    for s in sizes:
        while d < len(caps) and used + s > caps[d]:
            d, used = d + 1, 0
        where.append(d)
        used += s if d < len(caps) else 0
    return where


def _balance(sizes: Sequence[int], caps: Sequence[int]) -> list[int]:
    """The items cut into len(caps) runs in order, each run within its device's capacity, the
    largest run as small as it can be and then the smallest as large as it can be: the most even
    split of the bytes (two passes of dynamic programming over the cuts)."""
    n, k = len(sizes), len(caps)
    prefix = [0]
    for s in sizes:
        prefix.append(prefix[-1] + s)
    inf = float("inf")

    def run(j: int, i: int) -> int:
        return prefix[i] - prefix[j]

    # worst[d][i]: the smallest largest run of items [0, i) on devices [0, d]
    worst = [[inf] * (n + 1) for _ in range(k)]
    for i in range(n + 1):
        worst[0][i] = run(0, i) if run(0, i) <= caps[0] else inf
    for d in range(1, k):
        for i in range(n + 1):
            worst[d][i] = min((max(worst[d - 1][j], run(j, i)) for j in range(i + 1)
                               if run(j, i) <= caps[d]), default=inf)  # fmt: skip
    bound = worst[k - 1][n]
    # least[d][i]: the largest smallest run, every run at most ``bound``; with its cut
    least = [[-inf] * (n + 1) for _ in range(k)]
    cut = [[0] * (n + 1) for _ in range(k)]
    for i in range(n + 1):
        if run(0, i) <= min(caps[0], bound):
            least[0][i] = run(0, i)
    for d in range(1, k):
        for i in range(n + 1):
            for j in range(i + 1):
                r = run(j, i)
                if r <= min(caps[d], bound) and min(least[d - 1][j], r) > least[d][i]:
                    least[d][i], cut[d][i] = min(least[d - 1][j], r), j
    where = [0] * n
    i = n
    for d in range(k - 1, -1, -1):
        j = cut[d][i] if d else 0
        where[j:i] = [d] * (i - j)
        i = j
    return where


def plan_layers(
    block_bytes: Sequence[int],
    embed_bytes: int,
    head_bytes: int,
    capacities: Mapping[str, int],
    mode: PlacementMode = "balanced",
) -> Placement:
    """A device for the embedding, each block and the head, in that order over the GPUs of
    ``capacities`` (device name -> bytes of weights it may take, in the order given), then the
    CPU. "sequential" fills each device before the next; "balanced" (and "auto", as accelerate's
    "auto") cuts the parts that fit on the GPUs into runs of as even bytes as can be. A model
    that fits nowhere is refused (PlacementError) with the bytes it needs and each device's."""
    sizes = [embed_bytes, *block_bytes, head_bytes]
    names = list(capacities)
    gpus = [d for d in names if d != "cpu"] + [d for d in names if d == "cpu"]
    caps = [int(capacities[d]) for d in gpus]
    where = _fill(sizes, caps)
    if where[-1] >= len(gpus):
        held = ", ".join(f"{gb(c)} on {d}" for d, c in zip(gpus, caps, strict=True)) or "none"
        raise PlacementError(
            f"device_map: the model needs {gb(sum(sizes))} of weights ({len(block_bytes)} "
            f"blocks of up to {gb(max(block_bytes, default=0))}, embedding {gb(embed_bytes)}, "
            f"head {gb(head_bytes)}) and the devices given hold {held}: give more max_memory, "
            "a smaller dtype or a smaller model"
        )
    if mode in ("auto", "balanced"):
        n_gpu = len(gpus) - ("cpu" in gpus)
        # The parts that go on GPUs when each is filled: spread evenly over them.
        on_gpu = sum(1 for w in where if w < n_gpu)
        if n_gpu > 1 and on_gpu:
            where[:on_gpu] = _balance(sizes[:on_gpu], caps[:n_gpu])
    elif mode != "sequential":
        raise ValueError(f"device_map: {mode!r} is not one of auto, balanced, sequential")
    devices = [gpus[w] for w in where]
    return Placement(devices[0], tuple(devices[1:-1]), devices[-1])


def free_capacities() -> dict[str, int]:
    """Each visible GPU's free memory, then the CPU's, less the activations' margin: what the
    devices may take of a model's weights when max_memory does not say."""
    names = [f"cuda:{i}" for i in range(torch.cuda.device_count())] + ["cpu"]
    out: dict[str, int] = {}
    for name in names:
        free = free_bytes(torch.device(name))
        if free is not None:
            out[name] = max(0, free - ACTIVATION_MARGIN_BYTES)
    return out


def part_bytes(model: Transformer, itemsize: int) -> tuple[list[int], int, int]:
    """The bytes of each block, of the embedding (tables, embedding norm, an encoder) and of the
    head (final norm, W_U) of ``model`` (a skeleton on the meta device will do) at ``itemsize``
    bytes a number: what ``plan_layers`` reads. A tied W_U is counted in both (placed apart
    from W_E it is a copy)."""

    def size(*parts: nn.Module | torch.Tensor | None) -> int:
        n = 0
        for part in parts:
            if isinstance(part, nn.Module):
                n += sum(p.numel() for p in part.parameters())
            elif isinstance(part, torch.Tensor):
                n += part.numel()
        return n * itemsize

    blocks = [size(b) for b in model.blocks]
    own = model._parameters
    embed = size(own.get("W_E"), own.get("W_pos"), own.get("W_type"), model.ln_embed,
                 getattr(model, "encoder", None))  # fmt: skip
    return blocks, embed, size(own.get("W_U"), model.ln_final)


def _move_input(device: torch.device):  # noqa: ANN202 (a hook)
    def hook(_m: nn.Module, args: tuple) -> tuple:
        return tuple(a.to(device) if isinstance(a, torch.Tensor) else a for a in args)

    return hook


def _move(module: nn.Module, names: Sequence[str], device: torch.device) -> None:
    for name in names:
        p = module._parameters.get(name)
        if p is not None and p.device != device:
            module._parameters[name] = nn.Parameter(p.detach().to(device), requires_grad=False)


def place_model(model: Transformer, placement: Placement) -> Transformer:
    """Put ``model`` (an engine ``Transformer``) where ``placement`` says, in place: the tables
    (W_E, W_pos, W_type), the embedding norm and an encoder on ``embed``; block i's parameters
    on layers[i], with a pre-hook moving its inputs (the residual stream, a decoder's memory) to
    that device; the final norm and W_U on ``head``, the final norm's input moved there too. A
    tied W_U placed apart from W_E becomes a copy on the head's device."""
    blocks = model.blocks
    if len(placement.layers) != len(blocks):
        raise ValueError(f"placement: {len(placement.layers)} layers for {len(blocks)} blocks")
    embed, head = torch.device(placement.embed), torch.device(placement.head)
    _move(model, ("W_E", "W_pos", "W_type"), embed)
    for part in ("encoder", "ln_embed"):
        sub = getattr(model, part, None)
        if isinstance(sub, nn.Module):
            sub.to(embed)
    for block, name in zip(blocks, placement.layers, strict=True):
        device = torch.device(name)
        block.to(device)
        block.register_forward_pre_hook(_move_input(device))
    _move(model, ("W_U",), head)
    if model.ln_final is not None:
        model.ln_final.to(head)
        model.ln_final.register_forward_pre_hook(_move_input(head))
    model.placement = placement
    return model


def placement_of(model: Transformer, device: torch.device) -> Placement:
    """Where ``model``'s parts are: its plan when placed, else ``device`` for all."""
    if model.placement is not None:
        return model.placement
    return Placement.single(device, len(model.blocks))


def gather(rows: Sequence[torch.Tensor]) -> torch.Tensor:
    """torch.stack of per-layer ``rows``: where they lie on one device, there; from layers on
    several devices, on the CPU (what a view asks of a placed model meets only there)."""
    if len({r.device for r in rows}) <= 1:
        return torch.stack(list(rows))
    return torch.stack([r.cpu() for r in rows])
