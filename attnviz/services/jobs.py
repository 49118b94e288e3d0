"""Trace jobs: a text trace that will take long runs as a job its visitor's page follows.

A request that asks for it (``Prefer: respond-async``, as the page does) and whose trace is
expected to take longer than ``trace_job_after_s``, or than the request limit
(``request_timeout_s``: answered plainly, it would be cut off), is answered 202 at once with a
job (``wants_job``): the same computation (the trace and the part asked for, encoded) goes on
through admission like any miss, on the compute thread, off the event loop, and the page
follows its progress (its events, ``services.events``, or its state read again: each layer of
the forward, then of the thumbnails, as ``attnviz.capture.progress`` tells it, and the time left
at the pace measured so far), cancels it, and fetches the answer once it is done (the
trace is then in the cache, for the page's next parts). The job is bounded by its own limit,
``trace_job_s`` from when it was asked, never by the request's; it stops at the next layer
past it, saying so.

Before a job is accepted, and before a plain request waits for its turn, what the trace would
refuse without computing is checked (``admit``: an unknown model, a text over the token cap, a
layer or head out of range, ...): refused at once, never accepted as 202 and failed later. A
plain request whose trace is expected to compute past the request limit
(``request_timeout_s``) is refused before any work, saying to ask for a job
(``over_request_limit``).

Jobs are kept in memory only: a job's id begins with this process's epoch, so that an id issued
before a restart is answered with a 404 that says the server restarted (``gone``).

The estimate before it starts (``Work``): the forward's arithmetic (tokens x layers x the
model's sizes, ``work_units``) at this server's pace of computing, and the numbers its answer
carries (``shape_numbers``) at its pace of writing them in the answer's form (compact, JSON,
JSON compressed), both of which every text trace computed since corrects from where its time
went (``measured``: the forward and the part chosen, then the answer's encoding).

A job is its visitor's: another visitor (without the operator's token) gets 404 for it, as for
a job that does not exist. A newer trace request of the same visitor that has to compute
(another text) supersedes the visitor's job: it is cancelled at its next layer. A client that
keeps no cookie is a new visitor at every request, so one client address (a trusted proxy's
``X-Forwarded-For``, else the peer's) may have ``trace_jobs_per_address`` visitors with jobs
computing or waiting at once; another visitor's job is ``TooManyJobs`` (429 with Retry-After,
naming the rule; the operator is exempt). Ended jobs are kept for the trace cache's lifetime:
per visitor the newest one whose answer was read, and those not yet read
(``UNREAD_PER_VISITOR`` at most; ``MAX_JOBS`` in all).

A remote model's part (NDIF's) may need a trip to its deployment even when its trace is kept
here (a layer's q and k, predictions): it is always a job when asked, answered at once when it
is done within ``trace_job_after_s``, else 202 and followed like any other."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from attnviz.capture.progress import reporting
from attnviz.engine import TransformerConfig
from attnviz.errors import RemoteError, TraceError
from attnviz.pretrained.folder import REMOTE_BACKENDS
from attnviz.pretrained.registry import ServedModel
from attnviz.schemas.trace import TextTraceRequest, TraceQuery
from attnviz.services.events import Event, EventLog, follow
from attnviz.services.ownership import ID_BYTES, Caller, Ownership
from attnviz.services.parts import check_part, shape_numbers
from attnviz.services.text_trace import ModelNotFound, check_text, find_model, token_cap
from attnviz.services.trace_service import Body, TraceService
from attnviz.settings import Settings
from attnviz.wire.encoding import accepts

log = logging.getLogger(__name__)

State = Literal["queued", "running", "done", "cancelled", "failed"]
ENDED = ("done", "cancelled", "failed")
MAX_JOBS = 256  # jobs kept at once (running and ended); past it the oldest ended go first
UNREAD_PER_VISITOR = 16  # ended jobs of a visitor kept until their answers are read, at most
# A job's id: ``[<replica>-]<32 hex digits>``, the first ``EPOCH_BYTES`` of them this server
# process's own (random, drawn when it starts), the rest random for each job. Jobs are kept in
# memory only: an id of another epoch was issued before a restart, and its 404 says so.
EPOCH_BYTES = 4
JOB_ID = re.compile(rf"(?:(?P<replica>[a-z0-9]+)-)?(?P<token>[0-9a-f]{{{2 * ID_BYTES}}})")

# The pace of the forward's arithmetic before any trace is measured (work units a second): on
# this project's 2-core machine the SmolLM2-135M shape at 3,600 tokens went at 66e9 on one
# thread; a GPU is far faster. Measured traces move it (``_EWMA``), from traces worth timing.
FIRST_PACE = {"cpu": 60e9, "cuda": 2e12}
# What one element of a head's T x T weights costs beside the matrix products (the scores'
# scale, mask and softmax, a head at a time on a long text), in multiply-adds: fitted to the
# SmolLM2-135M shape at 3,600 tokens and to a narrow one at 900 on the 2-core machine.
SQUARE_COST = 400
# The answer's paces (numbers a second; on the CPU whatever the device): "part", its arrays
# chosen and derived from the trace (stacked, the views, distances, aggregates, ...), then
# written, by its form (``answer_form``). Measured on the 2-core machine with MiniLM at 440
# tokens (every array, 34 M numbers): part 8e6 to 9e7 (as the trace cache kept q, k and v or not),
# compact 2e8, JSON 3e7, JSON compressed (gzip, zstd) 5e6 to 7e6.
FIRST_ANSWER_PACE = {"part": 1e7, "compact": 2e8, "json": 3e7, "json-compressed": 5e6}
_EWMA = 0.3
_MIN_UNITS = 2e9  # a trace of less is mostly fixed costs: it says nothing of the pace
_MIN_NUMBERS = 1e6  # an answer of fewer numbers neither


class Work(NamedTuple):
    """What a text trace request will do: ``units`` of the forward's arithmetic (with the
    thumbnails', ``work_units``; infinite for a remote model's), then an answer of ``numbers``
    chosen from the trace and written in ``form`` (``answer_form``); ``thumbs``: its part has
    every layer's thumbnails (computed again from q and k while it is chosen: that time is the
    arithmetic's)."""

    units: float
    numbers: int = 0
    form: str = "compact"
    thumbs: bool = False


def answer_form(compact: bool, accept_encoding: str) -> str:
    """The form an answer is written in, as its pace is kept: a JSON one is compressed when the
    client accepts it (``TraceService._encoded``)."""
    if compact:
        return "compact"
    return "json-compressed" if accepts(accept_encoding) else "json"


def work_units(cfg: TransformerConfig, tokens: int, thumbs: bool) -> float:
    """The forward's arithmetic on ``tokens`` (multiply-adds counted twice, each element of the
    T x T weights as ``SQUARE_COST``), and, with ``thumbs``, that of every layer's weights again
    from q and k (the first response's thumbnails)."""
    d, hs, heads, kv = cfg.d_model, cfg.d_head, cfg.n_heads, cfg.kv_heads
    ffn = (3 if cfg.gated else 2) * d * cfg.hidden if cfg.ffn else 0
    per_token = 2 * (2 * d * heads * hs + 2 * d * kv * hs + ffn)
    square = tokens * tokens * heads
    attention = 4 * square * hs + SQUARE_COST * square
    again = 2 * square * hs + SQUARE_COST * square if thumbs else 0
    return float(cfg.n_layers * (tokens * per_token + attention + again))


def _moved(pace: float, measured: float) -> float:
    """A pace moved toward one measured (geometrically, by ``_EWMA``)."""
    return math.exp(math.log(pace) + _EWMA * (math.log(measured) - math.log(pace)))


class JobGone(LookupError):
    """No such job here, or not the caller's: 404 either way."""


class TooManyJobs(Exception):
    """The caller's address already has as many trace jobs computing or waiting as this server
    takes from one address: 429, naming the rule, with ``retry_after`` (seconds until one of
    them should end)."""

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = max(1, retry_after)


class JobStopped(Exception):
    """Raised at a layer's end to stop a job: cancelled, superseded or over its limit."""


@dataclass(eq=False)
class TraceJob(EventLog):
    """One long trace as its page follows it: its state (``as_json``, what ``GET`` answers) and
    its events (``services.events``): ``progress`` as each layer pass is done, as it starts,
    as it sends its answer and as a remote deployment's words change, then ``end``; a stream
    sends its state between them too, as its time goes on (``TraceJobs.stream``)."""

    id: str
    owner: str
    key: str
    asked_for: str  # the part and its form: a same request is answered with ``body``
    layers: int
    thumbs: bool  # the part asked for has every layer's thumbnails: a second pass
    estimate_s: float
    limit_s: float
    address: str = ""  # the client address that asked for it (the per-address cap; "": none)
    asked: float = field(default_factory=time.monotonic)
    state: State = "queued"
    stage: str = "waiting"  # "waiting", "forward", "thumbnails", "encoding", then as ended
    forward_done: int = 0
    thumbs_done: int = 0
    thumbs_total: int = 0
    started: float | None = None
    told_at: float | None = None  # when the last layer pass was told
    ended: float | None = None
    message: str | None = None
    status: int | None = None  # the HTTP status of a failure
    retry_after: int | None = None  # a 503's seconds to wait (a remote deployment's failure)
    remote: str | None = None  # a remote deployment's last word (NDIF: "Waiting in its queue")
    unknown: bool = False  # its time cannot be told here (a remote model's)
    body: Body | None = None
    read: bool = False  # its answer was sent (a page that loads again may ask for it again)
    stop: str | None = None  # why it is to stop, read at each layer
    task: asyncio.Task | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        EventLog.__init__(self)

    @property
    def finished(self) -> bool:
        return self.state in ENDED

    # -- progress (told on the compute thread, read on the event loop) -------------------------

    def listen(self, stage: str, done: int, total: int) -> None:
        """``attnviz.capture.progress``'s listener: note how far it is, or stop it."""
        if self.stop is not None:
            raise JobStopped(self.stop)
        if time.monotonic() - self.asked > self.limit_s:
            self.stop = self.over_limit()
            raise JobStopped(self.stop)
        before = self.done
        if stage == "forward":
            self.forward_done = done
        elif stage == "thumbnails":
            self.forward_done = self.layers
            self.thumbs_done, self.thumbs_total = done, total
        self.stage = stage
        if self.done != before:
            self.told_at = time.monotonic()
            self.emit("progress", self.as_json)

    def hear(self, words: str) -> None:
        """``attnviz.capture.progress.say``'s listener: a remote deployment's status; a job
        cancelled meanwhile stops here (its wait for the deployment ends)."""
        if words != self.remote:
            self.remote = words
            self.emit("progress", self.as_json)
        if self.stop is not None:
            raise JobStopped(self.stop)

    def over_limit(self) -> str:
        """The job's end past its limit, as a learner reads it (the log names the setting,
        ``ATTNVIZ_TRACE_JOB_S``)."""
        return (
            f"this trace took longer than this server's limit for one job of "
            f"{self.limit_s:g} s; try a shorter text"
        )

    @property
    def total(self) -> int:
        """Layer passes to go through: the forward's, then the thumbnails'."""
        thumbs = self.thumbs_total or (self.layers if self.thumbs else 0)
        return self.layers + thumbs

    @property
    def done(self) -> int:
        return self.forward_done + self.thumbs_done

    def elapsed_s(self) -> float:
        end = self.ended if self.ended is not None else time.monotonic()
        return end - self.asked

    def computing_s(self) -> float:
        if self.started is None:
            return 0.0
        end = self.ended if self.ended is not None else time.monotonic()
        return end - self.started

    def left_s(self) -> float:
        """Seconds to go: at the pace of the layers done so far (counting down between them,
        to a tenth of a layer's time at least), else the estimate's."""
        if self.state in ENDED:
            return 0.0
        done, total = self.done, max(1, self.total)
        if not done or self.started is None or self.told_at is None:
            pace = self.estimate_s / total
            return (
                pace if self.stop is not None else max(pace, self.estimate_s - self.computing_s())
            )
        pace = (self.told_at - self.started) / done
        if self.stop is not None:
            return pace  # it stops at the next layer
        since = time.monotonic() - self.told_at
        return max(0.1 * pace, pace * max(0, total - done) - since)

    def as_json(self) -> dict[str, Any]:
        url = f"/api/trace/jobs/{self.id}"
        left = self.left_s()
        return {
            "id": self.id,
            "state": self.state,
            "stage": self.stage,
            "layers": self.layers,
            "layers_done": self.forward_done,
            "done": self.done,
            "total": self.total,
            "elapsed_s": round(self.elapsed_s(), 2),
            # Unknown for a remote model's (its deployment's queue and loading): none said.
            "left_s": None if self.state in ENDED or self.unknown else round(left, 1),
            "estimate_s": round(self.estimate_s, 1),
            "limit_s": self.limit_s,
            "message": self.message,
            "status": self.status,
            "remote": self.remote,
            "url": url,
            "result": f"{url}/result",
            "events": f"{url}/events",
        }


class TraceJobs:
    """The jobs of one server, and the pace that tells which traces become one."""

    def __init__(self, traces: TraceService, settings: Settings) -> None:
        self.traces = traces
        self.after_s = settings.trace_job_after_s
        self.limit_s = settings.trace_job_s
        self.ttl_s = settings.trace_cache_ttl_s
        self.pace = FIRST_PACE.get(traces.device.type, FIRST_PACE["cpu"])
        self.answer_pace = dict(FIRST_ANSWER_PACE)  # by form (``answer_form``)
        self._jobs: dict[str, TraceJob] = {}
        self.replica = settings.replica
        # A plain request (no job asked for) is bounded by the request limit: one expected to
        # compute longer is refused before it starts (``over_request_limit``).
        self.request_s = settings.request_timeout_s
        self.server_cap = settings.max_text_tokens
        self.max_image_bytes = settings.max_image_bytes
        self.epoch = secrets.token_hex(EPOCH_BYTES)
        self.per_address = settings.trace_jobs_per_address

    # -- the estimate -------------------------------------------------------------------------

    def admit(
        self,
        req: TextTraceRequest,
        query: TraceQuery,
        compact: bool = True,
        accept_encoding: str = "",
    ) -> Work:
        """The work of ``req``'s trace and part, answered compact or not, once everything a
        plain request would refuse without computing is checked (before a job is accepted, or a
        plain request waits for its turn): ``ModelNotFound`` for an unknown model (404), a
        ``TraceError`` naming the field for a text over the token cap, a layer or head out of
        range, ... (422)."""
        model, tokens = self.checked(req)
        cfg = model.cfg
        bound = self.token_bound(req, model, tokens)
        are = "tokens at most with its images" if req.images else "tokens"
        check_part(query, cfg.n_layers, cfg.n_heads, bound, model.unavailable, are)
        thumbs = self._thumbs(query)
        units = self.units(model, tokens, thumbs)
        numbers = shape_numbers(query, cfg, tokens)  # (an image's tokens are not known yet)
        return Work(units, numbers, answer_form(compact, accept_encoding), thumbs)

    def checked(self, req: TextTraceRequest) -> tuple[ServedModel, int]:
        """The model ``req`` names and its text's tokens with any it writes, once its text is
        checked against the model and the caps (``ModelNotFound``, ``TraceError``)."""
        model = find_model(self.traces.registry, req.model)
        return model, check_text(req, model, self.server_cap, self.max_image_bytes)

    def token_bound(self, req: TextTraceRequest, model: ServedModel, tokens: int) -> int:
        """The most tokens ``req``'s trace can have, for a query or key checked before it is
        computed: ``tokens`` (``checked``'s), or with images the model's token cap, which the
        trace keeps to. An image's tokens are made by the model's processor once the picture
        is decoded, on the compute thread: a query or key among them is valid, and one past
        the trace's own count is refused by the trace (``select``), naming it."""
        return token_cap(model, self.server_cap) if req.images else tokens

    @staticmethod
    def units(model: ServedModel, tokens: int, thumbs: bool) -> float:
        """The work of a trace of ``tokens`` on ``model`` (``work_units``; with ``thumbs``,
        every layer's thumbnails too); a remote model's is unknown here: infinite."""
        if model.backend in REMOTE_BACKENDS:
            # Its time is the deployment's (its queue, a model to load): unknown here, and
            # never this server's pace. Always a job, when asked: the page shows what NDIF says.
            return math.inf
        return work_units(model.cfg, tokens, thumbs)

    @staticmethod
    def _thumbs(query: TraceQuery) -> bool:
        return "thumbs" in (query.fields or "") and query.thumb_layer is None

    def expected_s(self, work: Work | float) -> float:
        """Seconds ``work`` is expected to take here: its arithmetic at the pace of computing,
        its answer's numbers at the paces of choosing them and of writing that form (a bare
        number: units alone)."""
        work = work if isinstance(work, Work) else Work(work)
        paces = self.answer_pace
        per_number = 1 / paces["part"] + 1 / paces.get(work.form, paces["json-compressed"])
        return work.units / self.pace + work.numbers * per_number

    def over_request_limit(self, work: Work | float) -> float | None:
        """The seconds a request's trace and answer are expected to take when that is past the
        request limit (it would be cut off with nothing to show: a plain one is refused before
        it starts, saying to ask for a job; one that asked for a job is one), else None (a
        remote model's time is unknown: never)."""
        expected = self.expected_s(work)
        return expected if math.isfinite(expected) and expected > self.request_s else None

    def wants_job(self, work: Work) -> bool:
        """Whether a request that asked for a job (``Prefer: respond-async``) gets one: its
        trace is expected to take longer than ``trace_job_after_s``, or than the request limit
        (answered plainly it would be cut off)."""
        expected = self.expected_s(work)
        return expected > self.after_s or self.over_request_limit(work) is not None

    def measured(self, work: Work, phases: tuple[tuple[str, float], ...]) -> None:
        """A text trace of ``work`` went as ``phases`` say (``Body.phases``, in ms: its forward,
        its part chosen, its answer encoded): each pace moves, the computing one by the forward
        (and the part, when it had the thumbnails to compute again), the part's and the form's
        by the part chosen and the encoding (not for a remote model's, whose units are unknown;
        nothing from a body whose phases are not known)."""
        ms = dict(phases)
        if not ms or not math.isfinite(work.units):
            return
        forward, part, encode = (ms.get(name, 0.0) / 1000 for name in ("forward", "part", "encode"))
        computing = forward + part if work.thumbs else forward
        if work.units >= _MIN_UNITS and computing > 0:
            self.pace = _moved(self.pace, work.units / computing)
        if work.numbers < _MIN_NUMBERS:
            return
        paces = self.answer_pace
        if not work.thumbs and part > 0:
            paces["part"] = _moved(paces["part"], work.numbers / part)
        if encode > 0:
            before = paces.get(work.form, FIRST_ANSWER_PACE["json-compressed"])
            paces[work.form] = _moved(before, work.numbers / encode)

    # -- starting ------------------------------------------------------------------------------

    def supersede(self, caller: Caller, key: str) -> None:
        """The caller asked for another trace to compute: its job on anything else stops."""
        for job in self._jobs.values():
            if job.owner == caller.visitor and job.key != key and job.state not in ENDED:
                self._stop(job, "cancelled: a newer request of this page took its place")

    @staticmethod
    def asked_for(query: TraceQuery, compact: bool, accept_encoding: str) -> str:
        return f"{query.model_dump_json()} {compact} {accept_encoding}"

    def answered(self, caller: Caller, key: str, asked_for: str) -> Body | None:
        """The answer of the caller's done job to this very request, if it has one (a page
        loaded again: its first part would otherwise take every layer's weights again)."""
        for job in self._jobs.values():
            if job.owner == caller.visitor and job.key == key and job.asked_for == asked_for:
                return job.body
        return None

    def active(self, caller: Caller, key: str, asked_for: str) -> TraceJob | None:
        """The caller's job computing this very request (``key``'s part ``asked_for``), if one
        is."""
        for job in self._jobs.values():
            if (
                job.owner == caller.visitor
                and (job.key, job.asked_for) == (key, asked_for)
                and job.state not in ENDED
            ):
                return job
        return None

    def start(
        self,
        req: TextTraceRequest,
        query: TraceQuery,
        compact: bool,
        accept_encoding: str,
        client: str,
        caller: Caller,
        work: Work,
    ) -> TraceJob:
        """The caller's job computing ``req``'s part (the one already running for it, if any);
        ``TooManyJobs`` when the caller's address has its share going (``refusal``), ``Busy``
        when the queue is full. (A trace to compute supersedes the caller's jobs on
        other texts first: ``supersede``; a kept trace's part does not, the page asks parts of
        two traces at once, a knocked-out one and its clean run.)"""
        key = self.traces.key(req)
        asked_for = self.asked_for(query, compact, accept_encoding)
        running = self.active(caller, key, asked_for)
        if running is not None:
            return running  # the page asked again (reconnected): the same job
        refused = self.refusal(caller)
        if refused is not None:
            raise refused
        self.traces.admission_for(req).check()
        cfg = find_model(self.traces.registry, req.model).cfg
        job = TraceJob(
            id=self.new_id(),
            owner=caller.visitor,
            key=key,
            address="" if caller.operator else caller.address,  # the operator's: uncounted
            asked_for=asked_for,
            layers=cfg.n_layers,
            thumbs=self._thumbs(query),
            estimate_s=min(self.expected_s(work), self.limit_s),  # a remote one's: its limit
            unknown=not math.isfinite(work.units),
            limit_s=self.limit_s,
        )
        self._forget_old(caller.visitor)
        self._jobs[job.id] = job
        job.task = asyncio.create_task(
            self._run(job, req, query, compact, accept_encoding, client, work)
        )
        asyncio.get_running_loop().call_later(self.limit_s, self._expire, job)
        log.info("trace job %s: %d layers, about %.0f s", job.id, job.layers, job.estimate_s)
        return job

    def refusal(self, caller: Caller) -> TooManyJobs | None:
        """Why ``caller`` may not start another job now, or None: ``per_address`` visitors of its
        address have jobs computing or waiting, and the caller is none of them (a client without
        a cookie is a new visitor at every request; a page's own jobs, such as a remote model's
        parts, are one visitor's and never refused here). The operator is exempt; a caller of
        no known address is bound by nothing here."""
        if caller.operator or not caller.address:
            return None
        here = [j for j in self.running if j.address == caller.address]
        visitors = {j.owner for j in here}
        if caller.visitor in visitors or len(visitors) < self.per_address:
            return None
        after = max(1, math.ceil(min(j.left_s() for j in here)))
        return TooManyJobs(
            f"trace: {len(visitors)} visitors from your network address have long traces "
            "computing or waiting, as many as this server takes from one address; try again "
            f"in {after} s, when one of them should have ended",
            after,
        )

    async def _run(
        self,
        job: TraceJob,
        req: TextTraceRequest,
        query: TraceQuery,
        compact: bool,
        accept_encoding: str,
        client: str,
        work: Work,
    ) -> None:
        traces = self.traces

        def compute() -> Body:
            if job.stop is not None:  # stopped while it waited: nothing computed
                raise JobStopped(job.stop)

            def begin() -> None:
                job.started, job.state, job.stage = time.monotonic(), "running", "forward"

            job.emit("progress", job.as_json, apply=begin)
            with reporting(job.listen, job.hear):
                body = traces._respond(req, query, compact, accept_encoding)
            job.emit("progress", job.as_json, apply=lambda: setattr(job, "stage", "encoding"))
            return body

        try:
            body = await traces.admission_for(req).run(client, compute, left=job.left_s)
        except asyncio.CancelledError:
            self._end(job, "cancelled" if job.stop and job.stop.startswith("cancel") else "failed",
                      job.stop or "cancelled")  # fmt: skip
            return
        except JobStopped as exc:
            cancelled = str(exc).startswith("cancel")
            self._end(job, "cancelled" if cancelled else "failed", str(exc))
            return
        except ModelNotFound as exc:
            self._end(job, "failed", str(exc), 404)
            return
        except TraceError as exc:
            self._end(job, "failed", str(exc), 422)
            return
        except RemoteError as exc:  # NDIF's failure, in its words (502 or 503)
            job.retry_after = exc.retry_after
            self._end(job, "failed", str(exc), exc.status)
            return
        except Exception:
            log.exception("trace job %s failed", job.id)
            self._end(job, "failed", "internal error", 500)
            return
        if job.elapsed_s() > job.limit_s:  # no layer told it (a bridged model): said now
            self._end(job, "failed", job.over_limit())
            return
        job.body = body
        self.measured(work, body.phases)
        self._end(job, "done", None)

    def _end(self, job: TraceJob, state: State, message: str | None, status: int = 0) -> None:
        def end() -> None:  # its end and its end's event at once
            job.state, job.stage, job.message = state, state, message
            job.status = status or (
                None if state == "done" else 409 if state == "cancelled" else 503
            )
            job.ended = time.monotonic()

        job.emit("end", job.as_json, apply=end)
        job.compact()  # each event is its whole state: its end alone is kept
        setting = " (ATTNVIZ_TRACE_JOB_S)" if message == job.over_limit() else ""
        log.info("trace job %s %s in %.1f s%s%s", job.id, state, job.elapsed_s(),
                 f": {message}" if message else "", setting)  # fmt: skip

    def _stop(self, job: TraceJob, why: str) -> None:
        if job.state in ENDED or job.stop is not None:
            return
        job.stop = why
        if job.started is None and job.task is not None:
            job.task.cancel()  # still waiting for its turn: it leaves the line

    def _expire(self, job: TraceJob) -> None:
        if job.state not in ENDED:
            self._stop(job, job.over_limit())

    def _forget_old(self, owner: str) -> None:
        """Ended jobs past the cache's lifetime go; of ``owner``'s, those whose answers were read
        but the newest, and past ``UNREAD_PER_VISITOR`` the oldest unread."""
        now = time.monotonic()
        ended = sorted(
            (j for j in self._jobs.values() if j.state in ENDED and j.ended is not None),
            key=lambda j: j.ended or 0.0,
            reverse=True,
        )
        newest_read, unread = True, 0
        for job in ended:
            assert job.ended is not None
            if now - job.ended > self.ttl_s:
                del self._jobs[job.id]
            elif job.owner == owner:
                keep = newest_read if job.read else unread < UNREAD_PER_VISITOR
                if job.read:
                    newest_read = False
                else:
                    unread += 1
                if not keep:
                    del self._jobs[job.id]
        while len(self._jobs) >= MAX_JOBS:
            ended = [j for j in self._jobs.values() if j.state in ENDED]
            if not ended:
                break
            del self._jobs[min(ended, key=lambda j: j.ended or 0).id]

    # -- reading, cancelling --------------------------------------------------------------------

    def new_id(self) -> str:
        """A job's id: this process's epoch, then random digits, after the replica's name."""
        token = self.epoch + secrets.token_hex(ID_BYTES - EPOCH_BYTES)
        return f"{self.replica}-{token}" if self.replica else token

    def gone(self, job_id: str) -> str:
        """Why there is no job ``job_id`` here for the caller: issued before this server
        restarted (another epoch), by another replica, or by this process and since forgotten
        (or another visitor's: the same words as forgotten, so that its existence is not
        revealed)."""
        again = "ask for the trace again"
        form = JOB_ID.fullmatch(job_id)
        if form is None:
            return (
                f"job_id: no trace job {job_id!r} here: this server restarted since (its jobs are "
                f"kept in memory only), or the job expired; {again}"
            )
        replica = form["replica"] or ""
        if replica != self.replica:
            where = f"replica {replica!r}" if replica else "a server without a replica name"
            return f"job_id: that job was started on {where}, not on this one; {again}"
        if not form["token"].startswith(self.epoch):
            return (
                "job_id: this server restarted since that job was started (its jobs are kept in "
                f"memory only); {again}"
            )
        return (
            f"job_id: no trace job {job_id!r} here (it ended over {self.ttl_s:g} s ago, a newer "
            f"one took its place, or it is not yours); {again}"
        )

    def get(self, job_id: str, caller: Caller) -> TraceJob:
        """The job, for whom runs and comparisons let control theirs (``Ownership``): its owner
        and the operator; anyone else is told it is gone (a job is a page's own, never shared)."""
        job = self._jobs.get(job_id)
        if job is None or not Ownership(job.owner).may_control(caller):
            raise JobGone(self.gone(job_id))
        return job

    def cancel(self, job_id: str, caller: Caller) -> TraceJob:
        """Stop the job at its next layer (at once when it waits for its turn)."""
        job = self.get(job_id, caller)
        self._stop(job, "cancelled by its page")
        return job

    @property
    def running(self) -> list[TraceJob]:
        return [j for j in self._jobs.values() if j.state not in ENDED]

    async def stream(self, job: TraceJob, after: int | None) -> AsyncIterator[Event]:
        """(seq, event, JSON data): the job's state, then its events and, between them, its
        state as its time goes on, until its end (``events.follow``)."""

        def now() -> str:
            return json.dumps(job.as_json(), separators=(",", ":"))

        def state() -> tuple[int, str]:
            seq = job.seq  # read first: an event logged meanwhile is sent again, never lost
            return seq, now()

        async for item in follow(job, after, state, now):
            yield item

    async def wait(self, job: TraceJob, timeout: float) -> None:
        """Until the job ends, or ``timeout`` seconds."""
        if job.task is not None:
            await asyncio.wait({job.task}, timeout=timeout)
