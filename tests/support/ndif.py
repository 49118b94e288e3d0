"""The self-hosted NDIF the suite's round trip runs against (``deploy/ndif``): built and started
in the background as soon as the session has collected a test marked ``ndif`` (the build is
minutes of downloads the first time on a machine, seconds after), so that the rest of the suite
runs meanwhile; stopped when the session ends. ``ATTNVIZ_NDIF_TEST_HOST`` names a deployment
already running instead (none is started).

One process of a session starts it (pytest itself, or under pytest-xdist its controller, when a
worker says it collected such a test), and only that one stops it: ``ray stop`` ends every Ray
on the machine. The others read its outcome from the run folder they share (``attach``)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "ndif"
# A first build on a new machine downloads a CUDA build of torch (several GB), then the stack
# starts (a minute on two busy cores).
START_S = 30 * 60


class NdifServer:
    """``setup.sh`` then ``start.sh`` in one background shell, whose exit status is written to
    ``run/rc`` (``start.sh`` prints the URL last); ``host()`` waits for it."""

    def __init__(self, run: Path, start: bool = True) -> None:
        self.run = run
        self.log = run / "start.out"
        self.proc: subprocess.Popen | None = None
        if start:
            env = {**os.environ, "ATTNVIZ_NDIF_RUN": str(run)}
            rc = run / "rc"
            script = (f'("{DEPLOY}/setup.sh" >&2 && "{DEPLOY}/start.sh"); '
                      f'echo $? > "{rc}.new" && mv "{rc}.new" "{rc}"')  # fmt: skip
            with open(self.log, "wb") as out, open(run / "start.err", "wb") as err:
                self.proc = subprocess.Popen(["bash", "-c", script], stdout=out, stderr=err,
                                             env=env, start_new_session=True)  # fmt: skip
        self._host: str | None = None

    @classmethod
    def attach(cls, run: Path) -> NdifServer:
        """The deployment another process of this session starts in ``run``."""
        return cls(run, start=False)

    def host(self) -> str:
        if self._host is None:
            deadline = time.monotonic() + START_S
            rc_file = self.run / "rc"
            while not rc_file.exists():
                gone = self.proc is not None and self.proc.poll() is not None
                if (gone and not rc_file.exists()) or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            rc = int(rc_file.read_text()) if rc_file.exists() else None
            lines = self.log.read_text().split() if self.log.exists() else []
            if rc != 0 or not lines:
                err = (self.run / "start.err").read_text()[-4000:]
                raise RuntimeError(f"the self-hosted NDIF did not start (rc {rc}):\n{err}")
            self._host = lines[-1]
        return self._host

    def env(self) -> dict[str, str]:
        """``start.sh``'s record of its ports and host."""
        pairs = (line.split("=", 1) for line in (self.run / "env").read_text().splitlines())
        return {k: v for k, v in pairs}

    def stop(self) -> None:
        """Stop it (only the process that started it does) and remove the run folder."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, 15)
            self.proc.wait(timeout=30)
        env = {**os.environ, "ATTNVIZ_NDIF_RUN": str(self.run)}
        subprocess.run(["bash", str(DEPLOY / "stop.sh")], env=env, capture_output=True,
                       timeout=120, check=False)  # fmt: skip
        shutil.rmtree(self.run, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def keyed_api(server: NdifServer) -> Iterator[str]:
    """A second NDIF API on the same deployment with keys required (``NDIF_POSTGRES_URL``, a
    database that is not there: NDIF checks a key's form before it asks the database, and fails
    closed); yields its URL. The two APIs' dispatchers share the deployment's ``ray:connected``
    flag in Redis, which the second leaves unset for a while when it stops ("compute backend is
    reconnecting", a 503): on the way out this waits until the deployment's own API says it is
    connected again, so that the tests after it find the deployment as it was."""
    port = free_port()
    home = Path(os.environ.get("ATTNVIZ_NDIF_HOME", Path.home() / ".cache/attnviz/ndif"))
    venv = home / "venv" / "bin"
    recorded = server.env()
    env = {
        **os.environ,
        "PATH": f"{venv}:{os.environ['PATH']}",
        "NDIF_REDIS_URL": f"redis://127.0.0.1:{recorded['REDIS_PORT']}",
        "NDIF_OBJECT_STORE_URL": f"http://127.0.0.1:{recorded['S3_PORT']}",
        "NDIF_RAY_ADDRESS": f"ray://127.0.0.1:{recorded['RAY_CLIENT_PORT']}",
        "NDIF_API_URL": f"http://127.0.0.1:{port}",
        "NDIF_API_PORT": str(port),
        "NDIF_POSTGRES_URL": f"postgresql://ndif@127.0.0.1:{free_port()}/keys",
        "ATTNVIZ_NDIF_CPU": "1",
    }
    proc = subprocess.Popen(
        [str(venv / "gunicorn"), "--config", "python:ndif.services.api.gunicorn_conf",
         "ndif.services.api.app:app"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240  # its Ray connection made
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/connected", timeout=5).status_code == 200:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the keyed NDIF API did not start")
            time.sleep(0.5)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        proc.wait(timeout=30)
        _wait_connected(server.host())


def _wait_connected(url: str, seconds: float = 180) -> None:
    """Until the API at ``url`` says its deployment is connected (``/connected``: 200)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/connected", timeout=5).status_code == 200:
                return
        time.sleep(0.5)
    raise RuntimeError(f"the NDIF deployment at {url} did not reconnect in {seconds:.0f} s")
