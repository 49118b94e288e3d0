"""The shipped nginx config, for real on loopback: Debian's nginx in front of two `attnviz serve`
processes; one is killed under load and no client request fails.

nginx runs as the current user with every path under the test's temporary folder, on a free
loopback port (never port 80, never /etc/nginx). Its config is
deploy/nginx/templates/default.conf.template rendered as the official nginx image renders it
(envsubst of the ATTNVIZ_PROXY_* variables only), included from a small main config like the
image's nginx.conf. nginx is a system package (`make system-packages`, part of `make test`); the
tests fail, rather than skip, without it.
"""

from __future__ import annotations

import contextlib
import grp
import itertools
import os
import pwd
import random
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from attnviz.api.visitor import COOKIE
from tests.support.servers import wait_healthy
from tests.support.waits import until

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "deploy" / "nginx" / "templates" / "default.conf.template"
NGINX = shutil.which("nginx", path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin"]))
MODEL = "all-MiniLM-L6-v2"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path: Path, lines: int = 30) -> str:
    if not path.exists():
        return f"({path.name}: nothing)"
    return f"--- {path.name}:\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def render(template: str, env: dict[str, str]) -> str:
    """envsubst restricted to ``env``'s names, as the nginx image's entrypoint runs it:
    ``$NAME`` and ``${NAME}`` of those names are replaced, every other ``$`` is nginx's."""

    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return env.get(name, m.group(0))

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", one, template)


def stop(proc: subprocess.Popen, group: bool = False) -> None:
    """SIGTERM, then SIGKILL after 10 s; ``group``: the whole process group it leads."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    if group:  # nginx's workers leave with their master; make sure of it
        # A grace period, not a wait for a state a test asserts: the group is given 5 s to go
        # by itself, then killed (a cleanup, as SIGTERM's 10 s above).
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


# -- nginx ----------------------------------------------------------------------------------------


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def main_conf(folder: Path) -> str:
    """What the official image's /etc/nginx/nginx.conf gives the template: the http context, and
    here temp paths and logs in ``folder``."""
    user = ""
    if os.geteuid() == 0:  # a root master would run its workers as nobody, who cannot write here
        user = f"user {pwd.getpwuid(os.geteuid()).pw_name} {grp.getgrgid(os.getegid()).gr_name};"
    temps = "\n".join(
        f"    {kind}_temp_path {folder / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""{user}
worker_processes 2;
events {{
    worker_connections 256;
}}
http {{
{temps}
    log_format upstreams '$status "$request" $request_time tag=$http_x_test_tag '
                         'upstream="$upstream_addr" status=$upstream_status';
    access_log {folder / "access.log"} upstreams;
    include {folder / "conf.d"}/*.conf;
}}
"""


@dataclass
class Proxy:
    base: str
    folder: Path

    def upstreams(self) -> dict[str, str]:
        """From nginx's access log: each request's X-Test-Tag -> the replicas it went to."""
        log = self.folder / "access.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        return dict(re.findall(r' tag=(\S+) upstream="([^"]*)"', text))

    def errors(self, what: str) -> list[str]:
        """nginx's error log lines that contain ``what``."""
        return [
            line for line in (self.folder / "nginx.stderr").read_text().splitlines() if what in line
        ]


@pytest.fixture
def nginx_proxy(tmp_path) -> Iterator[Callable[[str, str], Proxy]]:
    """Start nginx with the shipped template in front of two upstreams."""
    if NGINX is None:
        pytest.fail("nginx is not installed: `make system-packages` (Debian's nginx) installs it")
    procs: list[subprocess.Popen] = []

    def start(upstream_1: str, upstream_2: str) -> Proxy:
        folder = tmp_path / f"nginx{len(procs)}"
        (folder / "conf.d").mkdir(parents=True)
        port = free_port()
        env = {
            "ATTNVIZ_PROXY_LISTEN": f"127.0.0.1:{port}",
            "ATTNVIZ_PROXY_UPSTREAM_1": upstream_1,
            "ATTNVIZ_PROXY_UPSTREAM_2": upstream_2,
        }
        text = TEMPLATE.read_text()
        conf = render(text, env)
        if shutil.which("envsubst"):  # the image's own tool, where it is here: the same text
            shell_format = " ".join(f"${{{name}}}" for name in env)
            by_envsubst = subprocess.run(
                ["envsubst", shell_format], input=text, env=env, text=True, capture_output=True
            ).stdout
            assert conf == by_envsubst
        (folder / "conf.d" / "default.conf").write_text(conf)
        (folder / "nginx.conf").write_text(main_conf(folder))
        args = [NGINX, "-p", str(folder), "-c", str(folder / "nginx.conf")]
        args += ["-g", f"daemon off; pid {folder / 'nginx.pid'}; error_log stderr notice;"]
        checked = subprocess.run([*args, "-t"], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stderr
        with (folder / "nginx.stderr").open("wb") as out:
            procs.append(subprocess.Popen(args, stdout=out, stderr=out, start_new_session=True))
        up = until(lambda: listening(port), lambda up: up or procs[-1].poll() is not None,
                   "nginx's start")  # fmt: skip
        if not up:
            pytest.fail("nginx did not start\n" + tail(folder / "nginx.stderr"))
        return Proxy(f"http://127.0.0.1:{port}", folder)

    try:
        yield start
    finally:
        for proc in procs:
            stop(proc, group=True)


# -- replicas -------------------------------------------------------------------------------------


@dataclass
class Replica:
    name: str
    port: int
    proc: subprocess.Popen
    log: Path

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"


@pytest.fixture
def replicas(tmp_path) -> Iterator[list[Replica]]:
    """Two real `attnviz serve` processes on the CPU, with the default model, answering /healthz."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNVIZ_") and k != "PORT"}
    # One torch thread each: two replicas, nginx and the clients share this machine's cores.
    env.update(ATTNVIZ_DEVICE="cpu", ATTNVIZ_LOG_LEVEL="warning", OMP_NUM_THREADS="1")
    # A trace asked for as a job (Prefer: respond-async) is one at once, whatever its size.
    env.update(ATTNVIZ_TRACE_JOB_AFTER_S="0")
    # As compose.yaml: one ATTNVIZ_SECRET for both, so a visitor is one visitor on either, and
    # one data directory for both (the named volume), so a finished run is on either.
    env.update(ATTNVIZ_SECRET=secrets.token_urlsafe(32), ATTNVIZ_DATA_DIR=str(tmp_path / "data"))
    started: list[Replica] = []
    try:
        for name, replica in (("a", "r1"), ("b", "r2")):  # as compose.yaml names them
            port = free_port()
            log = tmp_path / f"replica-{name}.log"
            with log.open("wb") as out:
                cmd = [sys.executable, "-m", "attnviz", "serve"]
                cmd += ["--host", "127.0.0.1", "--port", str(port)]
                proc = subprocess.Popen(
                    cmd, stdout=out, stderr=out, env={**env, "ATTNVIZ_REPLICA": replica}, cwd=ROOT
                )
            started.append(Replica(name, port, proc, log))
        for replica in started:
            wait_healthy(f"http://{replica.addr}", replica.proc, lambda r=replica: tail(r.log))
        yield started
    finally:
        for replica in started:
            stop(replica.proc)


# -- load -----------------------------------------------------------------------------------------

WORDS = (
    "the a river bank money apple banana street animal tired cross sat went investment fish "
    "water bridge morning quiet old small house garden tree light rain road city market song "
    "teacher student book window cat dog green red slowly never always because when"
).split()
SENTENCES = [
    "I sat on the river bank",
    "I went to the investment bank",
    "The animal didn't cross the street because it was too tired",
    "An apple and a banana",
]


@dataclass
class Result:
    start: float
    end: float
    what: str
    status: int | None  # None: no complete HTTP answer
    tag: str = ""  # sent as X-Test-Tag, which nginx logs with the replicas it tried
    upstream: str = ""  # from that log: "a", or "a, b" when a failed and b answered
    note: str = ""

    @property
    def answered_by(self) -> str:
        return self.upstream.split(", ")[-1]


def one_request(rng: random.Random) -> tuple[str, str, dict | None, dict | None]:
    """The page's mix: the page, the models, and trace parts of texts, about half of them new
    (a miss on every replica: a forward) and half seen before (a hit where it was computed).
    (method, path, params, body)."""
    roll = rng.random()
    if roll < 0.1:
        return "GET", "/", None, None
    if roll < 0.2:
        return "GET", "/api/models", None, None
    if roll < 0.25:
        return "GET", "/healthz", None, None
    if rng.random() < 0.5:
        text = rng.choice(SENTENCES)
    else:
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))
    if rng.random() < 0.5:
        params = {"fields": "thumbs"}
    else:
        params = {"fields": "attentions", "layer": rng.randrange(6), "head": rng.randrange(12)}
    return "POST", "/api/trace", params, {"model": MODEL, "text": text}


@dataclass
class Load:
    """``clients`` threads sending requests back to back through ``base`` until stopped."""

    base: str
    clients: int = 8
    results: list[Result] = field(default_factory=list)
    stopping: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)

    def client(self, k: int) -> None:
        """Requests back to back. Like the page (static/js/core/api.js), a request whose connection
        is cut on the way is sent once more; a second cut, or any answer but a 200, fails."""
        rng = random.Random(k)
        with httpx.Client(base_url=self.base, timeout=30) as http:
            for i in itertools.count():
                if self.stopping.is_set():
                    break
                method, path, params, body = one_request(rng)
                what = f"{method} {path}"
                tag = f"{k}-{i}"
                t0 = time.monotonic()
                note = ""
                for attempt in (1, 2):
                    try:
                        headers = {"X-Test-Tag": f"{tag}-{attempt}"}
                        r = http.request(method, path, params=params, json=body, headers=headers)
                        break
                    except httpx.HTTPError as exc:  # no complete answer
                        note += f"attempt {attempt}: {exc!r}; "
                        if attempt == 2:
                            r = None
                        else:
                            time.sleep(0.3)
                if r is None:
                    self.results.append(Result(t0, time.monotonic(), what, None, tag, note=note))
                    continue
                if r.status_code != 200:
                    note += f"{r.headers} {r.text[:300]}"
                tag += f"-{attempt}"
                self.results.append(
                    Result(t0, time.monotonic(), what, r.status_code, tag, note=note)
                )

    def __enter__(self) -> Load:
        for k in range(self.clients):
            self.threads.append(threading.Thread(target=self.client, args=(k,), daemon=True))
            self.threads[-1].start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=40)

    def answered_by(self, proxy: Proxy, until: float | None = None) -> Counter[str]:
        """How many requests each replica answered (by nginx's log)."""
        self.read_upstreams(proxy)
        return Counter(r.answered_by for r in list(self.results) if until is None or r.end < until)

    def read_upstreams(self, proxy: Proxy) -> None:
        logged = proxy.upstreams()
        for r in list(self.results):
            r.upstream = logged.get(r.tag, r.upstream)


@pytest.mark.slow
def test_a_replica_killed_under_load_fails_no_request(replicas, nginx_proxy):
    a, b = replicas
    proxy = nginx_proxy(a.addr, b.addr)
    began = time.monotonic()
    with Load(proxy.base) as load:
        # Both replicas answer, round robin, before one of them goes.
        until(lambda: load.answered_by(proxy),
              lambda by: min(by[a.addr], by[b.addr]) >= 25, "both replicas answering")  # fmt: skip
        b.proc.kill()  # SIGKILL: no goodbye, requests in flight on it are cut
        b.proc.wait(timeout=10)
        killed = time.monotonic()
        time.sleep(3)
    ended = time.monotonic()

    results = load.results
    time.sleep(0.5)  # nginx has written its last log lines
    before = load.answered_by(proxy, until=killed)
    after = [r for r in results if r.start > killed]
    retried = [r for r in results if b.addr in r.upstream and r.answered_by == a.addr]
    failed = [r for r in results if r.status != 200]
    # What no proxy can hide: a response the killed replica had begun to send. nginx passes a
    # response's headers on as soon as it has them, and from then on cannot try another replica;
    # uvicorn writes the headers and the body in two writes, and a SIGKILL can fall between
    # them. The replica writes one response at a time, so that is one response at most; the
    # client, like the page, asks once more and gets its answer.
    cut = [r for r in results if r.status == 200 and "attempt 1" in r.note]
    cut_logged = [
        line
        for line in proxy.errors("upstream prematurely closed connection while reading upstream,")
        if f'upstream: "http://{b.addr}/' in line
    ]
    print(
        f"\nproxy: {len(results)} requests in {ended - began:.1f} s "
        f"({len(results) / (ended - began):.0f}/s); before the kill {before[a.addr]} answered "
        f"by a, {before[b.addr]} by b; after it {len(after)}, by a; {len(retried)} passed on "
        f"from b to a; {len(cut)} cut mid-response and asked again; {len(failed)} failed"
    )
    assert failed == [], "\n".join(
        [f"{r.what} -> {r.status} via {r.upstream}: {r.note}" for r in failed[:10]]
        + cut_logged
        + [tail(a.log), tail(b.log), tail(proxy.folder / "nginx.stderr")]
    )
    assert len(cut) <= 1 and len(cut) <= len(cut_logged), [r.note for r in cut] + cut_logged
    assert min(before[a.addr], before[b.addr]) >= 0.25 * sum(before.values()), before
    assert len(after) >= 20, "too little load after the kill to tell"
    assert {r.answered_by for r in after} == {a.addr}
    # The killed replica was still offered requests (nginx finds it down only by failing on it);
    # each was passed on to the other and answered.
    assert retried

    # Now the other one goes too: nginx answers 503 with Retry-After itself, in the API's shape.
    a.proc.kill()
    a.proc.wait(timeout=10)
    r = httpx.get(f"{proxy.base}/healthz", timeout=10)
    assert r.status_code == 503
    assert r.headers["retry-after"] == "5"
    assert "x-upstream" not in r.headers  # the replicas' addresses stay inside
    assert r.json() == {"message": r.json()["message"], "detail": []}
    assert "no replica" in r.json()["message"]


# -- training runs --------------------------------------------------------------------------------

TINY_RUN = {
    "arch": {"layers": 1, "heads": 2, "d_model": 16},
    "opt": {"steps": 30},
    "checkpoints": 2,
}


def sse_events(http: httpx.Client, path: str, tag: str) -> list[str]:
    """The names of a stream's events, in order, until it ends."""
    names = []
    with http.stream("GET", path, headers={"X-Test-Tag": tag}) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if line.startswith("event: "):
                names.append(line.removeprefix("event: "))
    return names


@pytest.mark.slow
def test_every_request_about_a_run_reaches_the_replica_that_trains_it(replicas, nginx_proxy):
    a, b = replicas
    proxy = nginx_proxy(a.addr, b.addr)
    replica_addr = {"r1": a.addr, "r2": b.addr}
    runs: dict[str, str] = {}  # run id -> the model's probe text
    jobs: dict[str, str] = {}  # trace job id -> its run's id
    with httpx.Client(base_url=proxy.base, timeout=60) as http:
        # Starts go round robin (a replica whose one slot is taken answers 503, and nginx passes
        # the POST on); each run is followed to its end, so both replicas get runs.
        for i in range(6):
            r = http.post("/api/train", json=TINY_RUN, headers={"X-Test-Tag": f"start-{i}"})
            assert r.status_code == 202, r.text
            run_id = r.json()["id"]
            events = sse_events(http, f"/api/train/{run_id}/events", f"events-{i}")
            assert events[0] == "state" and events[-1] == "end" and "checkpoint" in events
            state = http.get(f"/api/train/{run_id}", headers={"X-Test-Tag": f"state-{i}"}).json()
            assert state["id"] == run_id and state["state"] == "done"
            runs[run_id] = state["probe"]["text"]
            # A trace of the run's model, sent to its replica by the header the page adds.
            r = http.post(
                "/api/trace?fields=attentions",
                json={"model": run_id, "text": runs[run_id]},
                headers={"X-Attnviz-Run": run_id, "X-Test-Tag": f"trace-{i}"},
            )
            assert r.status_code == 200, r.text
            # Another text of its letters asked for as a job (not a cached trace): the job
            # lives in the memory of the replica that made it, and its URL goes there.
            r = http.post(
                "/api/trace?fields=attentions",
                json={"model": run_id, "text": runs[run_id][::-1]},
                headers={"X-Attnviz-Run": run_id, "Prefer": "respond-async"},
            )
            assert r.status_code == 202, r.text
            job = r.json()["id"]
            for k in range(3):
                r = http.get(f"/api/trace/jobs/{job}", headers={"X-Test-Tag": f"job-{i}-{k}"})
                assert r.status_code == 200, r.text
            jobs[job] = run_id
        assert {rid.split("-")[0] for rid in runs} == {"r1", "r2"}, runs
        # A finished run is in the data directory both replicas share: its link, opened in
        # sentence mode (/api/models?open=, which goes to either replica), lists its model on
        # both, whichever trained it.
        for i, run_id in enumerate(runs):
            for k in range(4):
                r = http.get(f"/api/models?open={run_id}", headers={"X-Test-Tag": f"open-{i}-{k}"})
                assert run_id in [m["name"] for m in r.json()["models"]], (run_id, k)
        # Both replicas sign with one secret: the visitor cookie the first answer set holds on
        # either, so this client stayed one visitor, and each run is its own to cancel.
        visitor = http.cookies[COOKIE]
        assert len(http.cookies.jar) == 1
        with httpx.Client(base_url=proxy.base, timeout=60) as other:
            for run_id in runs:
                r = other.delete(f"/api/train/{run_id}")  # not its run: the 404 of none
                assert r.status_code == 404 and f"no run '{run_id}'" in r.json()["message"]
                assert http.get(f"/api/train/{run_id}").json()["can_cancel"] is True
        # A recurrent comparison (a run of its own kind): started anywhere, read on its replica;
        # a Learn step's check of a run goes to the run's replica by the header the page adds.
        r = http.post("/api/recurrent", json={"task": "copy"})
        assert r.status_code == 202, r.text
        comparison = r.json()["id"]
        for i in range(3):
            r = http.get(f"/api/recurrent/{comparison}", headers={"X-Test-Tag": f"rnn-{i}"})
            assert r.status_code == 200 and r.json()["id"] == comparison, r.text
        # Its events, from its replica, through the proxy as they are written: cancelled, it
        # ends (its state alone, where it ended before the stream began).
        assert http.delete(f"/api/recurrent/{comparison}").status_code == 200
        names = sse_events(http, f"/api/recurrent/{comparison}/events", "rnn-3")
        assert names[0] == "state" and (names[-1] == "end" or names == ["state"]), names
        checks = {}
        for i, run_id in enumerate(runs):
            r = http.post(
                "/api/learn/induction/check",
                json={"run": run_id, "view": {"variant": 0, "layer": 0, "head": 0}},
                headers={"X-Attnviz-Run": run_id, "X-Test-Tag": f"check-{i}"},
            )
            assert r.status_code == 200, r.text
            checks[run_id] = r.json()
        assert all(c["step"] == "induction" and c["tasks"] for c in checks.values()), checks
        time.sleep(0.5)  # nginx has written its log
        logged = proxy.upstreams()
        for i, run_id in enumerate(runs):
            home = replica_addr[run_id.split("-")[0]]
            for what in ("events", "state", "trace", "check"):
                assert logged[f"{what}-{i}"] == home, (what, run_id, logged)
        for i in range(4):
            assert logged[f"rnn-{i}"] == replica_addr[comparison.split("-")[0]], logged
        for i, job in enumerate(jobs):
            assert job.split("-")[0] == jobs[job].split("-")[0]  # made where the run is
            for k in range(3):
                assert logged[f"job-{i}-{k}"] == replica_addr[job.split("-")[0]], logged
        for i in range(len(runs)):  # read from both: the one that did not train it too
            assert {logged[f"open-{i}-{k}"] for k in range(4)} == {a.addr, b.addr}, logged

        # The replica of some runs goes: they answer 404 (from the proxy), the others still work.
        b.proc.kill()
        b.proc.wait(timeout=10)
        for run_id, text in runs.items():
            gone = run_id.startswith("r2-")
            r = http.get(f"/api/train/{run_id}")
            assert r.status_code == (404 if gone else 200), r.text
            r = http.post(
                "/api/trace?fields=attentions",
                json={"model": run_id, "text": text},
                headers={"X-Attnviz-Run": run_id},
            )
            assert r.status_code == (404 if gone else 200), r.text
            if gone:
                assert r.json()["detail"] == [] and "replica is gone" in r.json()["message"]
        # An id no replica ever had is refused by one of them, never answered with another run.
        # (Ids are 32 hex digits since issue 27: this one is routed to r1, which has no such run.)
        never = "r1-" + "0" * 32
        r = http.get(f"/api/train/{never}")
        assert r.status_code == 404 and f"no run '{never}'" in r.json()["message"]
        assert http.cookies[COOKIE] == visitor and len(http.cookies.jar) == 1


# -- a busy replica -------------------------------------------------------------------------------


class Stub(ThreadingHTTPServer):
    """A replica that answers every request the same: 200, or the app's busy 503."""

    daemon_threads = True

    def __init__(self, answer: int) -> None:
        self.answer = answer
        self.hits: list[str] = []
        super().__init__(("127.0.0.1", 0), StubHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # nginx leaving: not news
            super().handle_error(request, client_address)


class StubHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keepalive with nginx, as uvicorn does
    server: Stub

    def answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.server.hits.append(self.command)
        busy = self.server.answer == 503
        body = b'{"message": "busy", "detail": []}' if busy else b'{"ok": true}'
        self.send_response(self.server.answer)
        if busy:
            self.send_header("Retry-After", "7")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.slow
def test_a_busy_replica_passes_posts_to_the_other(nginx_proxy):
    busy, free = Stub(503), Stub(200)
    both_busy = Stub(503), Stub(503)
    try:
        with httpx.Client(base_url=nginx_proxy(busy.addr, free.addr).base, timeout=10) as http:
            # POSTs too (non_idempotent): a trace is a pure function of its body.
            for i in range(20):
                r = http.post("/api/trace", json={"model": MODEL, "text": f"text {i}"})
                assert r.status_code == 200, (r.status_code, r.headers)
        # The busy replica was offered some and passed them on; after max_fails=3 of them it
        # rests (fail_timeout=5s), so it saw at most 3 of the 20.
        assert 1 <= len(busy.hits) <= 3
        assert set(busy.hits) == {"POST"}

        with httpx.Client(
            base_url=nginx_proxy(*(s.addr for s in both_busy)).base, timeout=10
        ) as http:
            # Every replica busy: each is tried once and the client gets the last one's 503,
            # with the app's Retry-After...
            r = http.post("/api/trace", json={"model": MODEL, "text": "again"})
            assert (r.status_code, r.headers["retry-after"]) == (503, "7")
            assert [len(s.hits) for s in both_busy] == [1, 1]
            # ...and once all of them rest after their failures, nginx's own 503.
            for _ in range(5):
                r = http.post("/api/trace", json={"model": MODEL, "text": "again"})
                if r.headers["retry-after"] == "5":
                    break
            assert r.status_code == 503
            assert "no replica" in r.json()["message"]
    finally:
        for stub in (busy, free, *both_busy):
            stub.shutdown()
            stub.server_close()
