"""``attnviz bench`` dispatches through ``attnviz.bench.BENCHES``: every row names a module with
``run``, ``table`` and ``as_json``, and options its ``run`` takes; the CLI passes a bench the
options it takes (those not given left to ``run``'s defaults), prints its table, then its JSON;
and no module of the package below the CLI imports the benches."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import attnviz
from attnviz.bench import BENCHES, SERVE, chosen
from attnviz.bench import learn as learn_bench
from attnviz.bench import serve as serve_bench
from attnviz.cli import main

PACKAGE = Path(attnviz.__file__).parent


@pytest.mark.parametrize("row", [SERVE, *BENCHES], ids=lambda r: r.name)
def test_each_row_names_a_bench_with_the_three_names(row):
    module = row.module()
    for name in ("run", "table", "as_json"):
        assert callable(getattr(module, name)), f"attnviz.bench.{row.name} has no {name}"
    takes = inspect.signature(module.run).parameters
    assert set(row.options) <= set(takes), set(row.options) - set(takes)
    for name in ("table", "as_json"):
        assert len(inspect.signature(getattr(module, name)).parameters) == 1


def test_the_flags_are_unique_and_only_the_default_has_none():
    flags = [row.flag for row in BENCHES]
    assert None not in flags and len(set(flags)) == len(flags)
    assert SERVE.flag is None
    names = [row.name for row in (SERVE, *BENCHES)]
    assert len(set(names)) == len(names)


@pytest.mark.slow
def test_no_module_below_the_cli_imports_the_benches():
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "bench" or rel.name in ("cli.py", "__main__.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            assert not any(n == "attnviz.bench" or n.startswith("attnviz.bench.") for n in names), (
                f"{rel} imports {names}"
            )


def test_the_first_flag_given_picks_the_bench():
    class Args:
        hosted = False
        shape = "smollm2-135m"
        atlas = True

    assert chosen(Args()).name == "shape"
    assert chosen(object()) is SERVE


def test_the_cli_passes_a_bench_its_options_and_prints_table_then_json(monkeypatch, capsys):
    got = {}

    def fake_run(**options):
        got.update(options)
        return learn_bench.LearnFigures([learn_bench.StepRow(1, "tokens", "toy", [0.5])], [])

    monkeypatch.setattr(learn_bench, "run", fake_run)
    assert main(["bench", "--learn", "--json", "--chromium", "/opt/chromium"]) == 0
    assert got == {"chromium": "/opt/chromium"}
    out = capsys.readouterr().out.splitlines()
    assert "| 1 tokens | toy | 0.50 s |  |" in out
    assert out[-1] == '{"steps": [{"n": 1, "id": "tokens", "lab": "toy", "link_s": [0.5], ' \
        '"next_s": null}], "comparisons": []}'  # fmt: skip


def test_options_not_given_are_left_to_the_bench(monkeypatch, capsys):
    got = {}

    def fake_run(**options):
        got.update(options)
        return serve_bench.Report(model="m", device="cpu", torch_threads=1, repeat=2)

    monkeypatch.setattr(serve_bench, "run", fake_run)
    assert main(["bench", "--tokens", "8,16", "--repeat", "2", "--model", "/m"]) == 0
    assert got == {"tokens": [8, 16], "repeat": 2, "use_browser": False,
                   "browser_tokens": (8, 128, 512), "chromium": "/usr/bin/chromium",
                   "device": "cpu", "model": Path("/m")}  # fmt: skip
    assert capsys.readouterr().out.startswith("attnviz bench: m on cpu (1 threads), median of 2")
