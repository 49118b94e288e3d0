"""Plain-Python versions of rules the tests check the code against."""

from __future__ import annotations

import math
import struct
from decimal import ROUND_HALF_UP, Decimal

from attnviz import numbers


def f32(x):
    """JSON numbers of a float32 array (the shortest digits that identify each) as the exact
    float32 values the server holds, as Python floats; nested lists and nulls kept."""
    if isinstance(x, list):
        return [f32(v) for v in x]
    return None if x is None else struct.unpack("<f", struct.pack("<f", x))[0]


def js_number(x: float) -> str:
    """JavaScript's String(x) of a float (attnviz.numbers.js_number of its shortest digits)."""
    return numbers.js_number(repr(float(x)))


# numbers.js readable(v, dtype), the package's own twin: what the page writes in text, a tooltip
# or a live region (tests/test_numbers.py checks it against numbers.js over 200,000 values).
readable = numbers.readable


def cell_value(v: float, dtype: str = "F64") -> str:
    """views/describe.js cellValue(v, dtype): a cell's value in a plot's summary, as readable()
    says it, but a weight within 0.001 of 1 or 0 and not on it "over 0.999" / "under 0.001"
    (a cosine short of -1 "under -0.999"), a small negative score as readable_prose says it."""
    if 0 < v < 1:
        hedged = numbers.readable_weight(v)
        if not (hedged[0].isdigit() or hedged[0] == "-"):
            return hedged
    if -1 < v < -0.999:
        return "under -0.999"
    return numbers.readable_prose(v) if -0.001 < v < 0 else readable(v, dtype)


def scene_groups(points: list[list[float]], spans: list[float], near: float = 0.1):
    """core/labels.js sceneGroups: the tokens that share a live 3-D scene's label. Each point, in
    order, joins the first group whose first point is within `near` of it (each axis divided by
    its span; Euclidean), else starts one. Returns each group's token indices, in order."""
    groups: list[tuple[list[float], list[int]]] = []
    for i, p in enumerate(points):
        q = [v / (s or 1) for v, s in zip(p, spans, strict=True)]
        home = next((g for g in groups if math.dist(g[0], q) < near), None)
        if home:
            home[1].append(i)
        else:
            groups.append((q, [i]))
    return [members for _, members in groups]


def readable_count(n: int) -> str:
    """numbers.js readableCount(n): a count as a sentence says it, whole with thousands
    separators up to 9,999, else to 3 significant digits, halves away from zero ("55,000"),
    from a million in words ("1.23 million", "2.5 billion")."""
    if abs(n) < 10_000:
        return f"{n:,}"
    step = Decimal(1).scaleb(len(str(abs(n))) - 3)
    r = int(Decimal(n).quantize(step, rounding=ROUND_HALF_UP))
    for size, word in ((10**9, "billion"), (10**6, "million")):
        if abs(r) >= size:
            return f"{(Decimal(r) / size).normalize():f} {word}"
    return f"{r:,}"


def token_groups(trace: dict, hide_special: bool, merge_words: bool) -> list[list[int]]:
    """The rows and columns shown: special tokens dropped, adjacent pieces of a word joined."""
    groups: list[list[int]] = []
    for i, word in enumerate(trace["words"]):
        if hide_special and trace["special"][i]:
            continue
        last = groups[-1] if groups else None
        joins = last and last[-1] == i - 1 and trace["words"][i - 1] == word
        if merge_words and word is not None and joins:
            last.append(i)
            continue
        groups.append([i])
    return groups


def token_view_oracle(trace: dict, layer: int, head: int, hide_special: bool, merge_words: bool):
    """One head's attention under the options: rows renormalised over the kept columns when the
    special tokens are hidden; columns summed and rows averaged within a word. From the exact
    float32 weights (a model's JSON trace spells them in the digits that identify them), in
    float64."""
    a = f32(trace["attentions"][layer][head])
    kept = [i for i in range(trace["n"]) if not (hide_special and trace["special"][i])]
    rows = {}
    for i in kept:
        row = {j: a[i][j] for j in kept}
        total = sum(row.values()) if hide_special else 1.0
        rows[i] = {j: v / total for j, v in row.items()}
    groups = token_groups(trace, hide_special, merge_words)
    return [
        [sum(rows[i][j] for i in g for j in h) / len(g) for h in groups] for g in groups
    ], groups
