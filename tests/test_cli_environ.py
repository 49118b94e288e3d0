"""The CLI's flags reach the settings as ``Settings(**overrides)``, never through the
environment: a subcommand run with flags leaves ``os.environ`` as it found it."""

from __future__ import annotations

import os

import pytest

from attnviz.cli import main
from attnviz.python import local


def test_serve_with_flags_leaves_the_environment_alone(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNVIZ_PORT", "9000")
    monkeypatch.setenv("ATTNVIZ_MODELS", "/earlier")
    made = {}
    monkeypatch.setattr("attnviz.cli._malloc_settings", lambda: None)  # not this process's
    monkeypatch.setattr("attnviz.app.create_app", lambda settings: made.setdefault("s", settings))
    monkeypatch.setattr("uvicorn.run", lambda app, **kw: made.update(kw))
    before = dict(os.environ)
    argv = ["serve", "--host", "0.0.0.0", "--port", "8123", "--device", "cpu",
            "--dtype", "float32", "--backend", "native", "--model", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    assert dict(os.environ) == before
    s = made["s"]
    assert (s.host, s.port, s.device, s.dtype, s.backend) == (
        "0.0.0.0", 8123, "cpu", "float32", "native"
    )  # fmt: skip
    assert s.models == os.pathsep.join(["/earlier", str(tmp_path)])
    assert (made["host"], made["port"]) == ("0.0.0.0", 8123)


def test_export_with_a_device_leaves_the_environment_alone(monkeypatch, tmp_path):
    monkeypatch.setattr(local, "_overrides", {})
    before = dict(os.environ)
    with pytest.raises(SystemExit):  # refused before tracing
        main(["export", "--text", "a", "--device", "cpu", "--layer", "0",
              "-o", str(tmp_path / "x.html")])  # fmt: skip
    assert dict(os.environ) == before
    assert local._overrides == {"device": "cpu"}


def test_bench_with_flags_leaves_the_environment_alone(monkeypatch, capsys):
    from attnviz.bench import atlas

    monkeypatch.setattr(atlas, "run", lambda device: [])
    before = dict(os.environ)
    assert main(["bench", "--atlas", "--device", "cpu"]) == 0
    assert dict(os.environ) == before
    assert "attnviz bench --atlas" in capsys.readouterr().out
