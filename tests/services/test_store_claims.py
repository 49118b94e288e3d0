"""One writer per run: a run waiting or training is held by one process (its row's ``claimer``,
with a lease). Another server on the data directory neither takes it over nor calls it
interrupted while that process is there; once it is gone (killed), one server, and only one,
takes each waiting run, and its training run is interrupted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from attnviz.services.ownership import Ownership
from attnviz.services.store import SCHEMA_VERSION, RunStore

ROOT = Path(__file__).resolve().parents[2]
WAITING, TRAINING = "a" * 32, "b" * 32

HOLDER = """
import sys, time
from attnviz.services.ownership import Ownership
from attnviz.services.store import RunStore
s = RunStore(sys.argv[1])
s.put(sys.argv[2], "run", replica="", access=Ownership(owner="v"), state="queued", step=0,
      created=1.0)
s.put(sys.argv[3], "run", replica="", access=Ownership(owner="w"), state="running", step=3,
      created=2.0)
print("holding", flush=True)
time.sleep(600)
"""


def test_a_run_held_by_a_live_process_is_left_to_it_and_taken_once_when_it_is_gone(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path), WAITING, TRAINING],
                            stdout=subprocess.PIPE, cwd=ROOT)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"holding"
        store = RunStore(tmp_path)
        waiting, training = store.row(WAITING), store.row(TRAINING)
        assert waiting is not None and training is not None
        assert waiting.claimer and waiting.claimer.split(":")[1] == str(proc.pid)
        assert store.held_elsewhere(waiting) and store.held_elsewhere(training)
        # The holder is there: its training run is not interrupted, its waiting run not taken.
        assert store.interrupt("run", "") == []
        assert store.row(TRAINING).state == "running"  # type: ignore[union-attr]
        assert not store.take_over(waiting)
        assert not store.claim(WAITING)  # not this store's to start
        assert store.row(WAITING).claimer == waiting.claimer  # type: ignore[union-attr]
    finally:
        proc.kill()
        proc.wait(timeout=10)
    # The holder is gone (kill -9): two servers started on the directory read the same rows.
    first, second = RunStore(tmp_path), RunStore(tmp_path)
    seen_first, seen_second = first.row(WAITING), second.row(WAITING)
    assert seen_first is not None and seen_second is not None
    assert not first.held_elsewhere(seen_first)
    assert first.take_over(seen_first)
    assert not second.take_over(seen_second)  # the UPDATE names the old holder: one wins
    assert first.row(WAITING).claimer == first.claimer  # type: ignore[union-attr]
    assert not second.claim(WAITING) and first.claim(WAITING)
    assert first.row(WAITING).state == "running"  # type: ignore[union-attr]
    assert not first.claim(WAITING)  # started once
    # Its training run was the dead holder's: interrupted, once.
    assert first.interrupt("run", "") == [TRAINING]
    assert first.row(TRAINING).state == "interrupted"  # type: ignore[union-attr]
    # A server's own running row is its own: never interrupted by itself.
    assert first.interrupt("run", "") == []
    assert first.row(WAITING).state == "running"  # type: ignore[union-attr]
    assert first.beat() == 1  # the lease of the run it holds, renewed
    assert SCHEMA_VERSION >= 3


def test_a_row_of_an_index_before_claims_is_no_ones(tmp_path):
    """A run an older server left running (no claimer) is interrupted as before; one it left
    waiting is taken over."""
    store = RunStore(tmp_path)
    store.put(WAITING, "run", replica="", access=Ownership(owner="v"), state="queued", step=0,
              created=1.0)  # fmt: skip
    store.put(TRAINING, "run", replica="r1", access=Ownership(owner="w"), state="running",
              step=0, created=2.0)  # fmt: skip
    conn = store._conn()
    conn.execute("UPDATE runs SET claimer = NULL, lease = NULL")
    conn.commit()
    later = RunStore(tmp_path)
    assert later.interrupt("run", "") == []  # another replica's name: not this server's
    assert later.interrupt("run", "r1") == [TRAINING]
    row = later.row(WAITING)
    assert row is not None and row.claimer is None and later.take_over(row)
