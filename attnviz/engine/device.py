"""Which device and dtype the engine computes in, chosen once at start, overridable; and whether
a model fits the device's free memory."""

from __future__ import annotations

from pathlib import Path

import torch

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}
HALF = (torch.bfloat16, torch.float16)
# What a model needs besides its weights, counted before it is loaded: a forward's activations
# (on a CPU the trace cache's default 256 MB among them) and the framework's own buffers.
ACTIVATION_MARGIN_BYTES = 2**30


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


def resolve_dtype(name: str, device: torch.device, checkpoint: torch.dtype | None) -> torch.dtype:
    """The parameters' dtype: ``auto`` is the checkpoint's half precision (bfloat16 or float16)
    on a GPU and float32 otherwise (a CPU computes half precision slowly, and a float32
    checkpoint stays float32); ``float32``, ``bfloat16``, ``float16`` force it."""
    if name == "auto":
        if device.type == "cuda" and checkpoint in HALF:
            return checkpoint
        return torch.float32
    if name not in DTYPES:
        raise ValueError(f"dtype: {name!r} is not one of auto, {', '.join(DTYPES)}")
    return DTYPES[name]


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # cgroup v2 writes "max" for no limit


def _cgroup_free() -> int | None:
    """Bytes the process's memory cgroup still allows (a container's limit), its reclaimable
    page cache counted as free; None without a limit."""
    for limit_file, usage_file, inactive in (
        ("memory.max", "memory.current", "inactive_file"),  # cgroup v2
        ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes", "total_inactive_file"),
    ):
        root = Path("/sys/fs/cgroup")
        limit, usage = _read_int(root / limit_file), _read_int(root / usage_file)
        if limit is None or usage is None or limit >= 2**60:  # v1 says "none" with a huge number
            continue
        stat = (root / limit_file).parent / "memory.stat"
        cache = 0
        try:
            for line in stat.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == inactive and value.isdigit():
                    cache = int(value)
        except OSError:
            pass
        return max(0, limit - (usage - cache))
    return None


def free_bytes(device: torch.device) -> int | None:
    """The memory a model may still take on ``device``: on CUDA ``torch.cuda.mem_get_info``'s
    free bytes; on the CPU /proc/meminfo's MemAvailable, or the container's limit when lower.
    None when it cannot be told (then nothing is refused)."""
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    available = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    limit = _cgroup_free()
    figures = [f for f in (available, limit) if f is not None]
    return min(figures) if figures else None


def gb(n: float) -> str:
    return f"{n / 1e9:.1f} GB"


def memory_refusal(
    name: str,
    weights: dict[str, int],
    dtype: torch.dtype,
    device: torch.device,
    room: dict[str, int] | None = None,
) -> str | None:
    """Why a model of ``weights`` bytes per dtype name (its parameters in each dtype it could be
    loaded in) cannot be loaded in ``dtype`` on ``device``, or None when it fits: the weights
    plus ``ACTIVATION_MARGIN_BYTES`` against ``free_bytes``, or against the sum of ``room``
    (each device's bytes a device map may fill) when given. The message says how to get under
    the figure: a smaller dtype that would fit, else a smaller model."""
    free = free_bytes(device) if room is None else sum(room.values())
    where = str(device)
    if room is not None:
        where = f"the devices it may use ({', '.join(f'{k} {gb(v)}' for k, v in room.items())})"
    chosen = dtype_name(dtype)
    need = weights[chosen] + ACTIVATION_MARGIN_BYTES
    if free is None or need <= free:
        return None
    smaller = sorted((v, k) for k, v in weights.items() if v < weights[chosen])
    fit = [f"--dtype {k} ({gb(v + ACTIVATION_MARGIN_BYTES)})" for v, k in smaller
           if v + ACTIVATION_MARGIN_BYTES <= free]  # fmt: skip
    if fit:
        way = f"{' or '.join(fit)} would fit"
    elif smaller:
        v, k = smaller[0]
        way = f"a smaller model (even --dtype {k} needs {gb(v + ACTIVATION_MARGIN_BYTES)})"
    else:
        way = "a smaller model"
    return (
        f"model {name} needs {gb(need)} ({gb(weights[chosen])} of {chosen} weights and "
        f"{gb(ACTIVATION_MARGIN_BYTES)} for activations), {gb(free)} free on {where}: {way}"
    )
