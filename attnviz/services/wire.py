"""Numbers on the JSON wire."""

from __future__ import annotations

import torch

_POW10 = torch.tensor([10.0**i for i in range(23)], dtype=torch.float64)  # each one exact


def wire(t: torch.Tensor) -> list:
    """A tensor as nested lists for JSON. float64 goes as it is. float32 goes as the float64
    nearest to its value rounded to 9 significant digits: 9 digits always identify a float32
    (``Math.fround`` of the number gives the exact float32 back), and the JSON text is about
    half as long as the 17 digits a widened float32 needs (0.0123456789, not
    0.012345678907585144)."""
    t = t.detach().cpu()
    if t.dtype != torch.float32:
        return t.tolist()
    x = t.double()
    p = 8 - torch.floor(torch.log10(x.abs()))  # decimals that leave 9 significant digits
    ok = torch.isfinite(p) & (p >= 0) & (p <= 22)  # else (0, |x| >= 1e9 or < 1e-14): as is
    scale = _POW10[torch.where(ok, p, 0).long()]
    # k / 10^p with k an exact integer is correctly rounded: the nearest double to the decimal.
    return torch.where(ok, torch.round(x * scale) / scale, x).tolist()
