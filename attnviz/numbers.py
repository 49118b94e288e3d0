"""Numbers as a person reads them in text the server writes (a Learn check's answer, a training
claim's sentence), by the very rules of the page's ``static/js/core/numbers.js``: ``readable``
is its ``readable()`` (3 significant digits), ``js_number`` JavaScript's ``String(x)``, and
``readable_weight``, ``readable_share``, ``readable_percent``, ``readable_prose``,
``readable_span`` and ``readable_against`` its ``readableWeight()``..., which keep a sentence true
where rounding would not (a weight of 0.9996 never reads "1", a range never "from 0.2 to 0.2");
``readable_points`` says a difference of shares in percentage points ("0.4 points", never "0
points" for a difference that is not none), which the page never says.
The exact values stay in the API's numbers, the tables, CSV and exports; a refusal's figures (a
cap, a size) stay exact too."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
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
    """A signed change or contribution as the page writes one (numbers.js ``readableSigned``):
    "+10.6", "−0.0523" (a minus sign, U+2212), "0"; the size as ``readable`` says it."""
    x = float(v)
    size = readable(abs(x))
    if size == "0" or not math.isfinite(x):
        return readable(x)
    return ("+" if x > 0 else "\u2212") + size


# A number in a learner's sentence never reads as a value it is not (numbers.js says the same,
# by the same rules; tests/test_numbers.py checks the two agree): a weight or share (0 to 1)
# within EDGE of 0 or 1, but not on it, reads "under 0.001" or "over 0.999", never "0" or "1"; a
# number under EDGE in size reads to one significant digit, "about 0.00008", and one that would
# round under 0.000001 "practically zero" (never JavaScript's "5.33e-10"); two ends of a range
# that read alike read as one value; a number beside the mark it is checked against never reads
# as the mark unless it is it ("just under 0.4"). The exact values stay in the API, tables, CSV
# and exports.
EDGE = 0.001


def readable_weight(v: SupportsFloat | None) -> str:
    """A weight, or another share of a whole (0 to 1), in a sentence: as ``readable`` says it,
    but within 0.001 of 0 or 1 and not on it, "under 0.001" or "over 0.999" (0.9996 reads
    "over 0.999", never "1"; 0.0000759 "under 0.001"). A value outside 0 to 1, as
    ``readable``."""
    if v is None:
        return readable(v)
    x = float(v)
    if 1 - EDGE < x < 1:
        return f"over {readable(1 - EDGE)}"
    if 0 < x < EDGE:
        return f"under {readable(EDGE)}"
    return readable(x)


def readable_share(v: SupportsFloat | None) -> str:
    """A share of a whole as a sentence says it before "of its attention": "all" (exactly 1),
    "none" (exactly 0), "almost all (over 0.999)", "almost none (under 0.001)", else as
    ``readable`` says it ("0.652")."""
    if v is None:
        return readable(v)
    x = float(v)
    if x == 1:
        return "all"
    if x == 0:
        return "none"
    said = readable_weight(x)
    if said.startswith("over"):
        return f"almost all ({said})"
    if said.startswith("under"):
        return f"almost none ({said})"
    return said


def _js_round(x: float) -> int:
    """JavaScript's ``Math.round(x)``: the nearest whole number, a half toward +infinity."""
    with localcontext(prec=_PRECISION):
        return math.floor(Decimal(x) + Decimal("0.5"))


def readable_percent(v: SupportsFloat) -> str:
    """A share (0 to 1) as a whole percentage: "47%", "100%" only when it is all of it and "0%"
    only when none; one that would round to either reads "over 99%" or "under 1%"."""
    x = float(v)
    if not math.isfinite(x):
        return readable(x)
    n = _js_round(100 * x)
    if n == 100 and x < 1:
        return "over 99%"
    if n == 0 and x > 0:
        return "under 1%"
    return f"{n}%"


def readable_points(v: SupportsFloat) -> str:
    """A difference of two shares in percentage points, as a sentence says it beside shares
    said by ``readable_percent``: whole, halves away from zero ("47 points", "1 point", "-3
    points"); one that whole points would say as a value it is not, "0 points" for a difference
    under half a point or "100 points" for one short of all of it, as ``readable_prose`` says
    it (0.004 reads "0.4 points", 0.996 "99.6 points", 1e-9 "practically zero points"). "0
    points" only when there is no difference. (The page says no difference of shares: this rule
    has no twin in numbers.js.)"""
    x = float(v)
    if not math.isfinite(x):
        return readable(x)
    n = _js_round(100 * abs(x))
    if (n == 0 and x != 0) or (n == 100 and abs(x) < 1):
        said = readable_prose(100 * x)
    else:
        said = str(-n if x < 0 else n)
    return f"{said} point{'' if said in ('1', '-1') else 's'}"


def readable_prose(v: SupportsFloat | None) -> str:
    """A number in a sentence: as ``readable`` says it (3 significant digits), but under 0.001
    in size to one significant digit, "about 0.00008" (0.0000759), and what would round under
    0.000001 "practically zero" (5.33e-10). Exactly 0 reads "0"."""
    if v is None:
        return readable(v)
    x = float(v)
    if not math.isfinite(x) or x == 0 or abs(x) >= EDGE:
        return readable(x)
    r = _to_precision(x, 1)
    if abs(r) < 1e-6:
        return "practically zero"
    return f"about {js_number(repr(r))}"


def readable_span(
    low: SupportsFloat, high: SupportsFloat, say: Callable[[float], str] = readable_prose
) -> str:
    """A range in a sentence, each end as ``say`` says it: "from 0.198 to 0.202"; ends that read
    alike read as one value, "all about 0.2" ("all 0.2" when they are equal; "all under 0.001"
    when ``say`` already hedges it)."""
    lo, hi = float(low), float(high)
    a, b = say(lo), say(hi)
    if a != b:
        return f"from {a} to {b}"
    if lo == hi or not (a[0].isdigit() or a[0] == "-"):
        return f"all {a}"
    return f"all about {a}"


def readable_against(
    v: SupportsFloat, mark: SupportsFloat, say: Callable[[float], str] = readable_prose
) -> str:
    """A number said beside the mark it is checked against, as ``say`` says it, but never as the
    mark when it is not the mark: 0.39996 against 0.4 reads "just under 0.4" (a head that
    "scores 0.4" must pass a mark of 0.4), 0.50002 against 0.5 "just over 0.5"."""
    x, m = float(v), float(mark)
    said = say(x)
    if x == m or said != say(m):
        return said
    return f"just {'under' if x < m else 'over'} {said}"
