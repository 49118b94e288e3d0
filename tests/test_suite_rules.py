"""Rules the suite keeps so that it passes on a loaded 2-core machine (docs/contributing.md,
"Tests that share the machine"): every HTTP request a test makes through httpx says how long it
waits. httpx's default, 5 s, is shorter than a loaded machine takes for a first OpenAPI schema
or a trace: two fresh-clone CI runs each failed once on it (session 17)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# httpx's calls that send a request or make a client, each with httpx's 5 s default.
SENDS = {"get", "post", "put", "patch", "delete", "head", "options", "request", "stream"}
CLIENTS = {"Client", "AsyncClient"}


def untimed(source: str) -> list[int]:
    """The lines of ``source``'s httpx calls (httpx.get(...), httpx.Client(...)) that give no
    ``timeout`` (nor pass keywords on with ``**``)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        if not (isinstance(owner, ast.Name) and owner.id == "httpx"):
            continue
        if node.func.attr not in SENDS | CLIENTS:
            continue
        if not any(k.arg in ("timeout", None) for k in node.keywords):
            lines.append(node.lineno)
    return lines


def test_the_rule_finds_a_request_without_its_timeout():
    assert untimed("import httpx\nhttpx.get('u')\nhttpx.Client(base_url='u')\n") == [2, 3]
    assert untimed("httpx.get('u', timeout=60)\nhttpx.Client(**kw)\nclient.get('u')\n") == []


def test_every_http_request_of_the_suite_says_how_long_it_waits():
    found = {
        f"{path.relative_to(TESTS).as_posix()}:{line}"
        for path in TESTS.rglob("*.py")
        for line in untimed(path.read_text(encoding="utf-8"))
    }
    assert sorted(found) == []
