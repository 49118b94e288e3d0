"""The run index's layout has a version (SQLite's user_version) and an index of an older one is
brought up to date in place: a data directory written before runs had names (version 0, no
``title`` column) opens with every run and tombstone as it was, takes a rename, and keeps it
across a restart; an index of a newer attnviz is read as far as this one knows."""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.services.ownership import Ownership
from attnviz.services.store import INDEX, SCHEMA_VERSION, RunStore, migrate
from attnviz.settings import Settings

TINY = {"layers": 2, "heads": 2, "d_model": 16}

# The index as attnviz made it before its version was kept (version 0): no ``title``.
FIRST_LAYOUT = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    replica TEXT NOT NULL DEFAULT '',
    owner TEXT NOT NULL DEFAULT '',
    shared INTEGER NOT NULL DEFAULT 0,
    openers TEXT NOT NULL DEFAULT '[]',
    state TEXT NOT NULL,
    step INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL,
    finished REAL,
    bytes INTEGER NOT NULL DEFAULT 0,
    removed REAL,
    removed_why TEXT
)
"""
FIRST_COLUMNS = ("id, kind, replica, owner, shared, openers, state, step, created, finished, "
                 "bytes, removed, removed_why")  # fmt: skip


def first_layout(path: Path, rows: list[tuple]) -> None:
    """An index of the first layout at ``path`` holding ``rows`` (its columns, in order)."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(FIRST_LAYOUT)
    conn.executemany(f"INSERT INTO runs ({FIRST_COLUMNS}) VALUES ({', '.join('?' * 13)})", rows)
    conn.commit()
    conn.close()


def current(tmp_path: Path) -> list[str]:
    """The columns of an index this attnviz makes new."""
    assert not RunStore(tmp_path / "new").put_title("d" * 32, None)  # made by its first write
    return layout(tmp_path / "new" / INDEX)[1]


def layout(path: Path) -> tuple[int, list[str]]:
    """The index's version and its columns."""
    conn = sqlite3.connect(path)
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        return version, [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
    finally:
        conn.close()


def make_app(data_dir: Path):
    return create_app(Settings(device="cpu", builtin_model=False, data_dir=data_dir))


@pytest.mark.slow
def test_a_data_directory_of_the_first_layout_opens_whole_and_keeps_a_rename(tmp_path):
    data = tmp_path / "data"
    client = TestClient(make_app(data))
    r = client.post("/api/train", json={"arch": TINY, "opt": {"steps": 5}, "checkpoints": 1})
    run_id = r.json()["id"]
    while client.get(f"/api/train/{run_id}").json()["state"] in ("queued", "running"):
        time.sleep(0.05)
    before = client.get(f"/api/train/{run_id}").json()
    # The same rows, in an index of the first layout (as a server before names wrote it), with
    # a tombstone beside them.
    conn = sqlite3.connect(data / INDEX)
    rows = conn.execute(f"SELECT {FIRST_COLUMNS} FROM runs").fetchall()
    conn.close()
    gone = ("e" * 32, "run", "", "someone", 0, "[]", "done", 5, 1.0, 2.0, 0, 3.0, "to keep ...")
    old = tmp_path / "old.sqlite3"
    first_layout(old, [*rows, gone])
    for suffix in ("", "-wal", "-shm"):
        (data / f"{INDEX}{suffix}").unlink(missing_ok=True)
    os.replace(old, data / INDEX)
    assert layout(data / INDEX) == (0, FIRST_COLUMNS.split(", "))

    again = TestClient(make_app(data), cookies=client.cookies)
    state = again.get(f"/api/train/{run_id}").json()
    assert layout(data / INDEX) == (SCHEMA_VERSION, current(tmp_path))
    assert (state["title"], state["named"], state["yours"]) == (before["title"], False, True)
    assert state["variants"] == before["variants"]
    tomb = again.get(f"/api/train/{'e' * 32}")
    assert tomb.status_code == 404 and "was removed on" in tomb.json()["message"]
    assert again.patch(f"/api/train/{run_id}", json={"title": "kept"}).status_code == 200

    third = TestClient(make_app(data), cookies=client.cookies)
    state = third.get(f"/api/train/{run_id}").json()
    assert (state["title"], state["named"]) == ("kept", True)
    assert [r["title"] for r in third.get("/api/train").json()["runs"]] == ["kept"]


def test_migrate_brings_an_old_index_up_once_and_leaves_a_newer_one(tmp_path, caplog):
    path = tmp_path / INDEX
    rows = [("a" * 32, "run", "r1", "v", 1, '["w"]', "done", 7, 10.0, 11.0, 2048, None, None),
            ("b" * 32, "comparison", "", "v", 0, "[]", "interrupted", 0, 12.0, 13.0, 0, 14.0,
             "after 30 days")]  # fmt: skip
    first_layout(path, rows)
    store = RunStore(tmp_path)
    got = {r.id: r for r in store.rows_all()}  # its first read migrates it
    assert layout(path) == (SCHEMA_VERSION, current(tmp_path))
    a = got["a" * 32]
    assert (a.replica, a.owner, a.shared, a.openers, a.step, a.bytes, a.title) == (
        "r1", "v", True, ["w"], 7, 2048, None)  # fmt: skip
    assert got["b" * 32].removed_why == "after 30 days"
    assert store.put_title("a" * 32, "named") and RunStore(tmp_path).row("a" * 32).title == "named"
    conn = sqlite3.connect(path)
    assert migrate(conn) == SCHEMA_VERSION  # again: nothing to do
    conn.close()
    assert layout(path)[0] == SCHEMA_VERSION

    # A newer attnviz's index (a later version, a column more) is left as it is, and read.
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE runs ADD COLUMN colour TEXT")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with caplog.at_level(logging.WARNING, logger="attnviz.services.store"):
        assert RunStore(tmp_path).row("a" * 32).title == "named"
    assert layout(path)[0] == SCHEMA_VERSION + 1
    assert f"version {SCHEMA_VERSION + 1}, newer than this server's" in caplog.text


def test_a_new_index_is_made_at_the_current_version(tmp_path):
    store = RunStore(tmp_path)
    assert store.rows_all() == [] and not store.exists  # nothing written until a run is
    assert not store.put_title("c" * 32, "no such row")
    version, columns = layout(tmp_path / INDEX)
    first = [*FIRST_COLUMNS.split(", "), "title", "seen"]
    assert version == SCHEMA_VERSION and columns[: len(first)] == first


def test_an_index_of_version_1_counts_its_ended_runs_as_seen_and_its_running_one_not(tmp_path):
    """Version 2 keeps when a run's owner was first told it ended (``seen``: eviction spares a
    run until then). The runs an older index holds that had ended count as seen when they
    ended, so that the budget can still remove them; a run going then is not."""
    path = tmp_path / INDEX
    rows = [("a" * 32, "run", "", "v", 0, "[]", "done", 7, 10.0, 11.0, 2048, None, None),
            ("b" * 32, "comparison", "", "v", 0, "[]", "cancelled", 0, 12.0, 13.0, 99, None,
             None),
            ("c" * 32, "run", "", "v", 0, "[]", "running", 3, 14.0, None, 0, None, None)]  # fmt: skip
    first_layout(path, rows)
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE runs ADD COLUMN title TEXT")  # version 1: runs have names
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    got = {r.id: r for r in RunStore(tmp_path).rows_all()}
    assert layout(path) == (SCHEMA_VERSION, current(tmp_path))
    assert [got[i * 32].seen for i in "abc"] == [11.0, 13.0, None]
    store = RunStore(tmp_path)
    assert not store.mark_seen("c" * 32)  # not ended: nothing to be told yet
    store.interrupt("run", "")
    assert store.mark_seen("c" * 32) and store.row("c" * 32).seen is not None


def version_3_layout(path: Path, rows: list[tuple]) -> None:
    """An index as attnviz wrote it at version 3 (names, ``seen``, the holder of a run not
    ended, no client address) holding ``rows`` (the first layout's columns), each not ended
    held by a process that is gone."""
    first_layout(path, rows)
    conn = sqlite3.connect(path)
    for column in ("title TEXT", "seen REAL", "claimer TEXT", "lease REAL"):
        conn.execute(f"ALTER TABLE runs ADD COLUMN {column}")
    conn.execute("UPDATE runs SET claimer = 'gone-host:1:0', lease = 1.0 WHERE finished IS NULL")
    conn.execute("UPDATE runs SET seen = finished")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()


def test_an_index_of_version_3_gains_the_address_of_a_run_not_ended(tmp_path):
    """Version 4 keeps the client address that started a run waiting or training, so that the
    per-address cap counts a run put back in line after a restart. A version 3 index opens with
    every row as it was and no address (an older server's waiting run counts against none, as
    it did); a row written from then on keeps its address until its run ends."""
    path = tmp_path / INDEX
    rows = [("a" * 32, "run", "", "v", 0, "[]", "queued", 0, 10.0, None, 0, None, None),
            ("b" * 32, "run", "", "w", 1, '["v"]', "done", 9, 11.0, 12.0, 4096, None, None)]  # fmt: skip
    version_3_layout(path, rows)
    assert layout(path)[0] == 3 and "address" not in layout(path)[1]
    store = RunStore(tmp_path)
    got = {r.id: r for r in store.rows_all()}  # its first read migrates it
    assert SCHEMA_VERSION == 4
    assert layout(path) == (SCHEMA_VERSION, current(tmp_path))
    waiting, done = got["a" * 32], got["b" * 32]
    assert (waiting.state, waiting.owner, waiting.claimer, waiting.address) == (
        "queued", "v", "gone-host:1:0", "")  # fmt: skip
    assert (done.state, done.shared, done.openers, done.bytes, done.seen, done.address) == (
        "done", True, ["v"], 4096, 12.0, "")  # fmt: skip
    assert store.take_over(waiting)  # its holder is gone: this store's now, as before

    # A run accepted now keeps its address while it waits and trains, none once it has ended.
    run = "c" * 32
    for state, finished in (("queued", None), ("running", None)):
        store.put(run, "run", replica="", access=Ownership(owner="x"), state=state, step=0,
                  created=20.0, finished=finished, address="10.0.0.9")  # fmt: skip
        assert RunStore(tmp_path).row(run).address == "10.0.0.9"  # type: ignore[union-attr]
    store.put(run, "run", replica="", access=Ownership(owner="x"), state="done", step=5,
              created=20.0, finished=21.0, address="10.0.0.9")  # fmt: skip
    assert RunStore(tmp_path).row(run).address == ""  # type: ignore[union-attr]
    # A run interrupted by a restart has ended too: its address goes.
    store.put("d" * 32, "run", replica="", access=Ownership(owner="x"), state="running", step=1,
              created=22.0, address="10.0.0.9")  # fmt: skip
    assert RunStore(tmp_path).interrupt("run", "") == ["d" * 32]
    assert RunStore(tmp_path).row("d" * 32).address == ""  # type: ignore[union-attr]
