"""``attnviz serve --device-map --max-memory --offload-folder`` (and their ``ATTNVIZ_*``): the
settings they give, and bad values refused at start naming the flag (or the variable) and the
rule."""

from __future__ import annotations

import pytest

from attnviz.cli import main
from attnviz.settings import Settings


@pytest.fixture
def served(monkeypatch) -> dict:
    """What ``attnviz serve`` would serve with: the settings, nothing started."""
    made: dict = {}
    monkeypatch.setattr("attnviz.cli._malloc_settings", lambda: None)
    monkeypatch.setattr("attnviz.app.create_app", lambda settings: made.setdefault("s", settings))
    monkeypatch.setattr("uvicorn.run", lambda app, **kw: None)
    for name in ("DEVICE_MAP", "MAX_MEMORY", "OFFLOAD_FOLDER"):
        monkeypatch.delenv(f"ATTNVIZ_{name}", raising=False)
    return made


def test_the_flags_give_accelerates_max_memory(served, tmp_path):
    argv = ["serve", "--device-map", "balanced", "--max-memory", "0=20GiB, 1=1.5GB,cpu=64MiB",
            "--offload-folder", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    s = served["s"]
    assert (s.device_map, s.offload_folder) == ("balanced", tmp_path)
    assert s.max_memory == {"0": "20GiB", "1": "1.5GB", "cpu": "64MiB"}
    assert s.memory_bytes == {0: 20 * 2**30, 1: 1_500_000_000, "cpu": 64 * 2**20}


def test_the_environment_gives_them_too(monkeypatch):
    monkeypatch.setenv("ATTNVIZ_DEVICE_MAP", "sequential")
    monkeypatch.setenv("ATTNVIZ_MAX_MEMORY", "cpu=1000,disk=2KiB")
    monkeypatch.setenv("ATTNVIZ_OFFLOAD_FOLDER", "/tmp/offload")
    s = Settings()
    assert s.device_map == "sequential" and str(s.offload_folder) == "/tmp/offload"
    assert s.memory_bytes == {"cpu": 1000, "disk": 2048}
    monkeypatch.delenv("ATTNVIZ_DEVICE_MAP")
    monkeypatch.delenv("ATTNVIZ_MAX_MEMORY")
    monkeypatch.delenv("ATTNVIZ_OFFLOAD_FOLDER")
    s = Settings()
    assert (s.device_map, s.max_memory, s.offload_folder, s.memory_bytes) == (
        "none", None, None, None
    )  # fmt: skip


RULE = "DEVICE=SIZE pairs separated by commas, DEVICE a GPU's index, cpu or disk"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--device-map", "everywhere"], "argument --device-map: invalid choice: 'everywhere'"),
        (["--device-map", "auto", "--max-memory", "gpu0=1GB"],
         f"--max-memory: gpu0=1GB: 'gpu0' is not a GPU's index, cpu or disk; {RULE}"),
        (["--device-map", "auto", "--max-memory", "cpu=lots"],
         f"--max-memory: cpu=lots: 'lots' is not a size; {RULE}"),
        (["--device-map", "auto", "--max-memory", "cpu"],
         f"--max-memory: 'cpu' is not DEVICE=SIZE: {RULE}"),
        (["--max-memory", "cpu=1GB"],
         "--max-memory: applies to a device map: set --device-map auto, balanced or sequential"),
        (["--offload-folder", "/tmp/x"],
         "--offload-folder: applies to a device map: set --device-map auto, balanced or"),
    ],
)  # fmt: skip
def test_a_bad_flag_is_refused_naming_it_and_the_rule(served, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_:
        main(["serve", *argv])
    assert exit_.value.code == 2 and "s" not in served
    assert message in capsys.readouterr().err


def test_a_bad_variable_is_refused_naming_it(served, monkeypatch, capsys):
    monkeypatch.setenv("ATTNVIZ_DEVICE_MAP", "auto")
    monkeypatch.setenv("ATTNVIZ_MAX_MEMORY", "7=1XB")
    with pytest.raises(SystemExit):
        main(["serve"])
    assert f"ATTNVIZ_MAX_MEMORY: 7=1XB: '1XB' is not a size; {RULE}" in capsys.readouterr().err


def test_one_reading_of_sizes_for_the_flag_and_the_engines_capacities():
    """--max-memory's sizes (settings) and the native engine's capacities (placement) are read
    by the same function: the same bytes, the same refusals."""
    from attnviz.engine.placement import parse_bytes
    from attnviz.settings import size_bytes

    for text, want in (("20GiB", 20 * 2**30), ("3.5GB", 3_500_000_000), ("500mb", 500 * 10**6),
                       ("1.5TiB", int(1.5 * 2**40)), ("64B", 64), ("1024", 1024), (".5KiB", 512)):  # fmt: skip
        assert size_bytes(text) == parse_bytes(text) == want, text
    for bad in ("20 GiBs", "-1GB", "GB", ""):
        with pytest.raises(ValueError, match="is not a size"):
            size_bytes(bad)
        with pytest.raises(ValueError, match=r"^max_memory: .* is not a size"):
            parse_bytes(bad)


def test_the_help_says_a_device_map_places_native_models_too(capsys):
    """``--device-map`` places a native model (the engine's plan: tests/engine/test_placement.py
    loads one balanced over the devices) as well as one served through transformers, and the
    engine refuses an offload folder (the same file's refusal): the help and the settings'
    table say so."""
    import re
    from pathlib import Path

    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = re.sub(r"\s+", " ", capsys.readouterr().out)
    device_map = text.split("--device-map {none,auto,balanced,sequential} ")[-1].split(
        "--max-memory PAIRS"
    )[0]
    assert "native model by attnviz's engine" in device_map and "transformers" in device_map
    assert "transformers backend's models" not in device_map
    offload = text.split("--offload-folder FOLDER ")[-1].split("--model FOLDER")[0]
    assert "native engine computes from memory and refuses it" in offload
    table = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text()
    (row,) = [line for line in table.splitlines() if line.startswith("| `ATTNVIZ_DEVICE_MAP`")]
    assert "a native model by attnviz's engine" in row
