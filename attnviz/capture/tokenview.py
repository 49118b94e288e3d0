"""Which rows and columns of a trace's attention to show: every token, without the special tokens
([CLS], [SEP], ...), and/or with word pieces merged into words.

Rules, applied in this order:
- hide_special: drop the special tokens' rows and columns, then divide each remaining row by its
  sum, so that every row again sums to 1.
- merge_words: adjacent tokens that share a ``words`` index become one word; attention TO a word
  is the sum of its pieces' columns, attention FROM a word the mean of its pieces' rows. Rows
  that summed to 1 still do. Special tokens (word None) stay single tokens.

Both are computed here, once, in float64 from the model's float32 weights; the page only draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attnviz.engine.reduce import regroup

HIDE_NOTE = "Special tokens hidden; each row renormalised to sum to 1."
MERGE_NOTE = (
    "Word pieces merged: attention to a word is summed over its pieces, attention from a word "
    "averaged."
)


@dataclass(frozen=True)
class TokenView:
    """The groups of original token indices shown as rows and columns, in text order."""

    groups: list[list[int]]
    labels: list[str]
    hide_special: bool
    merge_words: bool

    @property
    def identity(self) -> bool:
        """True when every token is its own row, in order: the matrices are shown as they are."""
        return not self.hide_special and not self.merge_words

    @property
    def note(self) -> str:
        """In words, what the options did to the numbers (empty when nothing)."""
        return " ".join(
            text
            for on, text in ((self.hide_special, HIDE_NOTE), (self.merge_words, MERGE_NOTE))
            if on
        )

    def meta(self) -> dict:
        return {
            "hide_special": self.hide_special,
            "merge_words": self.merge_words,
            "labels": self.labels,
            "groups": self.groups,
            "note": self.note,
        }

    def apply(self, pattern: torch.Tensor, renormalise: bool = True) -> torch.Tensor:
        """(..., T, T) attention -> (..., m, m) under the options: float64, or the very tensor
        when nothing changes. Not ``renormalise``: hidden special tokens' columns are dropped,
        the rows kept as they are (value-weighted norms, which no row sum bounds)."""
        if self.identity:
            return pattern
        return regroup(pattern, self.groups, self.hide_special, self.merge_words, renormalise)

    def row(self, index: int) -> int:
        """The row that shows original token ``index``; ValueError when it is hidden."""
        for r, group in enumerate(self.groups):
            if index in group:
                return r
        raise ValueError(f"token {index + 1} is hidden (a special token)")

    def mean_points(self, x: torch.Tensor) -> torch.Tensor:
        """(..., T, k) points of the tokens -> (..., m, k) float64: each row's point, the mean of
        its tokens' points (a word's is the mean of its pieces'; for an affine map such as a PCA
        projection, the projection of their mean). The very tensor when nothing changes."""
        if self.identity:
            return x
        member = torch.zeros(len(self.groups), x.shape[-2], dtype=torch.float64, device=x.device)
        for g, members in enumerate(self.groups):
            member[g, members] = 1.0 / len(members)
        return member @ x.double()


def _label(tokens: Sequence[str], group: list[int], offsets, text: str | None) -> str:
    """A word's label: the text it covers when offsets are known, else its pieces joined."""
    if len(group) == 1:
        return tokens[group[0]]
    if offsets is not None and text is not None:
        start, end = offsets[group[0]][0], offsets[group[-1]][1]
        if end > start:
            return text[start:end]
    return "".join(
        tokens[i] if k == 0 else tokens[i].removeprefix("##") for k, i in enumerate(group)
    )


def token_view(
    tokens: Sequence[str],
    *,
    special: Sequence[bool] | None = None,
    words: Sequence[int | None] | None = None,
    offsets: Sequence[Sequence[int]] | None = None,
    text: str | None = None,
    hide_special: bool = False,
    merge_words: bool = False,
) -> TokenView:
    """The rows and columns to show for a trace's tokens under the two options."""
    n = len(tokens)
    special = special if special is not None else [False] * n
    words = words if words is not None else [None] * n
    groups: list[list[int]] = []
    for i in range(n):
        if hide_special and special[i]:
            continue
        last = groups[-1] if groups else None
        w = words[i]
        joins = last is not None and last[-1] == i - 1 and words[i - 1] == w
        if merge_words and w is not None and joins and last is not None:
            last.append(i)
        else:
            groups.append([i])
    labels = [_label(tokens, g, offsets, text) for g in groups]
    return TokenView(groups, labels, hide_special, merge_words)
