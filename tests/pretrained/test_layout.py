"""The layout of the conversions: one module per family under attnviz/pretrained/families, each
exporting its FAMILY (or FAMILIES), the table in convert.py holding exactly those, and no family
importing convert.py (which imports them)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import attnviz.pretrained.families as families_package
from attnviz.pretrained.checkpoint import Family
from attnviz.pretrained.convert import FAMILIES

FOLDER = Path(families_package.__file__).parent
MODULES = sorted(m.name for m in pkgutil.iter_modules([str(FOLDER)]))


def _exported(module_name: str) -> tuple[Family, ...]:
    module = importlib.import_module(f"attnviz.pretrained.families.{module_name}")
    one, several = getattr(module, "FAMILY", None), getattr(module, "FAMILIES", None)
    assert (one is None) != (several is None), f"{module_name}: export FAMILY or FAMILIES"
    exported = (one,) if one is not None else tuple(several)
    assert exported and all(isinstance(f, Family) for f in exported), module_name
    return exported


def test_the_families_are_the_ones_this_change_moved_and_more_may_come():
    assert {"attnviz", "bert", "distilbert", "gpt2", "llama", "roberta"} <= set(MODULES)


def test_every_family_module_exports_its_families_and_the_table_holds_exactly_those():
    exported = [f for name in MODULES for f in _exported(name)]
    names = [f.name for f in exported]
    assert len(names) == len(set(names)), f"a model_type read twice: {sorted(names)}"
    assert {f.name: f for f in exported} == FAMILIES  # the same objects, none left out
    for family in FAMILIES.values():
        assert family.description and "\n" not in family.description, family.name


def test_no_family_module_imports_the_table():
    for path in sorted(FOLDER.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                imported = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                imported = [a.name for a in node.names]
            else:
                continue
            assert not any(i.startswith("attnviz.pretrained.convert") for i in imported), path.name
            assert not any(i.startswith("attnviz.pretrained.native") for i in imported), path.name


@pytest.mark.parametrize("description", ["", "two\nlines"])
def test_a_family_needs_a_one_line_description(description):
    family = FAMILIES["bert"]
    with pytest.raises(ValueError, match="one-line description"):
        Family(name="x", config=family.config, weights=family.weights, description=description)
