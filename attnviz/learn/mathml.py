"""The steps' formulas as presentation MathML, built from a few functions so that every formula
is well-formed and uses only the elements in ``ELEMENTS`` (what the page imports from the
string, and nothing else).

``math(...)`` returns the whole ``<math display="block">`` string; text is escaped here.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

# Every element a formula may use: presentation MathML only, no attributes but ``display`` on
# <math> and ``width`` on <mspace>.
ELEMENTS = (
    "math",
    "mrow",
    "mi",
    "mn",
    "mo",
    "mtext",
    "mfrac",
    "msqrt",
    "msup",
    "msub",
    "msubsup",
    "munderover",
    "mspace",
)


def _node(tag: str, *children: str) -> str:
    return f"<{tag}>{''.join(children)}</{tag}>"


def mi(name: str) -> str:
    """An identifier: x, W, softmax (several letters are set upright)."""
    return _node("mi", escape(name))


def mn(number: str) -> str:
    return _node("mn", escape(number))


def mo(op: str) -> str:
    return _node("mo", escape(op))


def mtext(text: str) -> str:
    return _node("mtext", escape(text))


def row(*children: str) -> str:
    return _node("mrow", *children)


def frac(num: str, den: str) -> str:
    return _node("mfrac", num, den)


def sqrt(*children: str) -> str:
    return _node("msqrt", *children)


def sup(base: str, exp: str) -> str:
    return _node("msup", base, exp)


def sub(base: str, index: str) -> str:
    return _node("msub", base, index)


def subsup(base: str, index: str, exp: str) -> str:
    return _node("msubsup", base, index, exp)


def sum_over(low: str, high: str) -> str:
    """A Σ with limits below and above."""
    return _node("munderover", mo("∑"), low, high)


def gap() -> str:
    """A wide space between two equations of one formula."""
    return '<mspace width="1.5em"></mspace>'


def words(text: str) -> str:
    """A word or two inside a formula ("when", "pre-norm:"), with a little space each side."""
    space = '<mspace width="0.4em"></mspace>'
    return row(space, mtext(text), space)


def T(base: str) -> str:
    """``base`` transposed: base with ⊤ above right."""
    return sup(base, mi("⊤"))


def call(name: str, *args: str) -> str:
    """name(args...) with the arguments separated by commas."""
    inner: list[str] = []
    for i, a in enumerate(args):
        if i:
            inner.append(mo(","))
        inner.append(a)
    return row(mi(name), mo("("), *inner, mo(")"))


def math(*children: str) -> str:
    return f'<math display="block">{"".join(children)}</math>'
