"""Training runs over real HTTP: start (202), state, server-sent events, cancel, bounds, busy,
a run's models traced like any other, and runs that are gone."""

from __future__ import annotations

import itertools
import json
import threading
import time
import types
import typing

import httpx
import pytest
import torch
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.engine import capture
from attnviz.learn import checks_train
from attnviz.learn.steps import BY_ID
from attnviz.schemas.train import TaskName, TrainRequest
from attnviz.settings import Settings
from attnviz.training.catalog import SWITCHES, TASKS
from tests.support.servers import served
from tests.support.waits import until

TINY = {"layers": 2, "heads": 2, "d_model": 16}


def make_app(**settings):
    return create_app(Settings(device="cpu", builtin_model=False, **settings))


def events(
    client: httpx.Client,
    run_id: str,
    last: int | None = None,
    opened: typing.Callable[[], None] | None = None,
    kind: str = "train",
) -> list[tuple[int, str, dict]]:
    """Every event of the run's stream until its end: (id, name, data). ``opened`` is called
    once the stream's answer has begun (its status and headers are in); ``kind``: the path's
    ("recurrent" for a comparison's)."""
    headers = {"Last-Event-ID": str(last)} if last is not None else {}
    out: list[tuple[int, str, dict]] = []
    with client.stream("GET", f"/api/{kind}/{run_id}/events", headers=headers) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        if opened is not None:
            opened()
        fields: dict[str, str] = {}
        for line in r.iter_lines():
            if line.startswith(":"):
                continue  # a keep-alive comment
            if not line:
                if fields:
                    out.append((int(fields["id"]), fields["event"], json.loads(fields["data"])))
                fields = {}
                continue
            key, _, value = line.partition(": ")
            fields[key] = value
    return out


def start(client, **body) -> str:
    r = client.post("/api/train", json=body)
    assert r.status_code == 202, r.text
    assert r.headers["location"] == f"/api/train/{r.json()['id']}" == r.json()["url"]
    return r.json()["id"]


def test_options_offer_every_task_and_switch_with_the_servers_bounds():
    client = TestClient(make_app(train_max_steps=1234, train_slots=2))
    o = client.get("/api/train/options").json()
    assert [t["name"] for t in o["tasks"]] == list(TASKS) == list(typing.get_args(TaskName))
    assert o["switches"] == {k: list(v) for k, v in SWITCHES.items()}
    assert o["limits"]["max_steps"] == 1234 and o["slots"] == 2
    for t in o["tasks"]:
        assert len(t["about"]) > 80 and t["arch"]["layers"] >= 1


@pytest.mark.slow
def test_a_run_streams_its_steps_and_checkpoints_and_ends_as_a_model():
    app = make_app()
    with served(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        run_id = start(client, arch=TINY, opt={"steps": 40, "seed": 3}, checkpoints=4)
        seen = events(client, run_id)
        state = client.get(f"/api/train/{run_id}").json()
        # The state comes first; ids count on from it; the end comes last, once.
        assert seen[0][1] == "state" and seen[-1][1] == "end"
        assert [i for i, _, _ in seen[1:]] == list(range(seen[0][0] + 1, seen[-1][0] + 1))
        assert [n for _, n, _ in seen].count("end") == 1 and seen[-1][2]["state"] == "done"
        # The events add up to the run's state.
        first = seen[0][2]
        steps = first["variants"][0]["history"]["step"][:]
        cps = [c["step"] for c in first["variants"][0]["checkpoints"]]
        for _, name, data in seen[1:]:
            if name == "steps":
                steps += data["step"]
            if name == "checkpoint":
                cps.append(data["checkpoint"]["step"])
        v = state["variants"][0]
        assert steps == v["history"]["step"] == list(range(1, 41))
        assert cps == [c["step"] for c in v["checkpoints"]] == state["checkpoint_steps"]
        assert state["checkpoint_steps"] == [0, 2, 10, 22, 40]
        assert v["state"] == "done" and v["model"] == run_id and state["state"] == "done"
        assert len(v["history"]["grad_norms"][0]) == 2 and v["params"] > 0
        # Resuming after an event gives the rest, without the state.
        middle = seen[len(seen) // 2][0]
        assert events(client, run_id, last=middle) == [e for e in seen if e[0] > middle]

        # The finished model is listed, and traced like any other model: its attention is
        # the engine's own on the run's model, to the last bit.
        listed = {m["name"]: m for m in client.get("/api/models").json()["models"]}
        assert listed[run_id]["run"] == run_id and listed[run_id]["family"] == "attnviz"
        assert listed[run_id]["source"] == f"run {run_id}"
        # Named for a person by what it is and when it started (issue 41), in the run, its
        # summary and its model alike: never its id.
        assert state["title"] == listed[run_id]["title"] == "induction, 2 layers"
        assert state["created"] == listed[run_id]["created"]
        assert 0 < time.time() - state["created"] < 120
        (summary,) = [r for r in client.get("/api/train").json()["runs"] if r["id"] == run_id]
        assert (summary["title"], summary["created"]) == (state["title"], state["created"])
        text = state["probe"]["text"]
        # The token the page opens it on (issue 28, 5.13): the repeat's first letter.
        assert state["probe"]["query"] == (len(state["probe"]["tokens"]) + 1) // 2
        r = client.post("/api/trace?fields=attentions", json={"model": run_id, "text": text})
        assert r.status_code == 200, r.text
        model = app.state.registry.get(run_id).model
        ids = torch.tensor([app.state.registry.get(run_id).tokenizer(text).ids])
        with torch.no_grad(), capture(model) as cache:
            model(ids)
        for layer, got in enumerate(r.json()["attentions"]):
            want = cache[f"blocks.{layer}.attn.hook_pattern"][0]
            assert torch.equal(torch.tensor(got, dtype=torch.float32), want)
        # The last checkpoint's 8-bit snapshot is that very attention, to within half a step.
        cp = v["checkpoints"][-1]["thumbs"]
        import base64

        values = torch.frombuffer(bytearray(base64.b64decode(cp["values"])), dtype=torch.uint8)
        values = values.view(*cp["shape"]).float()
        scale = torch.tensor(cp["scale"])
        snap = values * scale[..., None, None] / 255
        exact = torch.stack([cache[f"blocks.{i}.attn.hook_pattern"][0] for i in range(2)])
        assert (snap - exact).abs().max() <= scale.max() / 255 / 2 + 1e-6


@pytest.mark.slow
def test_the_same_seed_gives_the_same_run_and_compare_trains_every_value():
    client = TestClient(make_app())
    runs = []
    for body in ({"opt": {"steps": 12, "seed": 5}},
                 {"opt": {"steps": 12, "seed": 5}, "compare": "scale"}):  # fmt: skip
        run_id = start(client, arch=TINY, checkpoints=2, **body)
        runs.append(wait(client, run_id))
    one, two = runs
    assert two["title"] == "induction, scale compared (2 models)"
    assert [v["label"] for v in two["variants"]] == ["1/√d scaling", "no scaling"]
    assert [v["model"] for v in two["variants"]] == [
        f"{two['id']}-1-d-scaling", f"{two['id']}-no-scaling"]  # fmt: skip
    assert [v["arch"]["scale"] for v in two["variants"]] == [True, False]
    # The first variant is the one model of the first run, number for number.
    assert two["variants"][0]["history"]["loss"] == one["variants"][0]["history"]["loss"]
    assert two["variants"][1]["history"]["loss"] != one["variants"][0]["history"]["loss"]


def wait(client, run_id: str) -> dict:
    """The run's state once it has ended."""
    return until(lambda: client.get(f"/api/train/{run_id}").json(),
                 lambda s: s["state"] not in ("queued", "running"), "the run ending")  # fmt: skip


@pytest.mark.parametrize(
    ("body", "field", "rule"),
    [
        (
            {"opt": {"steps": 1001}},
            "opt.steps",
            "1,001 is over this server's cap: it trains at most 1,000 steps a run; train fewer "
            "steps, or ask its host to allow more",
        ),
        (
            {"arch": {"layers": 8, "heads": 4, "d_model": 256, "ffn": True}},
            "arch",
            "parameters are over this server's cap: it trains at most 2,000,000 parameters",
        ),
        (
            {"preset": "positions"},
            "steps",
            "the preset \u201cPosition encodings on the induction task\u201d trains 600 steps, "
            "over this server's cap: it trains at most 500 steps a run",
        ),
        ({"preset": "positions", "steps": 601}, "steps", "more than the preset's own 600"),
        ({"steps": 10}, "steps", "only with a preset"),
        ({"arch": {"heads": 3, "d_model": 64}}, "arch.heads", "does not divide"),
        ({"arch": {"layers": 9}}, "arch.layers", "less than or equal to 8"),
        ({"opt": {"lr": 0}}, "opt.lr", "greater than 0"),
        ({"preset": "nope"}, "preset", "no preset 'nope'"),
        ({"preset": "x", "arch": TINY}, "preset", "sets arch, opt and compare itself"),
        ({"text": "abc"}, "text", "only the charlm task"),
        ({"compare": "depth"}, "compare", "Input should be"),
        ({"task": "chess"}, "task", "Input should be"),
        ({"checkpoints": 0}, "checkpoints", "greater than or equal to 1"),
    ],
)
def test_a_run_over_a_bound_is_refused_naming_the_field(body, field, rule):
    # A preset of 600 steps is over a cap of 500, a run of its own of 1,001 over 1,000.
    client = TestClient(make_app(train_max_steps=500 if "preset" in body else 1000))
    r = client.post("/api/train", json=body)
    assert r.status_code == 422, r.text
    message = r.json()["message"]
    assert message.startswith(f"{field}: ") and rule in message, message
    assert "ATTNVIZ_" not in message  # a learner reads it: the rule, never a setting's name
    assert client.get("/api/models").json()["models"] == []  # nothing started


@pytest.mark.slow
def test_a_full_trainer_queues_then_answers_503_and_a_cancelled_run_keeps_its_model():
    """(Issue 27: a start past the slots used to get 503; it now waits in line, and 503 comes
    past ATTNVIZ_TRAIN_QUEUE, here 0: no line at all.)"""
    client = TestClient(make_app(train_slots=1, train_queue=0))
    run_id = start(client, arch=TINY, opt={"steps": 5000}, checkpoints=2)
    while not client.get(f"/api/train/{run_id}").json()["variants"][0]["history"]["step"]:
        time.sleep(0.02)
    assert client.get("/healthz").json()["load"]["training"] == 1
    busy = client.post("/api/train", json={"arch": TINY, "opt": {"steps": 5}})
    assert busy.status_code == 503, busy.text
    assert int(busy.headers["retry-after"]) >= 1 and "busy" in busy.json()["message"]
    assert "as many as it keeps waiting" in busy.json()["message"]
    assert "ATTNVIZ_" not in busy.json()["message"]
    r = client.delete(f"/api/train/{run_id}")
    assert r.status_code == 200 and r.json()["id"] == run_id
    state = wait(client, run_id)
    assert state["state"] == "cancelled" and state["reason"] == "cancelled"
    v = state["variants"][0]
    assert 0 < len(v["history"]["step"]) < 5000 and v["state"] == "cancelled"
    # It keeps what it learned: a checkpoint where it stopped, and its model.
    assert v["checkpoints"][-1]["step"] == v["history"]["step"][-1]
    assert (
        v["model"] == run_id
        and client.post(
            "/api/trace?fields=attentions", json={"model": run_id, "text": "abc"}
        ).status_code
        == 200
    )
    # Its slot is free again.
    assert client.get("/healthz").json()["load"]["training"] == 0
    assert client.post("/api/train", json={"arch": TINY, "opt": {"steps": 5}}).status_code == 202


def test_a_run_stops_at_the_time_limit_and_says_so(monkeypatch):
    """A run past the server's time limit stops, keeps the steps it trained, and says why. The
    worker's clock is the test's: it passes the limit after the worker's first 40 looks at it
    (how many steps a machine trains in a given time is no rule)."""
    from attnviz.services.training import worker

    looks = itertools.count()
    real = time.monotonic
    clock = types.SimpleNamespace(monotonic=lambda: real() + (3600 if next(looks) >= 40 else 0))
    monkeypatch.setattr(worker, "time", clock)
    client = TestClient(make_app(train_max_seconds=600))
    state = wait(client, start(client, arch=TINY, opt={"steps": 5000}, checkpoints=2))
    assert state["state"] == "cancelled"
    assert state["reason"] == "stopped at this server's time limit of 600 s a run", state["reason"]
    assert 0 < len(state["variants"][0]["history"]["step"]) < 5000


@pytest.mark.slow
def test_a_run_that_is_gone_answers_404_everywhere_and_never_another_run():
    app = make_app(train_keep_runs=1)
    training = app.state.training
    evict = training._evict

    def slow_evict(*args, **kwargs):  # as under CI's load: a reader who sees the second done
        time.sleep(0.3)  # must not still read the first (it was told ended before its eviction)
        evict(*args, **kwargs)

    training._evict = slow_evict
    client = TestClient(app)
    first = start(client, arch=TINY, opt={"steps": 3}, checkpoints=1)
    wait(client, first)
    text = {"model": first, "text": "abcab"}
    assert client.post("/api/trace?fields=attentions", json=text).status_code == 200  # now cached
    second = start(client, arch=TINY, opt={"steps": 3}, checkpoints=1)
    wait(client, second)
    for method, path in [("GET", f"/api/train/{first}"), ("GET", f"/api/train/{first}/events"),
                         ("DELETE", f"/api/train/{first}")]:  # fmt: skip
        r = client.request(method, path)
        assert r.status_code == 404 and f"no run '{first}'" in r.json()["message"], path
    names = [m["name"] for m in client.get("/api/models").json()["models"]]
    assert names == [second]
    r = client.post("/api/trace?fields=attentions", json=text)  # the cache does not answer for it
    assert r.status_code == 404 and "no model named" in r.json()["message"]
    # Deleting a finished run forgets it and its model.
    assert client.delete(f"/api/train/{second}").status_code == 200
    assert client.get(f"/api/train/{second}").status_code == 404
    assert client.get("/api/models").json()["models"] == []


@pytest.mark.slow
def test_an_event_stream_outlives_the_request_time_limit(monkeypatch):
    """The time limit bounds a request until it answers; a stream that has begun goes on. The
    run's training is held until the stream has been open for one and a half times the limit
    (pacing, not a measure), so the stream is open past the limit on any machine. The limit,
    2 s, is far above what starting a run and opening its stream take here (about 50 ms): a
    machine busy with other work still answers both within it."""
    from attnviz.services.training import worker

    limit = 2.0
    real_train = worker.train
    go = threading.Event()

    def held_train(*args, **kwargs):
        assert go.wait(60), "the test never let the run train"
        return real_train(*args, **kwargs)

    monkeypatch.setattr(worker, "train", held_train)
    app = make_app(request_timeout_s=limit)
    timer = threading.Timer(1.5 * limit, go.set)
    try:
        with served(app) as url, httpx.Client(base_url=url, timeout=60) as client:
            run_id = start(client, arch=TINY, opt={"steps": 40}, checkpoints=2)
            seen = events(client, run_id, opened=timer.start)
            assert seen[-1][1] == "end" and seen[-1][2]["state"] == "done"
            # Nothing had trained when the stream began; every step came down it after the limit.
            assert seen[0][1] == "state" and seen[0][2]["variants"][0]["history"]["step"] == []
            steps = [s for _, name, data in seen if name == "steps" for s in data["step"]]
            assert steps == list(range(1, 41))
    finally:
        timer.cancel()
        go.set()


def test_the_request_schema_names_the_tasks_the_catalog_has():
    assert set(typing.get_args(TaskName)) == set(TASKS)
    assert TrainRequest().task in TASKS


@pytest.mark.slow
def test_a_charlm_run_on_a_pasted_text_writes_samples_and_saves_as_a_folder(tmp_path):
    import io
    import zipfile

    from attnviz.pretrained.folder import load_folder

    client = TestClient(make_app())
    text = "the cat sat on the mat, and the dog sat on the log. " * 20
    run_id = start(client, task="charlm", text=text, arch=TINY, opt={"steps": 20}, checkpoints=2)
    state = wait(client, run_id)
    assert state["state"] == "done" and state["task"] == "charlm"
    # The baseline to beat: a bigram model of the text, which predicts it well.
    assert 0 < state["baseline"] < 1.5
    prompt = state["probe"]["prompt"]
    assert prompt and text.find(prompt) >= 0
    for cp in state["variants"][0]["checkpoints"]:
        assert len(cp["sample"]) == 80 and set(cp["sample"]) <= set(text)

    # Characters the model has no token for are refused by name, one by one.
    r = client.post("/api/trace?fields=attentions", json={"model": run_id, "text": "the CAT"})
    assert r.status_code == 422 and "has no token for 'A', 'C', 'T';" in r.json()["message"]

    # Downloaded and unzipped, the folder loads as the model it was, to the last bit.
    r = client.get(f"/api/train/{run_id}/model.zip")
    assert r.status_code == 200 and r.headers["content-type"] == "application/zip"
    assert f'filename="{run_id}.zip"' in r.headers["content-disposition"]
    zipfile.ZipFile(io.BytesIO(r.content)).extractall(tmp_path)
    loaded = load_folder(tmp_path / run_id, torch.device("cpu"))
    trained = client.app.state.registry.get(run_id)
    ids = torch.tensor([trained.tokenizer("the dog sat").ids])
    assert loaded.tokenizer("the dog sat").ids == ids[0].tolist()
    with torch.no_grad():
        assert torch.equal(loaded.model.logits(loaded.model(ids)),
                           trained.model.logits(trained.model(ids)))  # fmt: skip
    assert client.get(f"/api/train/{run_id}/model.zip?variant=1").status_code == 422


def test_a_charlm_text_too_short_or_too_long_is_refused_by_name():
    client = TestClient(make_app(train_max_text_chars=2000))
    r = client.post("/api/train", json={"task": "charlm", "text": "too short"})
    assert r.status_code == 422 and r.json()["message"].startswith("text: ")
    r = client.post("/api/train", json={"task": "charlm", "text": "x" * 2001})
    assert r.status_code == 422 and "cap of 2,000" in r.json()["message"]


@pytest.mark.slow
def test_a_state_read_while_it_trains_and_the_events_after_it_add_up_exactly():
    """Whenever the state is read, the events after its seq carry exactly what it lacks: no
    step or checkpoint twice, none missing (a stream starts with a state, then its events)."""
    app = make_app()
    with served(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        run_id = start(client, arch=TINY, opt={"steps": 300}, checkpoints=10)
        reads = []
        while True:
            state = client.get(f"/api/train/{run_id}").json()
            reads.append(state)
            if state["state"] != "running":
                break
        seen = events(client, run_id, last=0)  # every event from the first
        final = client.get(f"/api/train/{run_id}").json()["variants"][0]
        assert len(reads) > 3
        for state in reads:
            v = state["variants"][0]
            steps = v["history"]["step"][:]
            cps = [c["step"] for c in v["checkpoints"]]
            for i, name, data in seen:
                if i <= state["seq"]:
                    continue
                steps += data["step"] if name == "steps" else []
                cps += [data["checkpoint"]["step"]] if name == "checkpoint" else []
            assert steps == final["history"]["step"] == list(range(1, 301))
            assert cps == [c["step"] for c in final["checkpoints"]]


@pytest.mark.slow
def test_an_encoder_decoder_run_shows_its_three_attentions_and_answers_when_asked():
    """A short reverse run: its checkpoints carry the cross-attention and the encoder's
    attention; it is not a sentence-mode model; asked to reverse a string, it answers with the
    very patterns the engine computes."""
    app = make_app()
    with served(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        run_id = start(client, task="reverse", arch={**TINY, "layers": 1}, opt={"steps": 30},
                       checkpoints=2)  # fmt: skip
        run = wait(client, run_id)
        assert run["state"] == "done", run["reason"]
        probe = run["probe"]
        assert probe["source"] == list("pathfinder.") and probe["prompt"] == "pathfinder"
        assert probe["tokens"] == list(".rednifhtap") and probe["writes"] == list("rednifhtap.")
        assert probe["verb"] == "reverses"
        v = run["variants"][0]
        for cp in v["checkpoints"]:
            for kind in ("thumbs", "cross", "encoder"):
                assert cp[kind]["shape"] == [1, 2, 11, 11], kind
            assert isinstance(cp["sample"], str)
        assert v["model"] is None and v["induction"] is None
        assert len(v["alignment"]) == 1 and len(v["alignment"][0]) == 2
        assert len(v["history"]["grad_norms"][0]) == 2  # the encoder's block, the decoder's
        names = [m["name"] for m in client.get("/api/models").json()["models"]]
        assert run_id not in names

        r = client.post(f"/api/train/{run_id}/decode", json={"source": "abcab"})
        assert r.status_code == 200, r.text
        d = r.json()
        assert d["source"] == list("abcab.") and d["expected"] == "bacba"
        assert (
            d["tokens"][0] == "." and d["tokens"][1:] == list(d["output"])[: len(d["tokens"]) - 1]
        )
        assert "".join(d["writes"]).rstrip(".") == d["output"]
        # The patterns are the engine's on the same ids, to the last digit of float32.
        model = app.state.training.get(run_id).variants[0].result.model
        vocab = app.state.training.get(run_id).plan.task.vocab
        ids = torch.tensor([vocab.encode("".join(d["tokens"]))])
        src = torch.tensor([vocab.encode("abcab.")])
        names = {"self": "blocks.0.attn.hook_pattern", "cross": "blocks.0.cross_attn.hook_pattern",
                 "encoder": "encoder.blocks.0.attn.hook_pattern"}  # fmt: skip
        with torch.no_grad(), capture(model, list(names.values())) as cache:
            model(ids, src)
        for kind, name in names.items():
            assert torch.tensor(d[kind])[0].tolist() == cache[name][0].tolist(), kind

        # What it can be asked is in the run's state, for the page to say.
        assert run["ask"] == {"alphabet": "abcdefghijklmnopqrstuvwxyz", "max_len": 12,
                              "min_len": 4}  # fmt: skip
        for body, rule in [
            (
                {"source": "Abc"},
                "source: the model has no token for 'A'; it reads only lowercase letters a to z",
            ),
            ({"source": "ABC"}, "source: the model has no token for 'A', 'B', 'C'; "),
            ({"source": "a b"}, "source: the model has no token for ' '; "),
            ({"source": "a" * 13}, "source: 13 letters; the model was trained on 4 to 12"),
            ({"source": "abc", "variant": 1}, "variant: 1 is not one of 0 to 0"),
            ({"source": ""}, "source: String should have at least 1 character"),
        ]:
            r = client.post(f"/api/train/{run_id}/decode", json=body)
            assert r.status_code == 422 and r.json()["message"].startswith(rule), r.text
        r = client.get(f"/api/train/{run_id}/model.zip")
        assert r.status_code == 422 and "encoder-decoder" in r.json()["message"]

        other = start(client, arch=TINY, opt={"steps": 2}, checkpoints=1)
        wait(client, other)
        r = client.post(f"/api/train/{other}/decode", json={"source": "abc"})
        assert r.status_code == 422 and r.json()["message"].startswith("task: induction")
        assert client.post("/api/train/nope/decode", json={"source": "abc"}).status_code == 404


def test_a_refused_text_lists_each_character_the_model_has_no_token_for():
    """A space among the characters reads as one, in words: the space, 'H', 'W', not ' HW'.
    The model is named as the page names it, by its title, never its id (issue 41), and what
    it reads is said in plain words."""
    client = TestClient(make_app())
    run_id = start(client, arch=TINY, opt={"steps": 2}, checkpoints=1)
    assert wait(client, run_id)["state"] == "done"
    served = next(m for m in client.get("/api/models").json()["models"] if m["run"] == run_id)
    assert served["title"] and served["characters"] == "abcdefghijklmnopqrstuvwxyz"
    r = client.post("/api/trace", json={"model": served["name"], "text": "Hello World"})
    assert r.status_code == 422, r.text
    message = r.json()["message"]
    assert message == (
        f"text: the model \u201c{served['title']}\u201d has no token for the space, 'H', 'W'; "
        "it reads only the lowercase letters a to z"
    ), message
    assert run_id not in message and served["name"] not in message
    # What it reads it traces.
    r = client.post("/api/trace", json={"model": served["name"], "text": "hello"})
    assert r.status_code == 200, r.text
    # Every refusal about it names it so: a head past its layers, too.
    layers = r.json()["layers"]
    body = {"model": served["name"], "text": "hello", "ablate": [{"layer": layers, "head": 0}]}
    r = client.post("/api/trace", json=body)
    assert r.status_code == 422, r.text
    message = r.json()["message"]
    assert f"past model \u201c{served['title']}\u201d's {layers} layers" in message, message
    assert run_id not in message and served["name"] not in message


@pytest.mark.slow
def test_the_runs_are_listed_newest_first_and_a_finished_runs_stream_ends():
    """GET /api/train lists what the server keeps (a reloaded page finds its runs there); the
    events of a run that has ended stop, whether asked from the start or after its end."""
    app = make_app(train_keep_runs=5)
    with served(app) as url, httpx.Client(base_url=url, timeout=20) as client:
        assert client.get("/api/train").json() == {"runs": []}
        first = start(client, arch=TINY, opt={"steps": 4}, checkpoints=1)
        wait(client, first)
        second = start(client, arch=TINY, opt={"steps": 6}, checkpoints=2, compare="residual")
        done = wait(client, second)
        runs = client.get("/api/train").json()["runs"]
        assert [r["id"] for r in runs] == [second, first]
        # The runs are this client's own (one cookie jar): its to cancel, not shared; no place
        # in line once started (issue 27).
        assert runs[0] == {
            "id": second, "yours": True, "can_cancel": True, "shared": False, "can_rename": True,
            "title": "induction, residual compared (2 models)", "named": False,
            "created": done["created"],
            "state": "done", "reason": None, "place": None, "task": "induction",
            "preset": None, "compare": "residual", "steps": 6,
            "variants": [{"label": v["label"], "state": "done", "model": v["model"], "steps": 6,
                          "heldout": v["checkpoints"][-1]["heldout"]} for v in done["variants"]],
        }  # fmt: skip
        one = client.get(f"/api/train/{first}").json()["variants"][0]
        assert runs[1]["variants"] == [{"label": "", "state": "done", "model": first, "steps": 4,
                                        "heldout": one["checkpoints"][-1]["heldout"]}]  # fmt: skip
        # A finished run's stream: its state, then nothing, and it closes (no waiting forever).
        seen = events(client, first)
        assert [name for _, name, _ in seen] == ["state"] and seen[0][2]["state"] == "done"
        assert events(client, first, last=seen[0][0]) == []
        # A cancelled (forgotten) run leaves the list.
        assert client.delete(f"/api/train/{first}").status_code == 200
        assert [r["id"] for r in client.get("/api/train").json()["runs"]] == [second]


def test_a_run_sends_the_marks_learns_checks_name_its_heads_by():
    """Issue 41: the card Trained models names a run's best head by the marks Learn's checks
    hold a head to; the run sends them, the same numbers, defined once."""
    with served(make_app()) as url, httpx.Client(base_url=url, timeout=60) as client:
        run_id = start(client, task="induction", arch=TINY, opt={"steps": 2, "seed": 0})
        state = wait(client, run_id)
    marks = state["marks"]
    assert marks == {
        "induction": checks_train.INDUCTIVE,
        "alignment": checks_train.ALIGNED,
        "induction_from": checks_train.INDUCTION_FROM,  # the layer the card looks from (0-based)
    }
    # Learn's tasks say the same marks.
    assert f"at least {marks['induction']})" in BY_ID["induction"].tasks[1].prompt
    assert f"at least {marks['alignment']} of" in BY_ID["encoder-decoder"].tasks[0].prompt
