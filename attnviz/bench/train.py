"""``attnviz bench --train``: the training targets, measured (never asserted by a timed test).

- The default induction run: when the held-out loss on the repeat goes under 0.1 nats, and when
  a second-layer head's induction score reaches 0.7, in seconds from the start.
- The default reverse run (an encoder-decoder): when its held-out loss goes under 0.1 nats, and
  when a cross-attention head puts 0.7 of its weight on one anti-diagonal.
- The default char-LM run: when its held-out loss goes under a bigram model's.
- What the page receives: the bytes of one checkpoint event (every head's 8-bit snapshot).
- The default induction run through the HTTP API: ``attnviz serve`` on a loopback port (a
  process of its own), ``POST /api/train``, its events followed to the end; the wall time
  beside the same run in this process, and the time of traces asked while it trains beside the
  same traces asked before it.
"""

from __future__ import annotations

import http.client
import json
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from attnviz.bench.harness import FIRST, Server, request
from attnviz.services.training.report import thumbs
from attnviz.training import measures
from attnviz.training.catalog import TASKS
from attnviz.training.tasks import CharLM, Induction, Reverse, bigram_heldout_loss
from attnviz.training.trainer import HELDOUT_BATCH, Checkpoint, Run, train

LOSS_TARGET = 0.1  # nats on the repeat
INDUCTION_TARGET = 0.7


@dataclass
class TaskFigures:
    task: str
    steps: int
    seconds: float  # the whole run, checkpoints included
    steps_per_s: float
    final_heldout: float
    crossings: dict[str, float | None] = field(default_factory=dict)  # target -> seconds
    event_bytes: int = 0  # one checkpoint event, as JSON
    extra: dict[str, float] = field(default_factory=dict)


def _first(points: list[Checkpoint], ok) -> float | None:
    return next((p.seconds for p in points if ok(p)), None)


def _trained(name: str, task, device: str, checkpoints: int) -> tuple[Run, float]:
    """The task's default run, and its seconds in all (checkpoints included)."""
    entry = TASKS[name]
    t0 = time.perf_counter()
    run = train(task, entry.arch, entry.opt, device=device, checkpoints=checkpoints)
    return run, time.perf_counter() - t0


def _figures(
    name: str, run: Run, seconds: float, crossings: dict, extra: dict[str, float]
) -> TaskFigures:
    last = run.checkpoints[-1]
    return TaskFigures(
        task=name,
        steps=len(run.history),
        seconds=seconds,
        steps_per_s=len(run.history) / run.history[-1].seconds,
        final_heldout=last.heldout,
        crossings=crossings,
        event_bytes=_event_bytes(last),
        extra=extra,
    )


def _targets(run: Run, what: str, score: Callable[[Checkpoint], float]) -> dict:
    """When the held-out loss first goes under LOSS_TARGET, and ``score`` (a head's, on the
    probe) first reaches INDUCTION_TARGET, in seconds from the start."""
    loss = _first(run.checkpoints, lambda p: p.heldout < LOSS_TARGET)
    head = _first(run.checkpoints, lambda p: score(p) >= INDUCTION_TARGET)
    return {f"held-out loss < {LOSS_TARGET}": loss, f"{what} >= {INDUCTION_TARGET} (probe)": head}


def induction(device: str, checkpoints: int = 40) -> TaskFigures:
    task = Induction()
    n = (len(task.probe().ids) + 1) // 2
    run, seconds = _trained("induction", task, device, checkpoints)

    def score(p: Checkpoint) -> float:  # the best second-layer head on the probe
        return float(task.induction_score(p.pattern[1][None], n).max())

    crossings = _targets(run, "layer-2 induction", score)
    best = max(
        measures.rounded(
            measures.induction_by_head(run.model, task, measures.induction_letters(task))
        )[1]
    )
    return _figures("induction", run, seconds, crossings,
                    {"layer-2 induction, 64 held-out strings": best})  # fmt: skip


def reverse(device: str, checkpoints: int = 40) -> TaskFigures:
    task = Reverse()
    n = len(task.probe_word)
    run, seconds = _trained("reverse", task, device, checkpoints)

    def aligned(p: Checkpoint) -> float:  # the best cross-attention head of any layer
        assert p.cross is not None
        return max(float(task.alignment(p.cross[i][None], n).max()) for i in range(len(p.cross)))

    crossings = _targets(run, "cross-attention alignment", aligned)
    best = max(
        max(row)
        for row in measures.rounded(
            measures.alignment_by_head(
                run.model, task, min(measures.ALIGNMENT_LETTERS, task.max_len)
            )
        )
    )
    return _figures("reverse", run, seconds, crossings,
                    {"best alignment, 64 held-out strings": best})  # fmt: skip


def charlm(device: str, checkpoints: int = 20) -> TaskFigures:
    task = CharLM()
    baseline = bigram_heldout_loss(task, HELDOUT_BATCH)
    run, seconds = _trained("charlm", task, device, checkpoints)
    crossings = {"held-out loss < bigram": _first(run.checkpoints, lambda p: p.heldout < baseline)}
    return _figures("charlm", run, seconds, crossings, {"bigram held-out loss": baseline})


@dataclass
class ServedFigures:
    """The default induction run through the HTTP API, beside the same run in this process."""

    seconds: float  # POST /api/train to its ``end`` event
    in_process_s: float
    events: int
    event_bytes: int
    trace_what: str  # the trace asked during the run
    idle_trace_ms: float  # its median time with nothing training
    trace_ms: list[float] = field(default_factory=list)  # each one asked during the run

    @property
    def ratio(self) -> float:
        return self.seconds / self.in_process_s


def _tracer(port: int) -> tuple[str, Callable[[int], float]]:
    """What is traced, and a function that asks for a new trace of it (a forward) and returns
    its time in ms: the page's first request on a six-word sentence with the server's first
    model, or the toy lab's table when it has none."""
    _, _, raw = request(port, "GET", "/api/models")
    models = json.loads(raw)["models"]
    name = models[0]["name"] if models else "the toy table"

    def body(k: int) -> dict:
        if models:
            return {"model": name, "text": f"{k} I sat on the river bank"}
        return {"tokens": ["an", "apple", "and", "a", "banana"],
                "embeddings": [[0, 0, 1], [0.7, 0.8, 0], [0, 0, 0.5], [0, 0, 1],
                               [0, 0.8, k / 1e3]],
                "config": {"layers": 2, "heads": 1}}  # fmt: skip

    params = FIRST if models else {"fields": "attentions,hidden_states"}

    def timed(k: int) -> float:
        t0 = time.perf_counter()
        status, _, raw = request(port, "POST", "/api/trace", body(k), params, compact=True)
        if status != 200:
            raise RuntimeError(f"/api/trace answered {status}: {raw[:200]!r}")
        return 1000 * (time.perf_counter() - t0)

    return name, timed


def served(device: str, in_process_s: float, checkpoints: int = 40) -> ServedFigures:
    """The default induction run through ``POST /api/train`` on a server of its own, its events
    followed to the end as the page does; a trace asked every second while it trains."""
    entry = TASKS["induction"]
    body = {"task": "induction", "arch": entry.arch.__dict__, "opt": entry.opt.__dict__,
            "checkpoints": checkpoints}  # fmt: skip
    with Server(["--device", device]) as server:
        port = server.port
        what, trace = _tracer(port)
        idle = [trace(k) for k in range(5)]  # the first two warm up
        during: list[float] = []
        done = threading.Event()

        def ask() -> None:
            k = 100
            while not done.wait(1.0):
                during.append(trace(k))
                k += 1

        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        t0 = time.perf_counter()
        conn.request("POST", "/api/train", json.dumps(body), {"Content-Type": "application/json"})
        answer = conn.getresponse()
        accepted = json.loads(answer.read())
        if answer.status != 202:
            raise RuntimeError(f"POST /api/train answered {answer.status}: {accepted}")
        asker = threading.Thread(target=ask, daemon=True)
        asker.start()
        conn.request("GET", accepted["events"])
        stream = conn.getresponse()
        events = size = 0
        while line := stream.fp.readline():
            size += len(line)
            if line.startswith(b"event:"):
                events += 1
                if line.strip() == b"event: end":
                    break
        seconds = time.perf_counter() - t0
        done.set()
        asker.join()
        conn.close()
    return ServedFigures(
        seconds=seconds,
        in_process_s=in_process_s,
        events=events,
        event_bytes=size,
        trace_what=what,
        idle_trace_ms=statistics.median(idle[2:]),
        trace_ms=during,
    )


def _event_bytes(point: Checkpoint) -> int:
    snaps = {"thumbs": point.pattern, "cross": point.cross, "encoder": point.encoder}
    data = {"variant": 0, "checkpoint": {"step": point.step, "heldout": point.heldout,
            "seconds": point.seconds, "sample": point.sample,
            **{k: thumbs(v).model_dump() for k, v in snaps.items() if v is not None}}}  # fmt: skip
    return len(json.dumps(data, separators=(",", ":")))


class TrainFigures(NamedTuple):
    """What ``run`` measured: the three default runs, and the induction run through the HTTP API
    (None: not asked)."""

    tasks: list[TaskFigures]
    through: ServedFigures | None = None


def run(device: str = "cpu", http: bool = True) -> TrainFigures:
    """The three default runs in this process, and (``http``) the induction run again through
    the HTTP API, right after the first."""
    torch.manual_seed(0)
    first = induction(device)
    through = served(device, first.seconds) if http else None
    return TrainFigures([first, reverse(device), charlm(device)], through)


def table(result: TrainFigures) -> str:
    figures, through = result
    lines = [f"torch threads: {torch.get_num_threads()}, a run's: 1 (training/trainer.py)", ""]
    lines.append("task        steps  seconds  steps/s  held-out  snapshot event")
    for f in figures:
        lines.append(
            f"{f.task:<10} {f.steps:>6} {f.seconds:>8.1f} {f.steps_per_s:>8.0f} "
            f"{f.final_heldout:>9.3f}  {f.event_bytes / 1024:>6.1f} KiB"
        )
        for what, at in f.crossings.items():
            lines.append(f"  {what}: " + ("never" if at is None else f"at {at:.1f} s"))
        for what, value in f.extra.items():
            lines.append(f"  {what}: {value:.3f}")
    if through is not None:
        t = through
        ms = sorted(t.trace_ms)
        asked = (
            f"median {statistics.median(ms):.0f} ms, at most {ms[-1]:.0f} ms"
            if ms
            else "none asked (the run ended within a second)"
        )
        lines += [
            "",
            f"induction through the HTTP API (POST /api/train, its events followed to the end): "
            f"{t.seconds:.1f} s, {t.ratio:.2f}x the {t.in_process_s:.1f} s in this process; "
            f"{t.events} events, {t.event_bytes / 1024:.0f} KiB.",
            f"  {len(ms)} traces of {t.trace_what} asked while it trained, one a second: "
            f"{asked} (with nothing training: {t.idle_trace_ms:.0f} ms).",
        ]
    return "\n".join(lines)


def as_json(result: TrainFigures) -> str:
    figures, through = result
    served = None if through is None else {**through.__dict__, "ratio": through.ratio}
    return json.dumps({"tasks": [f.__dict__ for f in figures], "served": served})
