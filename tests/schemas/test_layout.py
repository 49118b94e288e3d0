"""The schemas mirror the routers: each router in attnviz/api/ has its request and response
models in attnviz/schemas/ under the same name and imports them from there, and every schemas
module but ``common`` belongs to a router (one named ``<router>_<part>``, a part of that
router's models, such as ``trace_meta``). A new route that forgets its schemas module fails
here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "attnviz"
# api/'s modules that are not routers: the app's dependencies, error handlers and middleware
# (visitor: the middleware that reads who is asking, issue 27), and a response class
# (responses: large bodies sent in slices).
NOT_ROUTERS = {"__init__", "deps", "errors", "middleware", "responses", "visitor"}
ROUTERS = sorted(p.stem for p in (PACKAGE / "api").glob("*.py") if p.stem not in NOT_ROUTERS)
SCHEMAS = sorted(p.stem for p in (PACKAGE / "schemas").glob("*.py") if p.stem != "__init__")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}


def test_every_schemas_module_but_common_is_a_routers():
    parts = {s for s in SCHEMAS if s.partition("_")[0] in ROUTERS and s not in ROUTERS}
    assert sorted(set(SCHEMAS) - {"common"} - parts) == ROUTERS


@pytest.mark.parametrize("router", ROUTERS)
def test_each_router_imports_its_own_schemas(router):
    assert "APIRouter" in (PACKAGE / "api" / f"{router}.py").read_text(encoding="utf-8")
    assert f"attnviz.schemas.{router}" in imported_modules(PACKAGE / "api" / f"{router}.py")


def test_the_schemas_package_re_exports_nothing():
    tree = ast.parse((PACKAGE / "schemas" / "__init__.py").read_text(encoding="utf-8"))
    assert all(isinstance(n, ast.Expr) for n in tree.body)  # its docstring alone
