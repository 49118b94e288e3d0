"""The tests mirror the package: every subpackage of attnviz/ has a test folder at the same
path under tests/, and every test folder is either such a mirror or one of the few kinds that
test across the package (the browser, the page's JavaScript, the deployment) or hold the
shared helpers (support/)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attnviz"
TESTS = ROOT / "tests"
ACROSS = {"browser", "js", "deploy", "support"}


def folders(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_dir() and "__pycache__" not in p.parts and not p.name.startswith(".")
    }


def test_every_subpackage_has_its_test_folder():
    packages = {f for f in folders(PACKAGE) if (PACKAGE / f / "__init__.py").exists()}
    assert sorted(packages - folders(TESTS)) == []


def test_every_test_folder_mirrors_a_subpackage_or_tests_across_it():
    stray = [
        f
        for f in folders(TESTS)
        if f.split("/")[0] not in ACROSS and not (PACKAGE / f / "__init__.py").exists()
    ]
    assert stray == []


def test_the_shared_helpers_are_in_support_not_at_the_root():
    helpers = [
        p.name for p in TESTS.glob("*.py") if not p.name.startswith(("test_", "__", "conftest"))
    ]
    assert helpers == []
