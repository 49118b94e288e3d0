"""A class on one server, the last part of ``attnviz bench --hosted`` (and, small, a bounded
test): learners, each a visitor of its own (its own cookie jar), start the default induction
run as the page sends it, at random moments within ``start_within`` seconds; a start answered
503 waits out its Retry-After (a fifth more at most, as the page does) and tries again. Each
accepted run's event stream is followed: its places in line (``queue`` events, with their
estimates) and its end. Each learner, once its run is accepted, tries to cancel another
learner's run and to share it (404 every time; any other answer is a failure) and reads it by
its link (200, not theirs, no Cancel). Meanwhile typists (``typing``: ``hosted.load`` with
visitors) ask for traces as the page does.

Then the server is killed (SIGKILL: no shutdown runs) while a run trains past a checkpoint and
others wait (``lesson``), started again on the same data directory (``restart``), and each
learner, with the cookie it had, looks for its run: a finished one must be there and listed as
its own, the one that trained must be ``interrupted at step N`` (its last checkpoint), and a
waiting one is either still there (waiting, or training or done since) or ``lost``.

Figures only; the test (tests/bench/test_class.py) asserts what must hold.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import re
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from attnviz.bench.harness import Server, cookie_header, keep_cookies, status_bytes

STREAM_TIMEOUT_S = 60.0  # a waiting run hears at least every 5 s (the queue's tick)
INTERRUPTED = re.compile(r"interrupted at step (\d+)")


@dataclass
class Learner:
    """One visitor who starts a run: what it was answered and what its run's stream said."""

    k: int
    jar: dict[str, str] = field(default_factory=dict)
    starts: int = 0  # POST /api/train sent
    busy: int = 0  # of them answered 503
    busy_without_retry_after: int = 0
    refused: dict[int, int] = field(default_factory=dict)  # any other answer but 202 (429: a bug)
    errors: list[str] = field(default_factory=list)  # no answer at all
    run: str | None = None
    accepted_s: float | None = None  # seconds from the class's start
    places: list[int] = field(default_factory=list)  # its place in line, as it was told, in order
    first_wait_s: int | None = None  # the first estimate it was told
    started_s: float | None = None  # when it started training (seconds from the class's start)
    ended_s: float | None = None  # when its stream said it ended
    state: str | None = None  # the last state its stream said
    checkpoint: int | None = None  # the step of the last checkpoint its stream said
    events: int = 0
    stream_end: str = ""  # how its stream ended: "end", or the error of a cut one
    at_stop: str | None = None  # its state just before the server was stopped (as its owner)
    at_stop_place: int | None = None


@dataclass
class Lesson:
    learners: int
    start_within_s: float
    seconds: float  # from the class's start to the end of starting
    steps: int  # each run's
    slots: int
    queue: int
    starts: int = 0
    accepted: int = 0
    accepted_first_try: int = 0
    busy: int = 0
    busy_without_retry_after: int = 0
    too_many: int = 0  # 429s: each learner starts one run, so any is the bench's bug
    refused: dict[int, int] = field(default_factory=dict)  # other answers to a start
    errors: list[str] = field(default_factory=list)
    never_placed: int = 0  # learners whose starts were all 503 until the end of starting
    queue_events: int = 0
    places_rose: int = 0  # a place later than the one before: the line went backwards
    places_skipped: int = 0  # a place two or more ahead of the one before
    last_place_not_first: int = 0  # runs that started from a place other than 1
    waited_s: list[float] = field(default_factory=list)  # queued runs that started: seconds
    estimate_error_s: list[float] = field(default_factory=list)  # first estimate - waited
    controls: dict[str, int] = field(default_factory=dict)  # "DELETE 404": count
    control_failures: list[str] = field(default_factory=list)  # any answer but 404
    reads_by_link: int = 0
    read_failures: list[str] = field(default_factory=list)
    at_stop: dict[str, int] = field(default_factory=dict)  # state: runs, just before the stop
    waiting_places: list[int] = field(default_factory=list)  # at the stop
    training: str | None = None  # the run training at the stop
    training_checkpoint: int | None = None  # its last checkpoint's step, as its stream said
    stopped_at_s: float = 0.0
    cut_streams: int = 0  # streams the stop cut (expected: the runs not ended)
    typing: Any = None  # the typists' hosted.LoadReport
    p99_target_ms: float | None = None  # the documented wait plus three lone requests
    warm_up_s: float | None = None  # one run trained to its end before the class (warm_up_run)
    rss_start_mb: float = 0.0
    rss_max_mb: float = 0.0
    first_end_s: float | None = None  # when the first run ended (training's one-time costs paid)
    rss_first_end_mb: float | None = None  # the sample then
    rss_max_after_first_mb: float | None = None  # the most after it


@dataclass
class Restart:
    signal: str
    back_s: float  # from the new process to its first /healthz 200
    secret: str  # where the visitors' cookies' key came from
    finished: int = 0  # runs ended before the stop
    finished_kept: int = 0  # of them there after it, in the same state, listed as the owner's
    interrupted: list[dict] = field(default_factory=list)  # the training run(s), as found
    interrupted_ok: int = 0
    ended_meanwhile: int = 0  # training at the last look, done by the stop: kept as done
    waiting: int = 0
    waiting_kept: int = 0  # waiting again (or training, or done, since the restart)
    waiting_states: dict[str, int] = field(default_factory=dict)  # the kept ones' states now
    waiting_places: list[int] = field(default_factory=list)  # those waiting again
    waiting_lost: int = 0  # 404: the restart lost them
    cookies_renewed: int = 0  # answers that set a new cookie: a visitor not known any more
    controls: dict[str, int] = field(default_factory=dict)
    control_failures: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # anything else found wrong


def ask(port: int, jar: dict[str, str], method: str, path: str, body: dict | None = None,
        timeout: float = 120.0) -> tuple[int, Any, http.client.HTTPResponse, int]:  # fmt: skip
    """One request as the visitor ``jar`` holds (its cookies sent, and those set kept): the
    status, the JSON answer (or None), the response, and how many cookies it replaced."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Accept": "application/json"}
    if jar:
        headers["Cookie"] = cookie_header(jar)
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    try:
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        raw = response.read()
    finally:
        conn.close()
    replaced = keep_cookies(jar, response)
    try:
        answer = json.loads(raw) if raw else None
    except ValueError:
        answer = None
    return response.status, answer, response, replaced


def warm_up_run(port: int, steps: int | None = None, most_s: float = 300.0) -> float:
    """One default run, by a visitor of its own, trained to its end: the seconds it took. The
    server's first run pays training's one-time costs (on this 2-core machine about 95 MB of
    resident memory: the kernels and buffers of a backward pass, the training thread's heap),
    which later runs reuse."""
    jar: dict[str, str] = {}
    t0 = time.monotonic()
    status, options, _, _ = ask(port, jar, "GET", "/api/train/options")
    if status != 200:
        raise RuntimeError(f"GET /api/train/options answered {status}")
    status, answer, _, _ = ask(port, jar, "POST", "/api/train", default_body(options, steps))
    if status != 202:
        raise RuntimeError(f"the warm-up run was refused: {status} {answer}")
    while time.monotonic() - t0 < most_s:
        status, state, _, _ = ask(port, jar, "GET", f"/api/train/{answer['id']}")
        if status != 200 or state["state"] not in ("queued", "running"):
            break
        time.sleep(0.2)
    else:
        raise RuntimeError(f"the warm-up run did not end in {most_s:.0f} s")
    return time.monotonic() - t0


def default_body(options: dict, steps: int | None = None) -> dict:
    """The body the page sends for a new run with its form untouched: its first task
    (induction) with that task's architecture and optimiser, comparing nothing; ``steps``
    instead of the task's, for a short run."""
    task = options["tasks"][0]
    opt = dict(task["opt"])
    if steps is not None:
        opt["steps"] = steps
    return {"task": task["name"], "arch": task["arch"], "opt": opt, "compare": None}


def _follow(port: int, learner: Learner, t0: float, lock: threading.Lock) -> None:
    """Read the learner's run's event stream until its ``end`` or until it is cut."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=STREAM_TIMEOUT_S)
    headers = {"Accept": "text/event-stream", "Cookie": cookie_header(learner.jar)}
    try:
        conn.request("GET", f"/api/train/{learner.run}/events", headers=headers)
        response = conn.getresponse()
        if response.status != 200:
            learner.stream_end = f"answered {response.status}"
            return
        name, data = "", []
        while line := response.readline():
            text = line.decode("utf-8").rstrip("\r\n")
            if text.startswith("event:"):
                name = text[6:].strip()
            elif text.startswith("data:"):
                data.append(text[5:].removeprefix(" "))
            elif not text and name:
                with lock:
                    _heard(learner, name, json.loads("\n".join(data)), time.monotonic() - t0)
                if name == "end":
                    learner.stream_end = "end"
                    return
                name, data = "", []
        learner.stream_end = "closed"
    except (OSError, http.client.HTTPException, ValueError, KeyError, TypeError) as exc:
        learner.stream_end = type(exc).__name__  # cut (the stop), or an event not as documented
    finally:
        conn.close()


def _heard(learner: Learner, name: str, data: dict, now: float) -> None:
    learner.events += 1
    if name in ("state", "queue"):
        learner.state = data["state"]
        if data["state"] == "queued":
            learner.places.append(data["place"])
            if learner.first_wait_s is None:
                learner.first_wait_s = data.get("wait_s")
        elif data["state"] == "running" and learner.started_s is None:
            learner.started_s = now
    elif name == "checkpoint":
        learner.checkpoint = data["checkpoint"]["step"]
    elif name == "end":
        learner.state, learner.ended_s = data["state"], now


def lesson(
    server: Server,
    typing: Callable[[float], Any],
    learners: int = 30,
    start_within: float = 10.0,
    seconds: float = 90.0,
    steps: int | None = None,
    until: Callable[[list[Learner]], bool] | None = None,
    most_s: float = 180.0,
    settle_s: float = 60.0,
    lone_ms: float | None = None,
    seed: int = 0,
    warm_up: bool = True,
) -> tuple[Lesson, list[Learner]]:
    """The class on ``server`` (which it then kills): ``learners`` learners, and typists
    (``typing(seconds)``, run meanwhile: returns their load report). Starting ends once the
    typists are done and, with ``until``, once it holds of the learners (``most_s`` after
    the class's start at most). Then, within ``settle_s``, the first moment a run trains past a
    checkpoint at a quarter of its steps or more (and not past 70%), the runs' states as their
    owners read them, and SIGKILL. With ``warm_up``, a visitor of its own first trains one
    run to its end (``warm_up_run``), so that resident memory is measured after warm-up:
    once the server has trained, as it has computed traces, before."""
    from attnviz.settings import Settings

    # The server's settings, as its environment gives them.
    given = {n: f"ATTNVIZ_{n.upper()}" for n in Settings.model_fields}
    named: dict[str, Any] = {n: server.env[k] for n, k in given.items() if k in server.env}
    settings = Settings(**named)
    port, pid = server.port, server.proc.pid
    rngs = [random.Random(seed * 1000 + k) for k in range(learners)]
    crowd = [Learner(k) for k in range(learners)]
    lock = threading.Lock()
    stop_starting = threading.Event()
    report = Lesson(learners=learners, start_within_s=start_within, seconds=seconds,
                    steps=steps or 0, slots=settings.train_slots,
                    queue=settings.train_queue)  # fmt: skip
    controls: Counter[str] = Counter()
    controllers: list[threading.Thread] = []

    def control(me: Learner, rng: random.Random) -> None:
        """Cancel, share and read another learner's run, as soon as there is one."""
        other = None
        while other is None and not stop_starting.is_set():
            with lock:
                others = [x.run for x in crowd if x.run is not None and x is not me]
            if others:
                other = rng.choice(others)
            else:
                stop_starting.wait(0.5)
        if other is None:
            return
        for method, path in (("DELETE", f"/api/train/{other}"),
                             ("POST", f"/api/train/{other}/share")):  # fmt: skip
            try:
                status = ask(port, me.jar, method, path)[0]
            except (OSError, http.client.HTTPException) as exc:
                status, why = 0, type(exc).__name__
            with lock:
                controls[f"{method} {status}"] += 1
                if status != 404:
                    report.control_failures.append(
                        f"{method} {path} by learner {me.k}: {status or why}"
                    )
        try:
            status, run, _, _ = ask(port, me.jar, "GET", f"/api/train/{other}")
        except (OSError, http.client.HTTPException) as exc:
            status, run = 0, {"error": type(exc).__name__}
        with lock:
            if status == 200 and not run["yours"] and not run["can_cancel"]:
                report.reads_by_link += 1
            else:
                report.read_failures.append(f"GET {other} by learner {me.k}: {status} {run}")

    def learn(me: Learner) -> None:
        rng = rngs[me.k]
        if stop_starting.wait(rng.uniform(0, start_within)):
            return
        try:
            status, options, _, _ = ask(port, me.jar, "GET", "/api/train/options")
            if status != 200:
                raise RuntimeError(f"GET /api/train/options answered {status}")
            body = default_body(options, steps)
            report.steps = body["opt"]["steps"]
            while not stop_starting.is_set():
                status, answer, response, _ = ask(port, me.jar, "POST", "/api/train", body)
                me.starts += 1
                if status == 202:
                    with lock:
                        me.run, me.accepted_s = answer["id"], time.monotonic() - t0
                        me.state = answer["state"]
                        if answer["state"] == "queued":
                            me.places.append(answer["place"])
                        else:
                            me.started_s = me.accepted_s
                    break
                if status != 503:
                    me.refused[status] = me.refused.get(status, 0) + 1
                    return
                me.busy += 1
                retry = response.getheader("Retry-After")
                if not retry:
                    me.busy_without_retry_after += 1
                stop_starting.wait(float(retry or 1) * (1 + rng.random() / 5))
        except (OSError, http.client.HTTPException, RuntimeError, KeyError) as exc:
            me.errors.append(f"{type(exc).__name__}: {exc}")
            return
        if me.run is None:
            return
        thread = threading.Thread(target=control, args=(me, rng), daemon=True)
        with lock:
            controllers.append(thread)
        thread.start()
        _follow(port, me, t0, lock)

    if warm_up:
        report.warm_up_s = warm_up_run(port, steps)
    report.rss_start_mb = round(status_bytes(pid, "VmRSS") / 2**20, 1)
    t0 = time.monotonic()
    typed: list[Any] = []
    typists = threading.Thread(target=lambda: typed.append(typing(seconds)), daemon=True)
    typists.start()
    threads = [threading.Thread(target=learn, args=(x,), daemon=True) for x in crowd]
    for thread in threads:
        thread.start()
    typists.join()
    while until is not None and time.monotonic() - t0 < most_s:
        with lock:
            if until(crowd):
                break
        time.sleep(0.2)
    stop_starting.set()
    for thread in list(controllers):
        thread.join(timeout=120)

    def training() -> Learner | None:
        """A run training past a quarter of its steps (so that it has checkpoints to keep)
        and not past 70% (so that it is still training a moment later)."""
        lo, hi = 0.25 * report.steps, 0.7 * report.steps
        with lock:
            for x in crowd:
                if x.state == "running" and x.checkpoint is not None and lo <= x.checkpoint <= hi:
                    return x
        return None

    settle = time.monotonic() + settle_s
    chosen = training()
    while chosen is None and time.monotonic() < settle:
        time.sleep(0.1)
        chosen = training()
    # The runs' states as their owners read them, then at once the stop.
    for x in crowd:
        if x.run is not None:
            try:
                status, run, _, _ = ask(port, x.jar, "GET", f"/api/train/{x.run}")
                x.at_stop = run["state"] if status == 200 else f"answered {status}"
                x.at_stop_place = run.get("place") if status == 200 else None
            except (OSError, http.client.HTTPException) as exc:
                x.at_stop = type(exc).__name__
    if chosen is not None:
        report.training, report.training_checkpoint = chosen.run, chosen.checkpoint
    report.stopped_at_s = round(time.monotonic() - t0, 1)
    server.kill()
    for thread in threads:
        thread.join(timeout=STREAM_TIMEOUT_S)

    _sum_up(report, crowd, controls, typed[0] if typed else None, lone_ms, settings.max_wait_s)
    return report, crowd


def _sum_up(report: Lesson, crowd: list[Learner], controls: Counter[str], typing: Any,
            lone_ms: float | None, max_wait_s: float) -> None:  # fmt: skip
    report.controls = dict(sorted(controls.items()))
    report.typing = typing
    ends = [x.ended_s for x in crowd if x.ended_s is not None]
    if typing is not None and typing.rss_mb:
        report.rss_max_mb = max(typing.rss_mb)
        if ends:  # one sample a second from the class's start
            report.first_end_s = round(min(ends), 1)
            after = typing.rss_mb[min(len(typing.rss_mb) - 1, int(min(ends))) :]
            report.rss_first_end_mb, report.rss_max_after_first_mb = after[0], max(after)
    if lone_ms is not None:
        report.p99_target_ms = round(1000 * max_wait_s + 3 * lone_ms, 1)
    for x in crowd:
        report.starts += x.starts
        report.busy += x.busy
        report.busy_without_retry_after += x.busy_without_retry_after
        report.errors += x.errors
        for status, n in x.refused.items():
            report.refused[status] = report.refused.get(status, 0) + n
        if x.run is None:
            report.never_placed += x.starts > 0 and not x.refused and not x.errors
            continue
        report.accepted += 1
        report.accepted_first_try += x.starts == 1
        report.queue_events += max(0, len(x.places) - 1)
        for before, after in zip(x.places, x.places[1:], strict=False):
            report.places_rose += after > before
            report.places_skipped += after < before - 1
        if x.places and x.started_s is not None:
            report.last_place_not_first += x.places[-1] != 1
            assert x.accepted_s is not None
            waited = x.started_s - x.accepted_s
            report.waited_s.append(round(waited, 1))
            if x.first_wait_s is not None:
                report.estimate_error_s.append(round(x.first_wait_s - waited, 1))
        report.cut_streams += x.stream_end != "end"
        state = x.at_stop or "unknown"
        report.at_stop[state] = report.at_stop.get(state, 0) + 1
        if x.at_stop == "queued" and x.at_stop_place is not None:
            report.waiting_places.append(x.at_stop_place)
    report.too_many = report.refused.pop(429, 0)
    report.waiting_places.sort()
    report.at_stop = dict(sorted(report.at_stop.items()))


def restart(args: list[str], env: dict[str, str], crowd: list[Learner],
            seed: int = 0) -> Restart:  # fmt: skip
    """The server started again (``args``, ``env``: as before, the same data directory) and,
    once it answers, each learner with a run, with its cookies, reads its run and its list and
    tries to cancel another's; then the server is stopped."""
    t0 = time.monotonic()
    secret = "ATTNVIZ_SECRET" if env.get("ATTNVIZ_SECRET", os.environ.get("ATTNVIZ_SECRET")) \
        else "the secret kept in the data directory"  # fmt: skip
    with Server(args, env=env) as server:
        found = Restart(signal="SIGKILL", back_s=round(time.monotonic() - t0, 1), secret=secret)
        _look(server.port, crowd, found, random.Random(seed))
    return found


def _look(port: int, crowd: list[Learner], found: Restart, rng: random.Random) -> None:
    """After the restart: each learner's run as its state before the stop says it should be,
    and no learner able to cancel another's."""
    runs = [x for x in crowd if x.run is not None]
    controls: Counter[str] = Counter()
    line: list[tuple[int, str, int | None]] = []  # the kept waiting: (place before, state, now)
    for x in runs:
        status, run, _, renewed = ask(port, x.jar, "GET", f"/api/train/{x.run}")
        found.cookies_renewed += renewed
        _, listing, _, renewed = ask(port, x.jar, "GET", "/api/train")
        found.cookies_renewed += renewed
        mine = {r["id"]: r for r in (listing or {}).get("runs", []) if r.get("yours")}
        seen = _Seen(x, status, run or {}, mine)
        before = x.at_stop
        if before in ("done", "cancelled", "failed"):
            _finished(seen, found)
        elif before == "running":
            _running(seen, found)
        elif before == "queued":
            _queued(seen, found, line)
        else:
            found.problems.append(f"run {x.run}: its state before the stop was {before}")
        others = [y.run for y in runs if y is not x]
        if others:
            other = rng.choice(others)
            status = ask(port, x.jar, "DELETE", f"/api/train/{other}")[0]
            controls[f"DELETE {status}"] += 1
            if status != 404:
                found.control_failures.append(f"DELETE {other} by learner {x.k}: {status}")
    found.controls = dict(sorted(controls.items()))
    _line(line, found)


@dataclass
class _Seen:
    """One learner's run as the restarted server answers it: its status, the run, and the
    learner's own runs in the listing."""

    x: Learner
    status: int
    run: dict
    mine: dict

    @property
    def state(self) -> str | None:
        return self.run["state"] if self.status == 200 else None

    @property
    def listed(self) -> bool:
        return self.x.run in self.mine


def _finished(seen: _Seen, found: Restart) -> None:
    found.finished += 1
    if seen.state == seen.x.at_stop and seen.listed:
        found.finished_kept += 1
    else:
        found.problems.append(f"finished run {seen.x.run} ({seen.x.at_stop}): {seen.status} "
                              f"{seen.state}, listed {seen.listed}")  # fmt: skip


def _running(seen: _Seen, found: Restart) -> None:
    """A run training at the stop: interrupted at its last checkpoint, or done meanwhile."""
    x, state, listed = seen.x, seen.state, seen.listed
    reason = seen.run.get("reason") or ""
    step = INTERRUPTED.search(reason)
    points = [p["step"] for v in seen.run.get("variants", []) for p in v.get("checkpoints", [])]
    at = int(step.group(1)) if step else None
    last = max(points, default=None)
    said = {"id": x.run, "status": seen.status, "state": state, "reason": reason,
            "listed": listed, "heard_checkpoint": x.checkpoint, "step": at,
            "last_checkpoint": last}  # fmt: skip
    if state == "done" and listed:
        found.ended_meanwhile += 1  # it ended between the last look and the stop
        return
    found.interrupted.append(said)
    ok = state == "interrupted" and at is not None and listed
    ok = ok and seen.mine[x.run]["state"] == "interrupted" and at == last
    ok = ok and (x.checkpoint is None or (at is not None and at >= x.checkpoint))
    found.interrupted_ok += ok
    if not ok:
        found.problems.append(f"the training run {x.run}: {said}")


def _queued(seen: _Seen, found: Restart, line: list[tuple[int, str, int | None]]) -> None:
    """A run waiting at the stop: kept in line, or lost (404)."""
    found.waiting += 1
    if seen.status == 404:
        found.waiting_lost += 1
    elif seen.status == 200 and seen.state in ("queued", "running", "done") and seen.listed:
        found.waiting_kept += 1
        assert seen.state is not None
        line.append((seen.x.at_stop_place or 0, seen.state, seen.run.get("place")))
    else:
        found.problems.append(f"waiting run {seen.x.run}: {seen.status} {seen.state}, listed "
                              f"{seen.listed}")  # fmt: skip


def _line(line: list[tuple[int, str, int | None]], found: Restart) -> None:
    """Those kept come back in their order: the first in line takes the free slot (or has
    finished since), the rest wait behind it at places 1, 2, ... in the order they had."""
    line.sort()
    found.waiting_states = dict(sorted(Counter(state for _, state, _ in line).items()))
    found.waiting_places = [now for _, state, now in line if state == "queued" and now]
    ahead = [state for _, state, _ in line]
    if ahead != sorted(ahead, key=["done", "running", "queued"].index):
        found.problems.append(f"the waiting runs came back out of their order: {line}")
    if found.waiting_places != list(range(1, len(found.waiting_places) + 1)):
        found.problems.append(f"the waiting runs came back at places {found.waiting_places}")


def _spread(values: list[float]) -> str:
    if not values:
        return "none"
    return f"median {statistics.median(values):+.0f} s, {min(values):+.0f} to {max(values):+.0f} s"


def _places(places: list[int]) -> str:
    if not places:
        return "none"
    return ", ".join(str(p) for p in places)


def table_lines(lesson: Lesson, found: Restart | None) -> list[str]:
    """The class's figures as sentences, for the table of ``attnviz bench --hosted``."""
    c = lesson
    typing = c.typing
    lines = [
        f"A class: {c.learners} learners, each its own visitor (cookie), starting the default "
        f"induction run ({c.steps} steps, as the page sends it) at random moments within "
        f"{c.start_within_s:.0f} s, while {typing.clients if typing else 0} visitors typed "
        f"sentences for {c.seconds:.0f} s (ATTNVIZ_TRAIN_SLOTS={c.slots}, "
        f"ATTNVIZ_TRAIN_QUEUE={c.queue}); the class was stopped {c.stopped_at_s:.0f} s after "
        "its start.",
        f"Starts: {c.starts} sent, {c.accepted} accepted ({c.accepted_first_try} at the first "
        f"try), {c.busy} x 503 waited out ({c.busy_without_retry_after} without Retry-After), "
        f"{c.too_many} x 429, other {c.refused or 'none'}, {len(c.errors)} failed; "
        f"{c.never_placed} of the learners never got a place in line before the end (the line "
        "full).",
        f"At the stop: {', '.join(f'{n} {s}' for s, n in c.at_stop.items()) or 'no run'}; "
        f"places of the waiting runs: {_places(c.waiting_places)}. Every run's places as its "
        f"stream told them: {c.queue_events} changes, {c.places_rose} went back, "
        f"{c.places_skipped} skipped a place, {c.last_place_not_first} runs started from a "
        f"place other than 1. Queued runs that started waited {_spread(c.waited_s)}; their "
        f"first estimate minus the wait: {_spread(c.estimate_error_s)}.",
        f"Another learner's run: {sum(c.controls.values())} cancels and shares tried "
        f"({', '.join(f'{n} x {k}' for k, n in c.controls.items()) or 'none'}), "
        f"{len(c.control_failures)} answered other than 404; {c.reads_by_link} read by its "
        f"link (200, not theirs, no Cancel), {len(c.read_failures)} not.",
    ]
    if typing is not None:
        ok = typing.statuses.get(200, 0)
        target = (
            f" against the documented wait plus three lone requests, {c.p99_target_ms:.0f} ms"
            f" ({'within' if typing.ok_p99_ms <= c.p99_target_ms else 'over'})"
            if c.p99_target_ms
            else ""
        )
        grew = 100 * (c.rss_max_mb / c.rss_start_mb - 1) if c.rss_start_mb else 0.0
        other = {s: n for s, n in typing.statuses.items() if s not in (200, 503)} or "none"
        lines.append(
            f"The typists meanwhile: {ok} x 200 ({ok / max(1.0, typing.seconds):.0f}/s), "
            f"{typing.statuses.get(503, 0)} x 503, other "
            f"{other}, "
            f"{len(typing.failures)} failed; the 200s p50 {typing.ok_p50_ms:.0f} ms, p99 "
            f"{typing.ok_p99_ms:.0f} ms{target}. Resident memory {c.rss_start_mb:.0f} MB at "
            f"the class's start"
            + (
                f" (after warm-up: one run trained to its end first, {c.warm_up_s:.0f} s)"
                if c.warm_up_s is not None
                else " (no run trained before it)"
            )
            + f", at most {c.rss_max_mb:.0f} MB ({grew:+.1f}%)"
            + (
                f"; {c.rss_first_end_mb:.0f} MB when the first run ended ({c.first_end_s:.0f} s "
                f"in: training's one-time costs paid), at most {c.rss_max_after_first_mb:.0f} MB "
                f"after ({100 * (c.rss_max_after_first_mb / c.rss_first_end_mb - 1):+.1f}%)."
                if c.rss_first_end_mb and c.rss_max_after_first_mb
                else "."
            )
        )
    if found is not None:
        lines.append(_restart_line(c, found))
    return lines


def _restart_line(c: Lesson, f: Restart) -> str:
    trained = (
        f"while run {c.training} trained (its last checkpoint heard: step {c.training_checkpoint})"
        if c.training
        else "with no run training"
    )
    found = [i["reason"].split(":")[0] or i["state"] for i in f.interrupted]
    meanwhile = f", {f.ended_meanwhile} ended just before the stop" if f.ended_meanwhile else ""
    controls = ", ".join(f"{n} x {k}" for k, n in f.controls.items()) or "none"
    kept = ", ".join(f"{n} {s}" for s, n in f.waiting_states.items()) or "none"
    return (
        f"Then {f.signal} {trained} and {c.at_stop.get('queued', 0)} waited; started again on "
        f"the same data directory ({f.secret}), it answered in {f.back_s:.0f} s. As each "
        f"learner (its cookie; {f.cookies_renewed} cookies were not known any more): "
        f"{f.finished_kept} of {f.finished} finished runs there and listed as theirs; the "
        f"training run: {', '.join(found) or 'none'} ({f.interrupted_ok} of "
        f"{len(f.interrupted)} as they must be: interrupted at their last checkpoint, listed"
        f"{meanwhile}); of {f.waiting} waiting runs, {f.waiting_kept} kept ({kept}; places "
        f"now {_places(f.waiting_places)}) and {f.waiting_lost} lost; cancels of another's "
        f"run: {controls}; {len(f.problems)} other problems."
    )
