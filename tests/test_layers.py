"""The package's layers point one way: a module imports its own layer or a lower one, never a
higher one, and no two modules import each other round a circle (docs/architecture.md draws
them). Imports under ``if TYPE_CHECKING:`` are for the type checker only and do not count."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "attnviz"

# From the bottom up. A module belongs to the longest prefix listed ("attnviz" itself is the
# package root alone, so that a new top-level module must be given its layer here).
LAYERS: list[tuple[str, ...]] = [
    (
        "attnviz",
        "attnviz.version",
        "attnviz.settings",
        "attnviz.limits",
        "attnviz.glossary",
        "attnviz.errors",
        "attnviz.numbers",
        "attnviz.wire",
    ),
    ("attnviz.engine",),
    ("attnviz.capture", "attnviz.long"),
    ("attnviz.pretrained", "attnviz.training"),
    ("attnviz.schemas", "attnviz.presets"),
    ("attnviz.services",),
    ("attnviz.learn",),
    ("attnviz.web", "attnviz.jsgen", "attnviz.python"),
    ("attnviz.api", "attnviz.app"),
    ("attnviz.bench", "attnviz.cli", "attnviz.__main__"),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    best, level = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            inside = module.startswith(prefix + ".") and prefix != "attnviz"
            if (module == prefix or inside) and len(prefix) > best:
                best, level = len(prefix), i
    return level


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
    )


def _walk(node: ast.AST):
    for child in ast.iter_child_nodes(node):
        if _type_checking_only(child):
            continue
        yield child
        yield from _walk(child)


def imports_of(module: str) -> set[str]:
    """The attnviz modules ``module`` imports at run time (at the top or inside a function)."""
    path = MODULES[module]
    return imports_in(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")


def imports_in(source: str, module: str, is_package: bool) -> set[str]:
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in _walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            names = [f"{stem}.{alias.name}" for alias in node.names] + [stem]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
                break
    return found


@functools.cache
def graph() -> dict[str, set[str]]:
    """Every module's attnviz imports (read when a test asks, not at collection: 0.75 s)."""
    return {module: imports_of(module) for module in MODULES}


def test_every_module_has_a_layer():
    assert [m for m in MODULES if layer_of(m) < 0] == []


def test_no_module_imports_a_higher_layer():
    upward = sorted(
        f"{m} (layer {layer_of(m) + 1}) imports {t} (layer {layer_of(t) + 1})"
        for m, targets in graph().items()
        for t in targets
        if layer_of(t) > layer_of(m)
    )
    assert upward == []


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle():
    assert cycles(graph()) == []


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}, "c": set()}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ],
)
def test_the_circle_finder_finds_circles(graph, expected):
    assert cycles(graph) == expected


def test_the_import_reader_sees_function_imports_and_skips_type_checking():
    source = (
        "from typing import TYPE_CHECKING\n"
        "from . import limits\n"
        "if TYPE_CHECKING:\n    from attnviz.app import create_app\n"
        "def f():\n    from attnviz.engine import model\n"
    )
    found = imports_in(source, "attnviz.settings", is_package=False)
    assert found == {"attnviz.limits", "attnviz.engine.model"}
