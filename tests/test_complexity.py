"""No function of the package branches past a cyclomatic complexity of 25, radon's count (each
if, loop, boolean operator, except and comprehension's condition adds one): one past it is split
into the steps it takes (docs/contributing.md, "Standards")."""

from __future__ import annotations

from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Class, Function

PACKAGE = Path(__file__).resolve().parents[1] / "attnviz"
MOST = 25


def functions(blocks: list) -> list[Function]:
    """Every function and method of radon's blocks, nested ones (closures) too."""
    out = []
    for block in blocks:
        if isinstance(block, Class):
            out += functions(block.methods)
        elif isinstance(block, Function):
            out += [block, *functions(block.closures)]
    return out


def test_no_function_of_the_package_is_past_the_most_complexity():
    over = [
        f"{path.relative_to(PACKAGE.parent)}:{f.lineno} {f.fullname} ({f.complexity})"
        for path in sorted(PACKAGE.rglob("*.py"))
        for f in functions(cc_visit(path.read_text(encoding="utf-8")))
        if f.complexity > MOST
    ]
    assert over == []


def test_the_count_is_radons_own_and_finds_a_nested_function():
    source = "def outer(x):\n    def inner(y):\n" + "".join(
        f"        if y == {i}:\n            return {i}\n" for i in range(MOST)
    ) + "    return inner(x)\n"  # fmt: skip
    found = {f.fullname: f.complexity for f in functions(cc_visit(source))}
    assert found == {"outer": 1, "inner": MOST + 1}
