"""Which ended trace jobs a server keeps: a visitor's unread answers (parts its page asked for
at once, followed each as a job) until read, and the newest read one (a page loaded again asks
for it again); everything past the trace cache's lifetime goes."""

from __future__ import annotations

import time

from attnviz.services.jobs import UNREAD_PER_VISITOR, TraceJob, TraceJobs


def ended(owner: str, n: int, read: bool, ago: float = 1.0) -> TraceJob:
    job = TraceJob(id=f"{owner}-{n}-{read}", owner=owner, key="k", asked_for=str(n), layers=1,
                   thumbs=False, estimate_s=1.0, limit_s=60.0)  # fmt: skip
    job.state, job.read = "done", read
    job.ended = time.monotonic() - ago + n * 1e-3  # a larger n ended later
    return job


def kept_after(jobs: list[TraceJob], owner: str, ttl_s: float = 600.0) -> set[str]:
    server = TraceJobs.__new__(TraceJobs)
    server.ttl_s, server._jobs = ttl_s, {j.id: j for j in jobs}
    server._forget_old(owner)
    return set(server._jobs)


def test_a_visitors_unread_answers_stay_and_only_its_newest_read_one():
    jobs = [ended("v", 0, True), ended("v", 1, True), ended("v", 2, False), ended("v", 3, False)]
    assert kept_after(jobs, "v") == {"v-1-True", "v-2-False", "v-3-False"}


def test_past_the_bound_the_oldest_unread_go():
    jobs = [ended("v", n, False) for n in range(UNREAD_PER_VISITOR + 3)]
    kept = kept_after(jobs, "v")
    assert kept == {f"v-{n}-False" for n in range(3, UNREAD_PER_VISITOR + 3)}


def test_another_visitors_jobs_stay_until_the_caches_lifetime_ends():
    jobs = [ended("w", 0, True), ended("w", 1, True), ended("x", 0, False, ago=700.0)]
    assert kept_after(jobs, "v") == {"w-0-True", "w-1-True"}
