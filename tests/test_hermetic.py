"""The suite never writes into the user's data directory (``~/.local/share/attnviz``, where a
server of the user's, with other code, may keep its runs): tests/conftest.py points
ATTNVIZ_DATA_DIR and XDG_DATA_HOME (what the default reads) into a temporary folder of the
session before anything starts, and every process a test starts inherits them; the benches'
servers keep a temporary data directory of their own."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from attnviz.bench.harness import Server
from tests.conftest import TEST_DATA_DIR, TEST_XDG_DATA_HOME
from tests.support.servers import wait_healthy

ROOT = Path(__file__).resolve().parents[1]
# The user's own folder, as platformdirs finds it without XDG_DATA_HOME (HOME's).
USERS = Path.home() / ".local" / "share" / "attnviz"


def child_data_path(env: dict[str, str]) -> Path:
    """The data directory a process started with ``env`` would use (Settings().data_path)."""
    out = subprocess.run(
        [sys.executable, "-c", "from attnviz.settings import Settings; "
         "print(Settings().data_path)"],
        env=env, capture_output=True, text=True, check=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    return Path(out.stdout.strip())


def test_the_session_sets_its_own_data_folders_before_any_test():
    assert os.environ["XDG_DATA_HOME"] == TEST_XDG_DATA_HOME
    assert Path(TEST_XDG_DATA_HOME).is_relative_to(TEST_DATA_DIR)
    assert not Path(TEST_DATA_DIR).is_relative_to(Path.home())
    # Even with every ATTNVIZ_* variable left out, the default falls in the session's folder.
    bare = {k: v for k, v in os.environ.items() if not k.startswith("ATTNVIZ_")}
    assert child_data_path(bare) == Path(TEST_XDG_DATA_HOME) / "attnviz"


@pytest.mark.slow
def test_a_server_started_with_a_clean_environment_writes_under_the_session(tmp_path):
    """``attnviz serve`` as tests/services/test_store.py and tests/deploy start it, but with
    no ATTNVIZ_DATA_DIR at all: its generated secret lands under XDG_DATA_HOME's attnviz."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNVIZ_") and k != "PORT"}
    env.update(ATTNVIZ_DEVICE="cpu", ATTNVIZ_BUILTIN_MODEL="false", OMP_NUM_THREADS="1")
    where = Path(TEST_XDG_DATA_HOME) / "attnviz"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "attnviz", "serve", "--host", "127.0.0.1", "--port", str(port)],
            stdout=out, stderr=out, env=env, cwd=ROOT,
        )  # fmt: skip
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc, log.read_text)
        assert (where / "secret").is_file()
        assert (where / "secret").stat().st_mode & 0o777 == 0o600
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.slow
def test_a_bench_server_keeps_a_data_directory_of_its_own():
    """A bench's ``attnviz serve`` not given one (``attnviz bench --learn``, ``--train``):
    a temporary directory, removed when it stops, whatever the caller's environment says."""
    env = {"ATTNVIZ_DEVICE": "cpu", "ATTNVIZ_BUILTIN_MODEL": "false", "OMP_NUM_THREADS": "1"}
    with Server(["--device", "cpu"], env=env) as server:
        data = Path(server.env["ATTNVIZ_DATA_DIR"])
        assert data != Path(os.environ["ATTNVIZ_DATA_DIR"]) and not data.is_relative_to(USERS)
        assert (data / "secret").is_file()  # what the server wrote, there
    assert not data.exists()
