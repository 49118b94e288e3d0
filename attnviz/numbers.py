"""Numbers as a person reads them in text the server writes (a Learn check's answer, a training
claim's sentence), by the very rules of the page's ``static/js/core/numbers.js``: ``readable``
is its ``readable()`` (3 significant digits), ``js_number`` JavaScript's ``String(x)``. The exact
values stay in the API's numbers, the tables, CSV and exports; a refusal's figures (a cap, a
size) stay exact too."""

from __future__ import annotations

import math
import struct
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import SupportsFloat

# Enough digits for any float64's exact value (at most 767 significant digits, but a rounding
# to a step of 1 or more never needs more than its 309 whole digits).
_PRECISION = 800


def js_number(shortest: str) -> str:
    """A number's shortest round-trip digits (``repr`` of a float, ``str`` of a numpy float32)
    spelled as ECMAScript's ``Number::toString`` spells them: ``1e-07`` -> ``1e-7``, ``1e+16``
    -> ``10000000000000000``, ``-0.0`` -> ``0``."""
    value = float(shortest)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign, digits, exponent = Decimal(shortest).normalize().as_tuple()
    assert isinstance(exponent, int)
    s = "".join(map(str, digits))
    k = len(s)
    n = exponent + k  # value = 0.s x 10^n
    if k <= n <= 21:
        body = s + "0" * (n - k)
    elif 0 < n <= 21:
        body = f"{s[:n]}.{s[n:]}"
    elif -6 < n <= 0:
        body = f"0.{'0' * -n}{s}"
    else:
        e = n - 1
        body = (s if k == 1 else f"{s[0]}.{s[1:]}") + f"e{'+' if e >= 0 else '-'}{abs(e)}"
    return ("-" if sign else "") + body


def _float32(x: float) -> float:
    """``Math.fround(x)``: the float32 nearest ``x``, as a float."""
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


def _rounded(x: float, step_exponent: int) -> float:
    """``x`` (finite, not 0) rounded to a multiple of 10**step_exponent from its exact binary
    value, halves away from zero (as ``toPrecision`` and ``Math.round`` of a positive number
    round), read back as the nearest float (as ``Number()`` reads the digits)."""
    with localcontext(prec=_PRECISION):
        return float(Decimal(x).quantize(Decimal(1).scaleb(step_exponent), ROUND_HALF_UP))


def _to_precision(x: float, p: int) -> float:
    """``Number(x.toPrecision(p))``."""
    return _rounded(x, Decimal(x).adjusted() - p + 1)


def _as_float32_spells_it(v: float) -> float:
    """numbers.js ``Number(exact(v, "F32"))``: the fewest significant digits of ``v`` (up to 9)
    that read back as the float32 nearest it."""
    f = _float32(v)
    for p in range(1, 9):
        short = _to_precision(v, p)
        if _float32(short) == f:
            return short
    return _to_precision(v, 9)


def readable(v: SupportsFloat | None, dtype: str = "F64") -> str:
    """A number as a person reads it, in text: 3 significant digits (14.620398596252752 reads
    "14.6", 0.000123456 "0.000123"), a number of 1000 or more rounded to a whole one (1234.5
    reads "1235"), never "-0"; under 0.000001 JavaScript's exponent form ("1.23e-7"). Halves
    round away from zero, from the float's exact value (2.675 reads "2.67"). A float32 ("F32")
    is first read as its shortest digits. None and -inf (a masked score) read "masked". The
    same string as numbers.js ``readable(v, dtype)`` gives, for every float."""
    if v is None:
        return "masked"
    x = float(v)
    if x == -math.inf:
        return "masked"
    if not math.isfinite(x):
        return js_number(repr(x))
    if x == 0:
        return "0"
    if dtype == "F32":
        x = _as_float32_spells_it(x)
    step = 0 if abs(x) >= 1000 else Decimal(x).adjusted() - 2
    return js_number(repr(_rounded(x, step)))


def signed(v: SupportsFloat) -> str:
    """A signed change or contribution as the page writes one: "+10.6", "−0.0523" (a minus
    sign, U+2212), "0"; the size as ``readable`` says it."""
    x = float(v)
    size = readable(abs(x))
    if size == "0" or not math.isfinite(x):
        return readable(x)
    return ("+" if x > 0 else "\u2212") + size
