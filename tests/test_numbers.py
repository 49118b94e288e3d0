"""attnviz.numbers, the server's readable numbers, says every number as the page's numbers.js
does: readable() run in Node over 200,000 values (random magnitudes from 1e-9 to 1e7, the
decimal halves where rounding turns and their neighbouring floats, the edges at 1000 and 0.000001,
float32 values as the API spells them) gives the very strings attnviz.numbers.readable gives."""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from attnviz.numbers import js_number, readable, signed

ROOT = Path(__file__).resolve().parents[1]
NODE = shutil.which("node")

READABLE = """
import { readFileSync } from "node:fs";
import { readable } from "./static/js/core/numbers.js";
const cases = JSON.parse(readFileSync(process.argv[1], "utf8"));
console.log(JSON.stringify(cases.map(([v, dtype]) => readable(v, dtype))));
"""


def _values(n: int) -> list[tuple[float, str]]:
    rng = random.Random(41)
    out: list[tuple[float, str]] = []
    for _ in range(n // 2):  # any magnitude, either sign
        out.append((rng.choice((-1, 1)) * rng.uniform(1, 10) * 10.0 ** rng.randint(-9, 7), "F64"))
    for _ in range(n // 5):  # a decimal half at the third digit, and the floats either side
        x = (rng.randint(100, 9999) + 0.5) * 10.0 ** rng.randint(-9, 1)
        out.append((rng.choice((-1, 1)) * float(np.nextafter(x, rng.choice((0, math.inf)))), "F64"))
        out.append((x, "F64"))
    for _ in range(n // 20):  # at 1000, where whole numbers start, and at 0.000001
        out.append(
            (
                rng.choice((999.5, 999.4999, 1000.5, 1e-6, 9.995e-7)) * rng.uniform(0.999, 1.001),
                "F64",
            )
        )
    while len(out) < n:  # float32 values as the API's JSON spells them: their shortest digits
        x = np.float32(rng.choice((-1, 1)) * rng.uniform(1, 10) * 10.0 ** rng.randint(-8, 5))
        out.append((float(str(x)), "F32"))
    return out + [(0.0, "F64"), (-0.0, "F64"), (5e-324, "F64"), (1e21, "F64"), (1.7e308, "F64")]


@pytest.mark.slow
def test_readable_says_each_number_as_numbers_js_does(tmp_path):
    assert NODE, "node is not installed (make install-dev installs what the tests need)"
    cases = _values(200_000)
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    done = subprocess.run(
        [NODE, "--input-type=module", "-e", READABLE, str(tmp_path / "cases.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    js = json.loads(done.stdout)
    py = [readable(v, dtype) for v, dtype in cases]
    differ = [(v, d, a, b) for (v, d), a, b in zip(cases, js, py, strict=True) if a != b]
    assert not differ, (
        f"{len(differ)} differ, e.g. (value, dtype, numbers.js, Python): {differ[:5]}"
    )


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (18.18366, "18.2"),
        (10.6412, "10.6"),
        (1.0, "1"),
        (0.99995, "1"),
        (2.725, "2.73"),  # the float just above 2.725
        (2.675, "2.67"),  # the float just below 2.675
        (0.000123456, "0.000123"),
        (1.2345e-7, "1.23e-7"),
        (-0.1234, "-0.123"),
        (1234.5, "1235"),
        (-1234.5, "-1235"),
        (-0.0, "0"),
        (None, "masked"),
        (-math.inf, "masked"),
        (math.inf, "Infinity"),
        (math.nan, "NaN"),
    ],
)
def test_readable_to_three_significant_digits(value, said):
    assert readable(value) == said


def test_a_float32_is_read_as_the_api_spells_it_then_rounded():
    f = float(np.float32(0.1015))  # 0.10149999707...; the API spells it 0.1015
    assert readable(f) == "0.101"
    assert readable(f, "F32") == readable(0.1015) == "0.102"


def test_signed_and_js_number():
    assert [signed(v) for v in (10.6412, -0.052349, 0.0, -0.0)] == ["+10.6", "−0.0523", "0", "0"]
    assert [js_number(s) for s in ("1e-07", "1e+16", "-0.0", "1e+21", "0.1")] == [
        "1e-7",
        "10000000000000000",
        "0",
        "1e+21",
        "0.1",
    ]
