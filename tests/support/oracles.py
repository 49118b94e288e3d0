"""Plain-Python versions of rules the tests check the code against."""

from __future__ import annotations

import struct


def f32(x):
    """JSON numbers of a float32 array (the shortest digits that identify each) as the exact
    float32 values the server holds, as Python floats; nested lists and nulls kept."""
    if isinstance(x, list):
        return [f32(v) for v in x]
    return None if x is None else struct.unpack("<f", struct.pack("<f", x))[0]


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
