"""Runs kept in the data directory (services.store, services.training.kept): a real process
restart keeps a finished run whole (its link, state, numbers, download and model), a run killed
mid-training comes back interrupted at its last checkpoint, a corrupt folder is skipped with a
log line, the disk budget evicts oldest unshared first and leaves a tombstone, and a write that
fails midway leaves the old file."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import torch
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.pretrained import ModelRegistry
from attnviz.services import datadir
from attnviz.services.datadir import write_atomic
from attnviz.services.ownership import Ownership
from attnviz.services.store import INDEX, RunStore, StoreError
from attnviz.services.training import TrainService
from attnviz.settings import Settings
from tests.support.servers import wait_healthy
from tests.support.waits import until

ROOT = Path(__file__).resolve().parents[2]
TINY = {"layers": 2, "heads": 2, "d_model": 16}


def make_app(data_dir: Path, **settings):
    return create_app(Settings(device="cpu", builtin_model=False, data_dir=data_dir, **settings))


def wait(client, run_id: str) -> dict:
    """The run's state once it is no longer running."""
    return until(lambda: client.get(f"/api/train/{run_id}").json(),
                 lambda state: state["state"] != "running", f"run {run_id}")  # fmt: skip


def train(client, **body) -> str:
    r = client.post("/api/train", json=body)
    assert r.status_code == 202, r.text
    return r.json()["id"]


def members(data: bytes) -> dict[str, bytes]:
    z = zipfile.ZipFile(io.BytesIO(data))
    return {n: z.read(n) for n in z.namelist()}


# -- a real process restart -------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(data_dir: Path, log: Path, **settings: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """``attnviz serve`` on a free loopback port with ``data_dir`` (and ``settings``, more
    ``ATTNVIZ_`` variables): its URL and process, stopped at the end (SIGTERM), unless the test
    killed it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNVIZ_") and k != "PORT"}
    env.update(ATTNVIZ_DEVICE="cpu", ATTNVIZ_BUILTIN_MODEL="false", OMP_NUM_THREADS="1",
               ATTNVIZ_DATA_DIR=str(data_dir), **settings)  # fmt: skip
    port = free_port()
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "attnviz", "serve", "--host", "127.0.0.1", "--port", str(port)],
            stdout=out, stderr=out, env=env, cwd=ROOT,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, lambda: log.read_text(errors="replace"))
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def snapshot(http: httpx.Client, run_id: str) -> dict:
    """What a visitor reads of a finished run: its state, its stream, its download, the lists,
    its model traced in sentence mode."""
    state = http.get(f"/api/train/{run_id}").json()
    stream = http.get(f"/api/train/{run_id}/events").text
    zipped = http.get(f"/api/train/{run_id}/model.zip")
    assert zipped.status_code == 200
    trace = http.post("/api/trace?fields=attentions", json={"model": run_id, "text": "abcab"})
    assert trace.status_code == 200, trace.text
    exported = http.get(f"/api/train/{run_id}/export")
    assert exported.status_code == 200
    return {
        "state": state,
        "stream": [line for line in stream.splitlines() if line.startswith(("event:", "id:"))],
        "zip": members(zipped.content),
        "models": [m["name"] for m in http.get("/api/models").json()["models"]],
        "runs": http.get("/api/train").json(),
        "attentions": trace.json()["attentions"],
    }


@pytest.mark.slow
def test_a_restart_keeps_a_finished_run_its_link_numbers_download_and_model(tmp_path):
    data, log = tmp_path / "data", tmp_path / "serve.log"
    with serving(data, log) as (url, proc), httpx.Client(base_url=url, timeout=30) as http:
        run_id = train(http, arch=TINY, opt={"steps": 30}, checkpoints=3)
        assert wait(http, run_id)["state"] == "done"
        before = snapshot(http, run_id)
        cookies = dict(http.cookies)
    assert (data / INDEX).exists() and (data / "runs" / run_id / "variant-0").is_dir()
    with (
        serving(data, log) as (url, proc),
        httpx.Client(base_url=url, timeout=30, cookies=cookies) as http,
    ):
        after = snapshot(http, run_id)
        # Its link opens it for another visitor too (the id is the capability).
        with httpx.Client(base_url=url, timeout=30) as other:
            assert other.get(f"/api/train/{run_id}").json()["state"] == "done"
            assert run_id in [m["name"] for m in
                              other.get(f"/api/models?open={run_id}").json()["models"]]  # fmt: skip
    assert before["state"]["state"] == "done" and before["state"]["yours"]
    for key in before:
        assert after[key] == before[key], key


@pytest.mark.slow
def test_a_run_killed_mid_training_comes_back_interrupted_at_its_last_checkpoint(tmp_path):
    data, log = tmp_path / "data", tmp_path / "serve.log"
    with serving(data, log) as (url, proc), httpx.Client(base_url=url, timeout=30) as http:
        run_id = train(http, arch=TINY, opt={"steps": 5000}, checkpoints=50)
        state = until(lambda: http.get(f"/api/train/{run_id}").json(),
                      lambda state: len(state["variants"][0]["checkpoints"]) >= 2,
                      "its second checkpoint")  # fmt: skip
        assert state["state"] == "running", "the run must still be training when killed"
        cookies = dict(http.cookies)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    with (
        serving(data, log) as (url, proc),
        httpx.Client(base_url=url, timeout=30, cookies=cookies) as http,
    ):
        back = http.get(f"/api/train/{run_id}").json()
        listed = http.get("/api/train").json()["runs"]
        stream = http.get(f"/api/train/{run_id}/events").text
        # Its model as of a checkpoint is kept (stored as it trained), and opens in sentence
        # mode: a trace of it answers.
        v = back["variants"][0]
        models = [m["name"] for m in http.get("/api/models").json()["models"]]
        traced = http.post("/api/trace", json={"model": v["model"], "text": "abcabc"})
    assert back["state"] == "interrupted" and back["yours"]
    assert v["state"] == "cancelled"  # never shown as still running
    step = v["checkpoints"][-1]["step"]
    assert step > 0 and f"interrupted at step {step}" in back["reason"]
    kept = int(back["reason"].split("its model as of step ")[1])
    assert kept <= step and kept in [c["step"] for c in v["checkpoints"]]
    assert v["model_step"] == kept
    assert v["model"] in models and traced.status_code == 200, traced.text[:200]
    assert step in back["checkpoint_steps"] and v["history"]["step"][-1] == step
    assert [r["state"] for r in listed if r["id"] == run_id] == ["interrupted"]
    assert "event: state" in stream and "running" not in stream.split("event: state")[1][:60]


# -- in one process ---------------------------------------------------------------------------


@pytest.mark.slow
def test_a_corrupt_or_missing_run_folder_is_skipped_with_a_log_line(tmp_path, caplog):
    client = TestClient(make_app(tmp_path))
    ids = [train(client, arch=TINY, opt={"steps": 3}, checkpoints=1) for _ in range(1)]
    wait(client, ids[0])
    ids += [train(client, arch=TINY, opt={"steps": 3}, checkpoints=1)]
    wait(client, ids[1])
    ids += [train(client, arch=TINY, opt={"steps": 3}, checkpoints=1)]
    wait(client, ids[2])
    ids += [train(client, arch=TINY, opt={"steps": 3}, checkpoints=1)]
    wait(client, ids[3])
    runs = tmp_path / "runs"
    text = (runs / ids[0] / "run.json").read_bytes()
    (runs / ids[0] / "run.json").write_bytes(text[: len(text) // 2])  # truncated JSON
    (runs / ids[1] / "request.json").unlink()  # a missing file
    for f in (runs / ids[2]).rglob("*"):  # a row whose folder is gone
        if f.is_file():
            f.unlink()
    with caplog.at_level(logging.WARNING, logger="attnviz.services.training.service"):
        again = TestClient(make_app(tmp_path), cookies=client.cookies)
    skipped = [r for r in caplog.records if "skipped" in r.getMessage()]
    assert sorted(r.getMessage().split()[1] for r in skipped) == sorted(ids[:3])
    assert [r["id"] for r in again.get("/api/train").json()["runs"]] == [ids[3]]
    assert again.get(f"/api/train/{ids[3]}").json()["state"] == "done"
    assert again.get(f"/api/train/{ids[0]}").status_code == 404


def fake_run(store: RunStore, run_id: str, *, created: float, size: int, shared: bool = False,
             seen: bool = True):  # fmt: skip
    """A finished run's row and a folder of about ``size`` bytes; ``seen``: its owner was told
    it ended (eviction spares it until then)."""
    store.write_json(run_id, "filler.json", {"x": "y" * size})
    store.put(run_id, "run", replica="", access=Ownership(owner="v", shared=shared),
              state="done", step=1, created=created, finished=created + 1)  # fmt: skip
    if seen:
        assert store.mark_seen(run_id)


def test_the_disk_budget_evicts_oldest_unshared_first_and_leaves_a_tombstone(tmp_path):
    store = RunStore(tmp_path)
    t = time.time() - 100
    # oldest first: a shared one, then three unshared, each about 10 kB
    fake_run(store, "s0", created=t, size=10_000, shared=True)
    for i in range(3):
        fake_run(store, f"u{i}", created=t + 1 + i, size=10_000)
    # each folder about 14 kB as du -sb counts it (its 4096 bytes and its file): two of four fit
    settings = Settings(device="cpu", builtin_model=False, data_dir=tmp_path,
                        data_max_mb=30_000 / 2**20)  # fmt: skip
    service = TrainService(settings, torch.device("cpu"), ModelRegistry([]))
    rows = {r.id: r for r in store.rows("run")}
    assert [i for i, r in rows.items() if r.removed is not None] == ["u0", "u1"]
    assert not (tmp_path / "runs" / "u0").exists() and (tmp_path / "runs" / "s0").exists()
    message = str(service._gone("u0"))
    assert message.startswith("run: no run 'u0' on this server: it was removed on ")
    assert message.endswith("UTC to make room for newer runs: this server keeps its runs and "
                            "comparisons within 0.0286102 MB of disk")  # fmt: skip
    # The tombstone's 404 over HTTP names when and why, in a learner's words: no setting.
    client = TestClient(make_app(tmp_path, data_max_mb=30_000 / 2**20))
    r = client.get("/api/train/u1")
    assert r.status_code == 404 and "was removed on" in r.json()["message"]
    assert "to make room for newer runs" in r.json()["message"]
    assert "ATTNVIZ_" not in r.json()["message"]
    # Shared ones go last: with room for one, the shared one is what is left.
    fake_run(store, "u3", created=t + 10, size=10_000)
    TrainService(settings.model_copy(update={"data_max_mb": 15_000 / 2**20}),
                 torch.device("cpu"), ModelRegistry([]))  # fmt: skip
    left = [r.id for r in store.rows("run") if r.removed is None]
    assert left == ["s0"]


def test_age_and_count_evict_too(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="attnviz.services.store")
    store = RunStore(tmp_path)
    now = time.time()
    fake_run(store, "old", created=now - 10 * 86_400, size=10)
    for i in range(3):
        fake_run(store, f"n{i}", created=now - 10 + i, size=10)
    settings = Settings(device="cpu", builtin_model=False, data_dir=tmp_path,
                        data_max_age_days=5, train_keep_runs=2)  # fmt: skip
    service = TrainService(settings, torch.device("cpu"), ModelRegistry([]))
    assert [r.id for r in store.rows("run") if r.removed is None] == ["n1", "n2"]
    old, n0 = str(service._gone("old")), str(service._gone("n0"))
    assert old.endswith(" after 5 days, as long as this server keeps runs"), old
    assert n0.endswith(" to make room for newer runs: this server keeps its last 2 runs"), n0
    assert "ATTNVIZ_" not in old + n0
    # The host's settings are the log's to name.
    for setting in ("ATTNVIZ_DATA_MAX_AGE_DAYS", "ATTNVIZ_TRAIN_KEEP_RUNS"):
        assert f"({setting})" in caplog.text


def test_a_reason_an_older_attnviz_stored_reads_without_the_setting(tmp_path):
    """A tombstone's reason as attnviz wrote it before (the setting named in parentheses) is
    said without it: a learner reads the 404."""
    store = RunStore(tmp_path)
    fake_run(store, "was", created=time.time() - 100, size=10)
    store.remove("was", "to keep this server's runs within 1024 MB (ATTNVIZ_DATA_MAX_MB)")
    settings = Settings(device="cpu", builtin_model=False, data_dir=tmp_path)
    message = str(TrainService(settings, torch.device("cpu"), ModelRegistry([]))._gone("was"))
    assert message.endswith("UTC to keep this server's runs within 1024 MB"), message


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_partial_one(tmp_path, monkeypatch):
    path = tmp_path / "run.json"
    write_atomic(path, b'{"old": true}')

    def broken(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(datadir.os, "fsync", broken)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, b'{"new": "half')
    assert json.loads(path.read_bytes()) == {"old": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]
    # A model folder is written beside its place and renamed: a failure keeps the old one.
    monkeypatch.undo()
    store = RunStore(tmp_path / "data")
    store.write_folder("r", "variant-0", lambda p: (p / "config.json").write_text("{}"))

    def half(folder: Path) -> None:
        (folder / "config.json").write_text('{"half')
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        store.write_folder("r", "variant-0", half)
    kept = tmp_path / "data" / "runs" / "r"
    assert sorted(p.name for p in kept.iterdir()) == ["variant-0"]
    assert (kept / "variant-0" / "config.json").read_text() == "{}"
    with pytest.raises(StoreError):
        store.read_json("r", "missing.json")


def small_setups():
    from dataclasses import replace

    from attnviz.training import recurrent as R

    return {
        name: replace(s, opt=replace(s.opt, steps=10), lengths=(4, 8, 16, 32))
        for name, s in R.SETUPS.items()
    }


def comparisons_app(data_dir: Path, **settings):
    from attnviz.services.recurrent import RecurrentService

    s = Settings(device="cpu", builtin_model=False, data_dir=data_dir, **settings)
    app = create_app(s)
    app.state.recurrent = RecurrentService(s, small_setups())
    return app


@pytest.mark.slow
def test_a_comparison_is_kept_across_a_restart_and_one_going_then_is_interrupted(tmp_path):
    client = TestClient(comparisons_app(tmp_path))
    r = client.post("/api/recurrent", json={"task": "copy", "seed": 1})
    assert r.status_code == 202, r.text
    cid = r.json()["id"]
    before = until(lambda: client.get(f"/api/recurrent/{cid}").json(),
                   lambda state: state["state"] != "running", "the comparison's end")  # fmt: skip
    assert before["state"] == "done" and before["yours"]
    again = TestClient(comparisons_app(tmp_path), cookies=client.cookies)
    assert again.get(f"/api/recurrent/{cid}").json() == before
    stranger = TestClient(comparisons_app(tmp_path))
    read = stranger.get(f"/api/recurrent/{cid}").json()
    assert read == {**before, "yours": False, "can_cancel": False}
    # A comparison whose row says running when a server starts was going when it stopped.
    store = RunStore(tmp_path)
    row = store.row(cid)
    assert row is not None and row.kind == "comparison" and row.finished is not None
    store.put(cid, "comparison", replica="", access=row.access(), state="running", step=0,
              created=row.created)  # fmt: skip
    back = TestClient(comparisons_app(tmp_path), cookies=client.cookies)
    got = back.get(f"/api/recurrent/{cid}").json()
    assert got["state"] == "interrupted" and got["reason"].startswith("interrupted")
    # Forgotten by its owner: gone from the store too.
    assert back.delete(f"/api/recurrent/{cid}").status_code == 200
    assert TestClient(comparisons_app(tmp_path)).get(f"/api/recurrent/{cid}").status_code == 404


def test_two_replicas_on_one_data_directory_both_serve_a_finished_run(tmp_path):
    """Replica b started before a's run existed: it reads the run from the shared index."""
    a = TestClient(make_app(tmp_path, replica="r1"))
    replica_b = make_app(tmp_path, replica="r2")
    run_id = train(a, arch=TINY, opt={"steps": 5}, checkpoints=1)
    b = TestClient(replica_b, cookies=a.cookies)  # one secret in one directory: one visitor
    assert run_id.startswith("r1-")
    done = wait(a, run_id)
    assert done["state"] == "done"
    assert b.get(f"/api/train/{run_id}").json() == done
    assert run_id in [m["name"] for m in b.get("/api/models").json()["models"]]
    assert b.post("/api/trace?fields=attentions",
                  json={"model": run_id, "text": "abcab"}).status_code == 200  # fmt: skip
    # b's start does not interrupt a's running runs: only its own replica's rows.
    c = TestClient(make_app(tmp_path, replica="r1"))
    assert c.get(f"/api/train/{run_id}").json()["state"] == "done"


def test_a_running_row_at_start_is_interrupted_at_its_last_checkpoint(tmp_path):
    """In one process (the slow test above kills a real one): a second server on the data
    directory while the first trains reads the run as interrupted, as of its last checkpoint."""
    client = TestClient(make_app(tmp_path))
    run_id = train(client, arch=TINY, opt={"steps": 5000}, checkpoints=50)
    until(lambda: RunStore(tmp_path).row(run_id), lambda row: row is not None and row.step > 0,
          "its first checkpoint in its row")  # fmt: skip
    try:
        again = TestClient(make_app(tmp_path), cookies=client.cookies)
        back = again.get(f"/api/train/{run_id}").json()
    finally:
        client.delete(f"/api/train/{run_id}")
    v = back["variants"][0]
    step = v["checkpoints"][-1]["step"]
    assert back["state"] == "interrupted" and f"interrupted at step {step}:" in back["reason"]
    assert v["state"] == "cancelled" and back["yours"]
    # Its model as of a checkpoint (weights are stored every few seconds as it trains, and at
    # the first checkpoint) is kept, under the name it would have had.
    assert v["model"] == run_id and "and its model as of step " in back["reason"]
    assert [r["state"] for r in again.get("/api/train").json()["runs"]] == ["interrupted"]


def test_a_stop_between_run_json_and_its_row_says_where_run_json_stopped(tmp_path, monkeypatch):
    """A checkpoint writes run.json, then the run's row: a server stopped between the two
    leaves the row a checkpoint (or more) behind. The run comes back interrupted where its
    run.json says, the step its checkpoints and losses end at."""
    real = RunStore.put
    monkeypatch.setattr(RunStore, "put",  # every row after the first checkpoint's: lost
                        lambda self, *a, **kw: kw.get("step") or real(self, *a, **kw))  # fmt: skip
    client = TestClient(make_app(tmp_path))
    run_id = train(client, arch=TINY, opt={"steps": 5000}, checkpoints=50)
    until(lambda: client.get(f"/api/train/{run_id}").json()["variants"][0]["checkpoints"],
          lambda checkpoints: len(checkpoints) >= 3, "its third checkpoint")  # fmt: skip
    try:
        assert RunStore(tmp_path).row(run_id).step == 0  # (the row, behind)
        again = TestClient(make_app(tmp_path), cookies=client.cookies)
        back = again.get(f"/api/train/{run_id}").json()
    finally:
        client.delete(f"/api/train/{run_id}")
    step = back["variants"][0]["checkpoints"][-1]["step"]
    assert step > 0 and back["reason"].startswith(f"interrupted at step {step}:")
    assert back["variants"][0]["history"]["step"][-1] == step


@pytest.mark.slow
def test_two_replicas_list_each_others_finished_runs_to_whom_they_are_listed(tmp_path):
    """Both replicas started before the runs existed: b's runs list and model list show a's
    finished runs to their owner, to a visitor who opened one by its link (on a), and, once
    the operator shares one (on a), to everyone; a run listed for nobody asking is not read
    in; a run its owner forgets on a leaves b's lists."""
    token = "the-operators-token-for-this-test"
    app_a = make_app(tmp_path, replica="r1", admin_token=token)
    app_b = make_app(tmp_path, replica="r2", admin_token=token)
    owner_a = TestClient(app_a)
    mine = train(owner_a, arch=TINY, opt={"steps": 5}, checkpoints=1)
    other_a = TestClient(app_a)
    theirs = train(other_a, arch=TINY, opt={"steps": 5}, checkpoints=1)
    assert wait(owner_a, mine)["state"] == "done" and wait(other_a, theirs)["state"] == "done"
    held = app_b.state.training.runs
    assert mine not in held and theirs not in held  # b started before they existed

    def listed(client) -> tuple[list[str], list[str]]:
        runs = [r["id"] for r in client.get("/api/train").json()["runs"]]
        models = [m["run"] for m in client.get("/api/models").json()["models"] if m["run"]]
        return runs, models

    owner_b = TestClient(app_b, cookies=owner_a.cookies)  # one secret, one directory
    assert listed(owner_b) == ([mine], [mine])
    assert owner_b.get("/api/train").json()["runs"][0]["yours"]
    assert mine in held and theirs not in held  # only what was listed was read in
    assert owner_b.post("/api/trace?fields=attentions",
                        json={"model": mine, "text": "abcab"}).status_code == 200  # fmt: skip

    # A visitor opens the run by its link on a: b lists it for them too (b holds it already).
    viewer_a = TestClient(app_a)
    assert viewer_a.get(f"/api/train/{mine}").status_code == 200
    viewer_b = TestClient(app_b, cookies=viewer_a.cookies)
    assert listed(viewer_b) == ([mine], [mine])
    assert not viewer_b.get("/api/train").json()["runs"][0]["can_cancel"]
    # Openers seen by either replica are kept: neither writes over the other's.
    assert TestClient(app_b).get(f"/api/train/{mine}").status_code == 200
    assert TestClient(app_a).get(f"/api/train/{mine}").status_code == 200
    row = RunStore(tmp_path).row(mine)
    assert row is not None and len(row.openers) == 3

    # The operator shares the other visitor's run on a: everyone's lists on b have it.
    op = {"Authorization": f"Bearer {token}"}
    stranger_b = TestClient(app_b)
    assert listed(stranger_b) == ([], [])
    assert owner_a.post(f"/api/train/{theirs}/share", headers=op).status_code == 200
    assert listed(stranger_b) == ([theirs], [theirs])
    runs, models = listed(owner_b)
    assert sorted(runs) == sorted([mine, theirs]) and sorted(models) == sorted(runs)
    assert runs == [r["id"] for r in owner_b.get("/api/train").json()["runs"]]
    # The operator lists every one on b.
    assert sorted(r["id"] for r in TestClient(app_b).get("/api/train", headers=op)
                  .json()["runs"]) == sorted([mine, theirs])  # fmt: skip

    # Its owner forgets it on a: it leaves b's lists and its model b's registry.
    assert owner_a.delete(f"/api/train/{mine}").status_code == 200
    assert listed(owner_b) == ([theirs], [theirs])
    assert mine not in held and mine not in app_b.state.registry.models
    assert owner_b.get(f"/api/train/{mine}").status_code == 404


def test_a_stored_run_that_cannot_be_read_is_tried_once_by_the_lists(tmp_path, caplog):
    a = TestClient(make_app(tmp_path, replica="r1"))
    app_b = make_app(tmp_path, replica="r2")
    run_id = train(a, arch=TINY, opt={"steps": 3}, checkpoints=1)
    wait(a, run_id)
    (tmp_path / "runs" / run_id / "run.json").write_bytes(b"{")
    b = TestClient(app_b, cookies=a.cookies)
    with caplog.at_level(logging.WARNING, logger="attnviz.services.training.service"):
        for _ in range(3):
            assert b.get("/api/train").json()["runs"] == []
    assert sum("skipped" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.slow
def test_a_run_keeps_its_model_at_checkpoints_as_it_trains_and_drops_them_at_its_end(tmp_path):
    client = TestClient(make_app(tmp_path))
    run_id = train(client, arch=TINY, opt={"steps": 40}, checkpoints=4)
    wait(client, run_id)
    folder = tmp_path / "runs" / run_id
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == ["variant-0"]
    assert json.loads((folder / "run.json").read_text())["variants"][0]["weights"] == {
        "folder": "checkpoint-0-step-40",  # its last checkpoint's, always written
        "step": 40,
    }


def test_the_weights_of_a_checkpoint_stay_named_by_run_json_while_the_next_are_written(tmp_path):
    from attnviz.schemas.train import TrainRequest
    from attnviz.services.training import kept
    from attnviz.services.training.runs import LiveRun
    from attnviz.training.trainer import train as train_model

    store = RunStore(tmp_path)
    service = make_app(tmp_path).state.training
    req = TrainRequest.model_validate({"arch": TINY, "opt": {"steps": 6}, "checkpoints": 2})
    run = LiveRun("r" * 32, req, service.plan(req), Ownership(owner="v"))
    seen: list[set[str]] = []

    def on_weights(so_far):
        kept.save_weights(store, run, 0, so_far)
        on_disk = {p.name for p in store.folder(run.id).glob("checkpoint-*")}
        seen.append(on_disk)
        kept.save(store, run, "r1")  # the checkpoint's save: run.json names the new folder
        named = json.loads((store.folder(run.id) / "run.json").read_text())
        assert named["variants"][0]["weights"]["folder"] in on_disk

    plan = run.plan
    train_model(plan.task, run.variants[0].arch, plan.opt, checkpoints=2, on_weights=on_weights)
    # The one run.json named, and the newest: never more, and the oldest gone.
    assert seen == [{"checkpoint-0-step-0"}, {"checkpoint-0-step-0", "checkpoint-0-step-2"},
                    {"checkpoint-0-step-2", "checkpoint-0-step-6"}]  # fmt: skip
