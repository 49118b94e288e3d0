"""Which device the engine computes on: chosen once at start, overridable."""

from __future__ import annotations

import torch


def resolve_device(name: str = "auto") -> torch.device:
    """Turn ``auto`` / ``cpu`` / ``cuda`` / ``cuda:N`` into a usable ``torch.device``.

    ``auto`` is CUDA when torch sees a GPU, else the CPU. Asking for CUDA on a host without it is
    an error at start, not a silent fallback.
    """
    name = name.strip().lower()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError as exc:
        raise ValueError(
            f"device: unknown device {name!r} (use auto, cpu, cuda or cuda:N)"
        ) from exc
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device: {name!r} was asked for but torch sees no CUDA GPU")
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"device: {name!r} is not supported (use auto, cpu, cuda or cuda:N)")
    return device
