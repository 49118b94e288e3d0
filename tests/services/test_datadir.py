"""The data directory: a file written whole (temp file, then moved into place) with its mode, a
first writer that wins where the file must not be replaced, and the server's secret generated
once, kept, and a key for the process alone where the folder cannot be written."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from attnviz.app import create_app
from attnviz.services.datadir import SECRET_FILE, server_secret, write_atomic
from attnviz.settings import Settings
from tests.support.servers import served
from tests.support.waits import until

TINY = {"layers": 2, "heads": 2, "d_model": 16}


def test_a_file_is_written_whole_with_its_mode_and_no_temp_left(tmp_path):
    path = tmp_path / "a" / "b.bin"
    assert write_atomic(path, b"one", mode=0o640)
    assert path.read_bytes() == b"one" and stat.S_IMODE(path.stat().st_mode) == 0o640
    assert write_atomic(path, b"two")  # replaced
    assert path.read_bytes() == b"two" and stat.S_IMODE(path.stat().st_mode) == 0o600
    # Where it must not be replaced, the first writer wins.
    assert not write_atomic(path, b"three", replace=False)
    assert path.read_bytes() == b"two"
    assert sorted(p.name for p in path.parent.iterdir()) == ["b.bin"]


def test_the_secret_is_made_once_and_kept(tmp_path):
    s = Settings(data_dir=tmp_path)
    key = server_secret(s)
    assert len(key) >= 32 and server_secret(s) == key == (tmp_path / SECRET_FILE).read_bytes()
    assert server_secret(Settings(data_dir=tmp_path / "other")) != key
    assert server_secret(Settings(data_dir=tmp_path, secret="given-secret")) == b"given-secret"
    assert server_secret(Settings(data_dir=tmp_path, secret="")) == key  # empty: as unset


def test_a_folder_that_cannot_be_written_gives_a_key_for_this_process(tmp_path, caplog):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    s = Settings(data_dir=blocked / "data")
    one, two = server_secret(s), server_secret(s)
    assert len(one) >= 32 and one != two  # nothing kept: each is new
    assert "ATTNVIZ_SECRET" in caplog.text


def test_a_short_secret_file_is_not_used(tmp_path):
    (tmp_path / SECRET_FILE).write_bytes(b"short")
    assert server_secret(Settings(data_dir=tmp_path)) != b"short"


# -- every file the server's user's alone ---------------------------------------------------------


@contextmanager
def umask(mask: int) -> Iterator[None]:
    """A usual umask (022: files 0644, folders 0755) while the server writes, whatever the
    test process had."""
    was = os.umask(mask)
    try:
        yield
    finally:
        os.umask(was)


def modes(root: Path) -> dict[str, int]:
    """Every path under ``root`` (``.`` itself) and its permission bits."""
    out = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        out[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return out


def not_private(root: Path) -> dict[str, str]:
    """What under ``root`` is not 0700 (a folder) or 0600 (a file)."""
    wrong = {}
    for name, mode in modes(root).items():
        want = 0o700 if (root / name).is_dir() else 0o600
        if mode != want:
            wrong[name] = oct(mode)
    return wrong


def train_one(base: str) -> str:
    """A tiny run over HTTP, to its end: its id."""
    r = httpx.post(
        f"{base}/api/train", json={"arch": TINY, "opt": {"steps": 4}, "checkpoints": 2}, timeout=60
    )
    assert r.status_code == 202, r.text
    run_id, cookies = r.json()["id"], r.cookies
    state = until(lambda: httpx.get(f"{base}/api/train/{run_id}", cookies=cookies, timeout=60).json(),
                  lambda s: s["state"] not in ("queued", "running"), "the run ending")  # fmt: skip
    assert state["state"] == "done", state
    return run_id


def test_what_the_server_writes_is_its_users_alone(tmp_path):
    data = tmp_path / "data"
    with umask(0o022), served(create_app(Settings(device="cpu", builtin_model=False,
                                                  data_dir=data))) as base:  # fmt: skip
        run_id = train_one(base)
        written = modes(data)
    # The secret, the index with SQLite's own files, the run's JSON, its model folder.
    assert {SECRET_FILE, "runs", "runs.sqlite3", f"runs/{run_id}/run.json",
            f"runs/{run_id}/access.json", f"runs/{run_id}/variant-0/model.safetensors",
            f"runs/{run_id}/variant-0/config.json"} <= set(written)  # fmt: skip
    assert any(name.startswith("runs.sqlite3-") for name in written)  # -wal, -shm
    assert not_private(data) == {}


def test_an_older_servers_files_are_made_private_when_opened(tmp_path):
    data = tmp_path / "data"
    with umask(0o022):
        with served(create_app(Settings(device="cpu", builtin_model=False, data_dir=data))) as b:
            run_id = train_one(b)
        # As an older attnviz left them: folders 0755, files 0644.
        for path in [data, *data.rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        assert not_private(data) != {}
        with served(create_app(Settings(device="cpu", builtin_model=False, data_dir=data))) as b:
            assert stat.S_IMODE(data.stat().st_mode) == 0o700  # at start
            runs = httpx.get(f"{b}/api/train", timeout=60).json()["runs"]  # the store opened
            assert run_id not in [r["id"] for r in runs]  # another visitor's: not listed
            assert httpx.get(f"{b}/api/train/{run_id}", timeout=60).json()["state"] == "done"
    assert not_private(data) == {}
