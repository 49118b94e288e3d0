"""The Learn progress file (services/progress_store.py) on its own: a migration runs once, with
its version's bump, and keeps the rows; a migration that fails leaves the file as it was; a
learner unseen for keep_days is not read and is deleted when the next one comes, their tries
with them; a try is counted for a state other than the latest; a record past its byte cap is
not written; a file that is not SQLite keeps nothing and says so; two stores over one file (two
replicas) see each other's learners."""

from __future__ import annotations

import sqlite3

import pytest

from attnviz.services.progress_store import (
    FILE,
    MIGRATIONS,
    ProgressStore,
    ProgressUnavailable,
    TooLarge,
)

DAY = 86_400.0


def store(root, **kw) -> ProgressStore:
    kw = {"max_learners": 10, "keep_days": 30.0, "max_bytes": 4096, **kw}
    return ProgressStore(root, **kw)


def put(s: ProgressStore, visitor: str, progress: dict, now: float, nickname=None):
    return s.change(visitor, lambda was: (nickname, progress), now=now)


def version(root) -> int:
    with sqlite3.connect(root / FILE) as conn:
        return conn.execute("PRAGMA user_version").fetchone()[0]


def test_a_later_migration_runs_once_keeps_the_rows_and_bumps_the_version(tmp_path):
    put(store(tmp_path), "v1", {"last": "rnn"}, now=1000.0, nickname="Ada")
    assert version(tmp_path) == len(MIGRATIONS)
    later = (*MIGRATIONS, ("ALTER TABLE learners ADD COLUMN colour TEXT DEFAULT 'blue'",))
    s = store(tmp_path, migrations=later)
    got = s.get("v1", now=1001.0)
    assert got is not None and got.nickname == "Ada" and got.progress == {"last": "rnn"}
    assert version(tmp_path) == len(MIGRATIONS) + 1
    with sqlite3.connect(tmp_path / FILE) as conn:
        assert conn.execute("SELECT colour FROM learners").fetchall() == [("blue",)]
    # Opened again (another thread, another replica): nothing to run twice.
    assert store(tmp_path, migrations=later).get("v1", now=1001.0) == got


def test_a_migration_that_fails_leaves_the_file_as_it_was(tmp_path):
    put(store(tmp_path), "v1", {"last": "rnn"}, now=1000.0)
    broken = (*MIGRATIONS, ("ALTER TABLE learners ADD COLUMN a TEXT", "NOT SQL AT ALL"))
    with pytest.raises(ProgressUnavailable, match="cannot be opened"):
        store(tmp_path, migrations=broken).get("v1", now=1001.0)
    assert version(tmp_path) == len(MIGRATIONS)
    with sqlite3.connect(tmp_path / FILE) as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(learners)")]
    assert "a" not in columns
    assert store(tmp_path).get("v1", now=1001.0) is not None


def test_a_learner_unseen_for_keep_days_is_forgotten(tmp_path):
    s = store(tmp_path, keep_days=2.0)
    first = s.change("old", lambda was: (None, {}), now=0.0, tried=[("qkv", "quiet-values", "a")])
    assert first is not None and set(first.tries) == {("qkv", "quiet-values")}
    put(s, "recent", {}, now=1.5 * DAY)
    assert [x.visitor for x in s.learners(now=1.9 * DAY)] == ["recent", "old"]
    # Past two days: not read, nor counted; the next learner's coming deletes the row.
    assert s.get("old", now=2.1 * DAY) is None
    assert [x.visitor for x in s.learners(now=2.1 * DAY)] == ["recent"]
    put(s, "new", {}, now=2.1 * DAY)
    with sqlite3.connect(tmp_path / FILE) as conn:
        assert {r[0] for r in conn.execute("SELECT visitor FROM learners")} == {"recent", "new"}
        assert conn.execute("SELECT count(*) FROM tries").fetchone() == (0,)  # gone with "old"
    # Coming back later, "old" is a new learner, with a new number, and no tries.
    again = put(s, "old", {}, now=2.2 * DAY)
    assert again is not None and again.n > first.n and again.tries == {}


def test_a_try_is_a_state_other_than_the_latest(tmp_path):
    s = store(tmp_path)
    task = ("dot-products", "apple-to-banana")
    for now, state in ((10.0, "a"), (20.0, "a"), (30.0, "b"), (40.0, "b"), (50.0, "a")):
        got = s.change("v1", lambda was: None if was else (None, {}), now=now,
                       tried=[(*task, state)])  # fmt: skip
    assert got is not None
    t = got.tries[task]
    assert (t.count, t.first, t.last) == (3, 10.0, 50.0)  # a, b, a: the repeats are no tries
    assert s.learners(now=60.0)[0].tries == {task: t} and s.get("v1", now=60.0) == got


def test_a_record_past_its_byte_cap_is_not_written(tmp_path):
    s = store(tmp_path, max_bytes=64)
    put(s, "v1", {"last": "rnn"}, now=1.0)
    with pytest.raises(TooLarge, match="over the cap of 64"):
        put(s, "v1", {"last": "x" * 100}, now=2.0)
    got = s.get("v1", now=3.0)
    assert got is not None and got.progress == {"last": "rnn"} and got.last_seen == 1.0


def test_a_file_that_is_not_sqlite_keeps_nothing_and_is_left_as_it_is(tmp_path):
    (tmp_path / FILE).write_bytes(b"not a database, whatever it is" * 100)
    s = store(tmp_path)
    for _ in range(2):  # said once, then the same answer without trying again
        with pytest.raises(ProgressUnavailable, match="it is not SQLite"):
            put(s, "v1", {}, now=1.0)
    assert (tmp_path / FILE).read_bytes() == b"not a database, whatever it is" * 100


def test_two_stores_over_one_file_see_each_others_learners(tmp_path):
    a, b = store(tmp_path), store(tmp_path)
    put(a, "v1", {"last": "rnn"}, now=1.0)
    put(b, "v2", {"last": "qkv"}, now=2.0)
    assert [x.visitor for x in a.learners(now=3.0)] == ["v2", "v1"]
    assert [x.n for x in b.learners(now=3.0)] == [2, 1]
