"""A small class on a real server process (loopback; bounded: it stops by itself): four
learners, each a visitor of its own, start short induction runs at once on one training slot
with room for two waiting, while two more visitors type. Every start is accepted or answered
503 with Retry-After (never 429: each starts one run), every accepted run finishes, trains or
waits with its places counted down one by one, no learner can cancel or share another's run
(404) while each can read it by its link. Then SIGKILL while a run trains and others wait, the
server started again on the same data directory, and each learner, with its cookie, finds its
finished run listed, the training one interrupted at its last checkpoint, and its waiting one
still there. Figures for a full class come from ``attnviz bench --hosted``; nothing here is
timed."""

from __future__ import annotations

from collections import Counter

import pytest

from attnviz.bench import classroom
from attnviz.bench.harness import Server
from attnviz.bench.hosted import Texts, load
from attnviz.pretrained.registry import BUILTIN_NAME
from attnviz.pretrained.tokenize import TextTokenizer

STEPS = 300  # a short run: a few seconds on one core


def ready(crowd: list[classroom.Learner]) -> bool:
    """A run finished, one training, one waiting: the moment to stop the server."""
    states = Counter(x.state for x in crowd if x.run is not None)
    return states["done"] >= 1 and states["running"] >= 1 and states["queued"] >= 1


@pytest.mark.slow
def test_a_class_keeps_each_run_its_own_and_through_a_sigkill(minilm_dir, tmp_path):
    texts = Texts(TextTokenizer.from_file(minilm_dir / "tokenizer.json"))
    env = {"ATTNVIZ_DEVICE": "cpu", "ATTNVIZ_DATA_DIR": str(tmp_path / "data"),
           "ATTNVIZ_TRAIN_SLOTS": "1", "ATTNVIZ_TRAIN_QUEUE": "2"}  # fmt: skip
    server = Server([], env=env).__enter__()
    try:

        def typing(seconds: float):
            return load(server.port, BUILTIN_NAME, texts, 2, seconds, server.proc.pid,
                        exports=False, visitors=True)  # fmt: skip

        lesson, crowd = classroom.lesson(server, typing, learners=4, start_within=1.0,
                                         seconds=4.0, steps=STEPS, until=ready, most_s=90.0,
                                         settle_s=30.0)  # fmt: skip
        assert server.proc.returncode == -9  # SIGKILL, not a shutdown
    finally:
        server.__exit__(None, None, None)
    assert lesson.steps == STEPS
    assert lesson.errors == [] and lesson.refused == {}
    assert lesson.too_many == 0, "a learner was refused a second run it never started"
    # Four at once on one slot and two places: at least one start met a full line.
    assert lesson.busy >= 1 and lesson.busy_without_retry_after == 0
    assert lesson.accepted >= 3
    assert ready(crowd), f"the class never had a run done, one training, one waiting: {crowd}"
    assert set(lesson.at_stop) <= {"done", "running", "queued"}, lesson.at_stop
    assert lesson.at_stop.get("running") == 1 and lesson.training is not None
    assert lesson.waiting_places == list(range(1, len(lesson.waiting_places) + 1))
    assert lesson.places_rose == 0 and lesson.places_skipped == 0
    assert lesson.last_place_not_first == 0
    assert lesson.queue_events >= 1  # a waiting run heard its place change
    # Another's run: no cancel, no share; its link reads.
    assert lesson.control_failures == []
    assert lesson.controls == {"DELETE 404": lesson.accepted, "POST 404": lesson.accepted}
    assert lesson.read_failures == [] and lesson.reads_by_link == lesson.accepted
    typed = lesson.typing
    assert typed.failures == [] and set(typed.statuses) <= {200, 503}
    assert typed.statuses.get(200, 0) >= 1

    found = classroom.restart([], env, crowd)
    assert found.cookies_renewed == 0, "a visitor's cookie was not known after the restart"
    assert found.problems == []
    assert found.finished == lesson.at_stop["done"] and found.finished_kept == found.finished
    assert len(found.interrupted) == 1 and found.interrupted_ok == 1, found.interrupted
    assert found.interrupted[0]["step"] > 0
    assert found.control_failures == [] and found.controls == {"DELETE 404": lesson.accepted}
    assert found.waiting == lesson.at_stop.get("queued", 0) >= 1
    assert found.waiting_lost == 0 and found.waiting_kept == found.waiting
