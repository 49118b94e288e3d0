"""A run index that a newer attnviz migrates while this server runs (two servers, or an upgrade
started beside an old one, on one data directory): this server reads it and stops writing to it,
says so once in its log (no traceback), refuses new runs with 503 and Retry-After in words a
learner can pass on, and still answers the runs it could not save from memory."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import httpx
import pytest

from attnviz.app import create_app
from attnviz.services.ownership import Ownership
from attnviz.services.store import (
    INDEX,
    NEWER_RETRY_S,
    SCHEMA_VERSION,
    NewerIndex,
    RunStore,
)
from attnviz.settings import Settings
from tests.api.test_train import TINY
from tests.support.servers import served
from tests.support.waits import until

LOGGER = "attnviz.services.store"
LONG = {"arch": TINY, "opt": {"steps": 5000}, "checkpoints": 2}


def migrated_by_a_newer_attnviz(data_dir: Path) -> None:
    """What a newer attnviz does on opening the directory: a column more, a later version."""
    conn = sqlite3.connect(data_dir / INDEX, timeout=10)
    conn.execute("ALTER TABLE runs ADD COLUMN colour TEXT")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()


def put(store: RunStore, run_id: str, state: str, step: int) -> None:
    store.put(run_id, "run", replica="", access=Ownership(owner="v"), state=state, step=step,
              created=1.0)  # fmt: skip


def errors(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and r.levelno >= logging.ERROR]


def test_a_store_stops_writing_once_another_migrated_its_index_past_it(tmp_path, caplog):
    ours, theirs = RunStore(tmp_path), RunStore(tmp_path)
    put(ours, "a" * 32, "running", 3)
    assert theirs.row("a" * 32).step == 3 and not ours.read_only
    migrated_by_a_newer_attnviz(tmp_path)  # meanwhile, by a newer attnviz (``theirs``'s file)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        for step in (4, 5):  # each write refused, nothing written
            with pytest.raises(NewerIndex, match="cannot save runs right now"):
                put(ours, "a" * 32, "running", step)
        with pytest.raises(NewerIndex):
            ours.write_json("a" * 32, "run.json", {"step": 4})
        with pytest.raises(NewerIndex):
            ours.check_writable()
        with pytest.raises(NewerIndex):
            ours.put_title("a" * 32, "renamed")
    assert ours.read_only
    assert not (ours.folder("a" * 32) / "run.json").exists()
    # Reading goes on, and the other's writes are its own: the row is as the newer one left it.
    assert ours.row("a" * 32).step == 3 and theirs.row("a" * 32).step == 3
    with sqlite3.connect(tmp_path / INDEX) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    # One error, naming both versions and what to do; no traceback.
    [error] = errors(caplog)
    assert f"version {SCHEMA_VERSION + 1}, newer than this server's {SCHEMA_VERSION}" in (
        error.getMessage()
    )
    assert "ATTNVIZ_DATA_DIR" in error.getMessage() and error.exc_info is None
    # A store opened on it afterwards (a restart of the older server) finds it at once.
    later = RunStore(tmp_path)
    assert later.row("a" * 32).step == 3 and later.read_only
    with pytest.raises(NewerIndex):
        put(later, "b" * 32, "queued", 0)
    assert later.row("b" * 32) is None


@pytest.mark.slow
def test_a_server_refuses_new_runs_with_503_and_answers_its_unsaved_run(tmp_path, caplog):
    data = tmp_path / "data"
    app = create_app(Settings(device="cpu", builtin_model=False, data_dir=data, train_slots=1))
    with caplog.at_level(logging.INFO), served(app) as url, \
            httpx.Client(base_url=url, timeout=60) as client:  # fmt: skip
        run = client.post("/api/train", json=LONG).json()
        run_id = run["id"]
        until(lambda: client.get(f"/api/train/{run_id}").json()["variants"][0]["history"]["step"],
              bool, "the run training")  # fmt: skip
        migrated_by_a_newer_attnviz(data)

        refused = client.post("/api/train", json=LONG)
        assert refused.status_code == 503, refused.text
        assert refused.headers["Retry-After"] == str(NEWER_RETRY_S)
        message = refused.json()["message"]
        assert "this server cannot save runs right now" in message
        assert "ask its operator" in message and "newer version of attnviz" in message
        comparison = client.post("/api/recurrent", json={})
        assert (
            comparison.status_code == 503 and "cannot save runs" in (comparison.json()["message"])
        )

        # The run it holds ends (its owner stops it): its end cannot be saved, and it is
        # still answered, from memory, with its end.
        assert client.delete(f"/api/train/{run_id}").status_code == 200
        state = until(lambda: client.get(f"/api/train/{run_id}").json(),
                      lambda s: s["state"] != "running", "the run stopping")  # fmt: skip
        assert state["state"] == "cancelled" and state["variants"][0]["history"]["step"]
        assert client.get(f"/api/train/{run_id}").status_code == 200
        assert run_id in [r["id"] for r in client.get("/api/train").json()["runs"]]
    with sqlite3.connect(data / INDEX) as conn:  # the newer one's index: its row as it was
        [(stored,)] = conn.execute("SELECT state FROM runs WHERE id = ?", (run_id,)).fetchall()
    assert stored == "running"
    said = [r for r in caplog.records if r.name.startswith("attnviz")]
    assert [r.getMessage()[:40] for r in said if r.levelno >= logging.ERROR] == [
        f"the run index {data / INDEX} is of version"[:40]
    ]
    assert not [r for r in said if r.exc_info], "a traceback in the log"
