"""The disk budget for runs (``ATTNVIZ_DATA_MAX_MB``) over real HTTP (issue 42): a run's size is
its folder as ``du -sb`` counts it once the folder is final; eviction never removes the run that
just ended nor one its owner has not been told ended (comparisons too); a run that could never
fit is refused at its start, and one that would not fit beside the runs that must be kept waits
for room (507), each saying the budget's figure and the run's size in a learner's words."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx
import pytest

from attnviz.app import create_app
from attnviz.schemas.train import TrainRequest
from attnviz.services.store import RunStore
from attnviz.services.training.runs import megabytes
from attnviz.settings import Settings
from tests.api import test_recurrent as rec
from tests.services.test_store import fake_run
from tests.support.servers import served
from tests.support.waits import until

TINY = {"task": "induction", "arch": {"layers": 2, "heads": 2, "d_model": 16},
        "opt": {"steps": 30}, "checkpoints": 5}  # fmt: skip


def make_app(data_dir: Path, **settings):
    return create_app(Settings(device="cpu", builtin_model=False, data_dir=data_dir, **settings))


def estimate(tmp_path: Path, body: dict) -> int:
    """What the server estimates ``body``'s run keeps on disk once it has ended."""
    app = make_app(tmp_path / "estimate")
    return app.state.training.plan(TrainRequest.model_validate(body)).bytes


def du(folder: Path) -> int:
    return int(subprocess.run(["du", "-sb", str(folder)], capture_output=True, text=True,
                              check=True).stdout.split()[0])  # fmt: skip


def watch(client: httpx.Client, path: str) -> dict:
    """Poll ``path`` until it has ended: ``client`` is not its owner (a teacher holding its
    link), so the owner is not told by it."""
    return until(lambda: client.get(path).json(),
                 lambda s: s["state"] not in ("queued", "running"), f"{path} ending")  # fmt: skip


def started(client: httpx.Client, body: dict) -> str:
    r = client.post("/api/train", json=body)
    assert r.status_code == 202, r.text
    return r.json()["id"]


@pytest.mark.slow
def test_a_runs_size_is_its_final_folder_as_du_counts_it_and_its_estimate_is_close(tmp_path):
    data = tmp_path / "data"
    with (
        served(make_app(data)) as url,
        httpx.Client(base_url=url, timeout=30) as owner,
        httpx.Client(base_url=url, timeout=30) as teacher,
    ):
        run_id = started(owner, TINY)
        assert watch(teacher, f"/api/train/{run_id}")["state"] == "done"
        folder = data / "runs" / run_id
        assert not list(folder.glob("checkpoint-*"))  # its weights at checkpoints are gone
        on_disk = du(folder)
        row = RunStore(data).row(run_id)
        assert row is not None and abs(row.bytes - on_disk) <= 0.1 * on_disk, (row, on_disk)
        guess = estimate(tmp_path, TINY)
        assert abs(guess - on_disk) <= 0.2 * on_disk, (guess, on_disk)


def test_a_run_that_could_never_fit_the_budget_is_refused_at_its_start(tmp_path):
    guess = estimate(tmp_path, TINY)
    budget = guess / 2 / 2**20
    data = tmp_path / "data"
    with served(make_app(data, data_max_mb=budget)) as url:
        r = httpx.post(f"{url}/api/train", json=TINY, timeout=60)
        assert r.status_code == 422, r.text
        message = r.json()["message"]
        assert message.startswith("arch: this run would keep about "), message
        assert megabytes(guess) in message
        assert f"this server's disk budget for runs, {budget:g} MB" in message
        assert "ATTNVIZ_" not in message
        assert r.json()["detail"][0]["loc"] == ["body", "arch"]
        assert httpx.get(f"{url}/api/train", timeout=60).json() == {"runs": []}
    assert not (data / "runs").exists() or not list((data / "runs").iterdir())


@pytest.mark.slow
def test_a_run_its_owner_has_not_seen_is_kept_and_the_run_that_just_ended_too(tmp_path):
    budget = 1.5 * estimate(tmp_path, TINY) / 2**20  # one run fits, two do not
    data = tmp_path / "data"
    with (
        served(make_app(data, data_max_mb=budget)) as url,
        httpx.Client(base_url=url, timeout=30) as owner,
        httpx.Client(base_url=url, timeout=30) as teacher,
    ):
        first = started(owner, TINY)
        watch(teacher, f"/api/train/{first}")
        store = RunStore(data)
        assert store.row(first).seen is None  # its owner has not been told it ended
        # A second run would not fit beside it, and it may not be removed yet: wait for room.
        r = owner.post("/api/train", json=TINY)
        assert r.status_code == 507, r.text
        message = r.json()["message"]
        assert f"this server's disk budget for runs, {budget:g} MB" in message, message
        assert "not yet seen by their owners" in message and "ATTNVIZ_" not in message
        # Its owner reads it ended: from now on it may go to make room.
        assert owner.get(f"/api/train/{first}").json()["state"] == "done"
        assert store.row(first).seen is not None
        second = started(owner, TINY)
        watch(teacher, f"/api/train/{second}")
        gone = owner.get(f"/api/train/{first}")
        assert gone.status_code == 404 and "was removed on" in gone.json()["message"]
        assert not (data / "runs" / first).exists()
        # The run that just ended is kept, whole, though the two were over the budget.
        assert owner.get(f"/api/train/{second}").json()["state"] == "done"
        assert owner.get(f"/api/train/{second}/model.zip").status_code == 200


def test_the_count_and_the_budget_spare_unseen_runs_and_the_one_that_just_ended(tmp_path):
    store = RunStore(tmp_path)
    t = time.time() - 100
    for i, seen in enumerate([True, False, True, False]):
        fake_run(store, f"u{i}", created=t + i, size=10_000, seen=seen)
    gone = store.evict(keep=1, max_age_days=None, max_mb=1e-6, spare=("u3",))
    assert sorted(gone) == [("u0", "run"), ("u2", "run")]
    assert [r.id for r in store.rows("run") if r.removed is None] == ["u1", "u3"]
    # Once its owner is told, an unseen one may go; the spared one only when not spared.
    assert store.mark_seen("u1") and store.mark_seen("u3")
    assert store.evict(keep=1, max_age_days=None, max_mb=1e-6, spare=("u3",)) == [("u1", "run")]


@pytest.mark.slow
def test_a_comparison_its_owner_has_not_seen_is_kept_past_the_count(tmp_path):
    app = rec.make_app(rec.small(steps=2), data_dir=tmp_path, train_keep_runs=1)
    with (
        served(app) as url,
        httpx.Client(base_url=url, timeout=60) as owner,
        httpx.Client(base_url=url, timeout=60) as teacher,
    ):
        first = rec.start(owner, task="copy", seed=1)["id"]
        watch(teacher, f"/api/recurrent/{first}")
        second = rec.start(owner, task="copy", seed=2)["id"]
        watch(teacher, f"/api/recurrent/{second}")
        # Past the last 1 kept, but its owner has not been told it ended: kept.
        assert owner.get(f"/api/recurrent/{first}").status_code == 200
        assert owner.get(f"/api/recurrent/{second}").status_code == 200  # both seen now
        third = rec.start(owner, task="copy", seed=3)["id"]
        watch(teacher, f"/api/recurrent/{third}")
        for was in (first, second):
            r = owner.get(f"/api/recurrent/{was}")
            assert r.status_code == 404 and "was removed on" in r.json()["message"], r.text
        assert owner.get(f"/api/recurrent/{third}").json()["state"] == "done"
