"""attnviz.numbers, the server's readable numbers, says every number as the page's numbers.js
does: readable() run in Node over 200,000 values (random magnitudes from 1e-9 to 1e7, the
decimal halves where rounding turns and their neighbouring floats, the edges at 1000 and 0.000001,
float32 values as the API spells them) gives the very strings attnviz.numbers.readable gives; and
the rules that keep a sentence true (issue 41: readableWeight, readableShare, readablePercent,
readableProse, readableSpan, readableAgainst) give the strings their Python twins give, at their edges and over
random values. Their edge values are pinned here too, and readable_points' (a difference of
shares in points, which only the server says)."""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from attnviz.numbers import (
    js_number,
    readable,
    readable_against,
    readable_percent,
    readable_points,
    readable_prose,
    readable_share,
    readable_span,
    readable_weight,
    signed,
)

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


# -- issue 41: a sentence rounding must not make false ---------------------------------------------

SENTENCES = """
import { readFileSync } from "node:fs";
import * as n from "./static/js/core/numbers.js";
const { values, spans, against } = JSON.parse(readFileSync(process.argv[1], "utf8"));
const one = ["readableWeight", "readableShare", "readablePercent", "readableProse"];
const out = Object.fromEntries(one.map((f) => [f, values.map((v) => n[f](v))]));
out.readableSpan = spans.map(([lo, hi, w]) => n.readableSpan(lo, hi, w ? n.readableWeight : undefined));
out.readableAgainst = against.map(([v, m, w]) => n.readableAgainst(v, m, w ? n.readableWeight : undefined));
console.log(JSON.stringify(out));
"""

PY = {
    "readableWeight": readable_weight,
    "readableShare": readable_share,
    "readablePercent": readable_percent,
    "readableProse": readable_prose,
}

# Where the rules turn: 0 and 1 and the floats beside them, 0.001 and 0.999 either side, the
# halves of a percentage at 0.5% and 99.5%, 0.000001 (where one digit would need an exponent),
# the smallest float.
EDGES = [
    0.0, -0.0, 1.0, 0.999, 0.001, 0.0005, 0.9995, 0.005, 0.995, 0.0049999999, 0.9949999999,
    1e-6, 9.5e-7, 9.49e-7, 1.5e-6, 5e-324, 0.0000759, 5.33e-10, 0.5, 0.2, 1.5, -0.0000759, -1e-9,
    -0.995, 2.0, 1234.5,
]  # fmt: skip


def _sentence_values(n: int) -> list[float]:
    rng = random.Random(41)
    out = list(EDGES)
    for e in (0.0, 1.0, 0.001, 0.999, 1e-6, 0.005, 0.995):
        out += [float(np.nextafter(e, -1.0)), float(np.nextafter(e, 2.0))]
    for _ in range(n // 2):  # a weight, 0 to 1, and one near either end
        out.append(rng.random())
        out.append(rng.choice((0.0, 1.0)) + rng.choice((-1, 1)) * 10.0 ** rng.uniform(-12, -1))
    while len(out) < n:  # any magnitude, either sign
        out.append(rng.choice((-1, 1)) * 10.0 ** rng.uniform(-12, 4))
    return out


def _spans(values: list[float]) -> list[tuple[float, float, bool]]:
    rng = random.Random(42)
    out = []
    for v in values[:2000]:
        for hi in (v, v * (1 + 10.0 ** rng.uniform(-9, -1)), rng.choice(values)):
            out.append((min(v, hi), max(v, hi), rng.random() < 0.5))
    return out


def _against(values: list[float]) -> list[tuple[float, float, bool]]:
    """A value beside a mark: at it, a hair either side, and anywhere."""
    rng = random.Random(43)
    out = []
    for mark in (0.4, 0.5, 0.35, 0.01, 0.999, 0.001, 1.0, 3.2, 0.0000759):
        for d in (0.0, 1e-9, 1e-5, 4e-4, 0.004):
            for v in (mark - d * mark, mark + d * mark):
                out.append((v, mark, rng.random() < 0.5))
    out += [(v, rng.choice(values), rng.random() < 0.5) for v in values[:5000]]
    return out


@pytest.mark.slow
def test_the_sentence_rules_say_each_number_as_numbers_js_does(tmp_path):
    assert NODE, "node is not installed (make install-dev installs what the tests need)"
    values = _sentence_values(40_000)
    spans = _spans(values)
    against = _against(values)
    cases = {"values": values, "spans": spans, "against": against}
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    done = subprocess.run(
        [NODE, "--input-type=module", "-e", SENTENCES, str(tmp_path / "cases.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    js = json.loads(done.stdout)
    for name, rule in PY.items():
        py = [rule(v) for v in values]
        differ = [(v, a, b) for v, a, b in zip(values, js[name], py, strict=True) if a != b]
        assert not differ, f"{name}: {len(differ)} differ, e.g. (value, JS, Python): {differ[:5]}"
    py = [readable_span(lo, hi, readable_weight if w else readable_prose) for lo, hi, w in spans]
    differ = [(s, a, b) for s, a, b in zip(spans, js["readableSpan"], py, strict=True) if a != b]
    assert not differ, f"readableSpan: {len(differ)} differ, e.g. {differ[:5]}"
    py = [readable_against(v, m, readable_weight if w else readable_prose) for v, m, w in against]
    differ = [
        (c, a, b) for c, a, b in zip(against, js["readableAgainst"], py, strict=True) if a != b
    ]
    assert not differ, f"readableAgainst: {len(differ)} differ, e.g. {differ[:5]}"


@pytest.mark.parametrize(
    ("value", "weight", "share"),
    [
        (1.0, "1", "all"),
        (0.0, "0", "none"),
        (-0.0, "0", "none"),
        (0.99995, "over 0.999", "almost all (over 0.999)"),
        (float(np.nextafter(1.0, 0.0)), "over 0.999", "almost all (over 0.999)"),
        (0.9991, "over 0.999", "almost all (over 0.999)"),
        (0.999, "0.999", "0.999"),
        (0.9984, "0.998", "0.998"),
        (0.652405, "0.652", "0.652"),
        (0.001, "0.001", "0.001"),
        (0.0000759, "under 0.001", "almost none (under 0.001)"),
        (5e-324, "under 0.001", "almost none (under 0.001)"),
        (None, "masked", "masked"),
    ],
)
def test_a_weight_reads_1_or_0_only_when_it_is(value, weight, share):
    assert readable_weight(value) == weight
    assert readable_share(value) == share


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (1.0, "100%"),
        (0.0, "0%"),
        (0.996, "over 99%"),
        (0.995, "over 99%"),  # 99.5 rounds up, to 100
        (0.9949, "99%"),
        (0.004, "under 1%"),
        (0.005, "1%"),
        (0.47, "47%"),
        (1.2, "120%"),
        (-0.004, "0%"),
    ],
)
def test_a_percentage_reads_100_or_0_only_when_it_is(value, said):
    assert readable_percent(value) == said


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (0.47, "47 points"),
        (0.01, "1 point"),
        (-0.01, "-1 point"),
        (-0.03, "-3 points"),
        (0.005, "1 point"),  # half a point rounds away from zero (round() made it 0)
        (0.025, "3 points"),  # not round()'s half to even, 2
        (0.004, "0.4 points"),  # never "0 points" for a difference that is not none
        (-0.004, "-0.4 points"),
        (0.0000759, "0.00759 points"),
        (1e-12, "practically zero points"),
        (0.0, "0 points"),
        (-0.0, "0 points"),
        (0.996, "99.6 points"),  # never "100 points" short of all of it
        (1.0, "100 points"),
        (1.2, "120 points"),
    ],
)
def test_a_difference_of_shares_reads_0_or_100_points_only_when_it_is(value, said):
    assert readable_points(value) == said


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (0.0000759, "about 0.00008"),
        (-0.0000759, "about -0.00008"),
        (0.00054, "about 0.0005"),
        (0.00099996, "about 0.001"),
        (0.001, "0.001"),
        (0.0587, "0.0587"),
        (14.6204, "14.6"),
        (1.5e-6, "about 0.000002"),
        (9.6e-7, "about 0.000001"),  # rounds to 0.000001: no exponent needed
        (9.4e-7, "practically zero"),
        (5.33e-10, "practically zero"),
        (-1e-17, "practically zero"),
        (0.0, "0"),
        (None, "masked"),
    ],
)
def test_a_small_number_in_prose_reads_without_an_exponent(value, said):
    assert readable_prose(value) == said


def test_a_number_beside_its_mark_reads_as_the_mark_only_when_it_is_it():
    assert readable_against(0.39996, 0.4) == "just under 0.4"
    assert readable_against(0.40004, 0.4) == "just over 0.4"
    assert readable_against(0.4, 0.4) == "0.4"
    assert readable_against(0.38, 0.4) == "0.38"
    assert readable_against(0.0099996, 0.01) == "just under 0.01"
    assert readable_against(0.34996, 0.35, readable_share) == "just under 0.35"
    assert readable_against(0.3496, 0.35, readable_percent) == "just under 35%"


def test_a_range_whose_ends_read_alike_reads_as_one_value():
    assert readable_span(0.19996, 0.20004) == "all about 0.2"
    assert readable_span(0.2, 0.2) == "all 0.2"
    assert readable_span(0.198, 0.202) == "from 0.198 to 0.202"
    assert readable_span(5e-10, 0.00004) == "from practically zero to about 0.00004"
    assert readable_span(3e-10, 4e-10) == "all practically zero"
    assert readable_span(0.9993, 0.9998, readable_weight) == "all over 0.999"
    assert readable_span(0.0002, 0.9998, readable_weight) == "from under 0.001 to over 0.999"
