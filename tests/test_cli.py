"""The console script serves the app over real HTTP; a bad flag is a clear error."""

import os
import socket
import subprocess
import sys

import httpx
import pytest

from tests.support.servers import wait_healthy
from tests.support.waits import until

# Each starts a server or a process of its own: the whole suite runs them, `make test-fast` not.
pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(tiny_gpt2_dir):
    port = free_port()
    env = {**os.environ, "ATTNVIZ_DEVICE": "cpu"}
    env.pop("ATTNVIZ_MODELS", None)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "attnviz",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--model",
            str(tiny_gpt2_dir),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(base, proc, lambda: proc.stdout.read() if proc.poll() is not None else "")
    except AssertionError:
        proc.kill()
        raise
    yield base
    proc.terminate()
    proc.wait(timeout=10)


def test_serve_answers_over_http(served):
    assert httpx.get(f"{served}/healthz", timeout=60).json()["device"] == "cpu"
    page = httpx.get(f"{served}/", timeout=60)
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    first = httpx.get(f"{served}/api/presets", timeout=60).json()["presets"][0]
    body = {k: first[k] for k in ("tokens", "axes", "embeddings")}
    t = httpx.post(f"{served}/api/trace", json=body, timeout=60).json()
    assert [round(v, 2) for v in t["hidden_states"][1][1]] == [0.21, 0.42, 0.39]
    bad = httpx.post(f"{served}/api/trace", json={**body, "config": {"heads": 2}}, timeout=60)
    assert (
        bad.status_code == 422 and bad.json()["message"] == "config.heads: 2 does not divide d = 3"
    )


def test_console_script_and_version():
    out = subprocess.run(
        [sys.executable, "-m", "attnviz", "--version"], capture_output=True, text=True
    )
    assert out.returncode == 0 and out.stdout.startswith("attnviz ")


def test_unknown_device_is_refused_at_start():
    out = subprocess.run(
        [sys.executable, "-m", "attnviz", "serve", "--device", "tpu", "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "device: 'tpu' is not supported" in out.stderr or "unknown device" in out.stderr


def test_model_flag_adds_a_folder_and_text_traces_answer(served):
    models = httpx.get(f"{served}/api/models", timeout=60).json()
    assert [m["name"] for m in models["models"]] == [
        "all-MiniLM-L6-v2",
        "charlm-pydoc",
        "tiny-gpt2",
    ]
    t = httpx.post(
        f"{served}/api/trace", json={"model": "tiny-gpt2", "text": "a bank"}, timeout=60
    ).json()
    assert t["mode"] == "text" and "".join(t["tokens"]) == "a bank"
    t = httpx.post(
        f"{served}/api/trace",
        json={"model": "all-MiniLM-L6-v2", "text": "I sat on the river bank"},
        timeout=60,
    ).json()
    assert t["tokens"] == ["[CLS]", "i", "sat", "on", "the", "river", "bank", "[SEP]"]


def test_a_folder_that_cannot_be_loaded_is_refused_at_start(tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "t5"}')
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "attnviz",
            "serve",
            "--port",
            str(free_port()),
            "--model",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ATTNVIZ_DEVICE": "cpu"},
    )
    assert out.returncode == 2
    assert f"{tmp_path}: config.json model_type 't5' is not supported" in out.stderr


def healthy(port: str) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).is_success
    except httpx.TransportError:
        return False


def serve_with(env: dict[str, str]) -> tuple[int | None, str, bool]:
    """``attnviz serve`` with ``env`` (no flags): (exit code or None while it runs, what it
    printed, whether /healthz answered on the port the environment names)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("ATTNVIZ_") and k != "PORT"}
    # The session's data directory (tests/conftest.py): never the real user data folder.
    full.update({"ATTNVIZ_DEVICE": "cpu", "ATTNVIZ_BUILTIN_MODEL": "false",
                 "ATTNVIZ_DATA_DIR": os.environ["ATTNVIZ_DATA_DIR"], **env})  # fmt: skip
    port = env.get("ATTNVIZ_PORT", env.get("PORT", "8000"))
    port = port if port.isdigit() else "8000"
    proc = subprocess.Popen([sys.executable, "-m", "attnviz", "serve"], env=full, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    try:  # until it answers or exits
        answered = until(lambda: healthy(port), lambda up: up or proc.poll() is not None,
                         "attnviz serve's start or exit", every=0.2)  # fmt: skip
    finally:
        if proc.poll() is None:
            proc.terminate()
        out, _ = proc.communicate(timeout=20)
    return proc.returncode if not answered else None, out, answered


def test_the_port_comes_from_port_when_attnviz_port_is_unset():
    port = str(free_port())
    code, out, answered = serve_with({"PORT": port})
    assert answered, out


def test_attnviz_port_wins_over_port():
    port = str(free_port())
    code, out, answered = serve_with({"PORT": "1", "ATTNVIZ_PORT": port})
    assert answered, out


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"ATTNVIZ_PORT": "tcp://10.0.0.3:8000"},
            "ATTNVIZ_PORT: is 'tcp://10.0.0.3:8000': Kubernetes sets that for a Service named "
            "attnviz (a service link); set enableServiceLinks: false",
        ),
        ({"ATTNVIZ_WORKERS": "0"}, "ATTNVIZ_WORKERS: Input should be greater than or equal to 1"),
        ({"ATTNVIZ_MAX_WAIT_S": "soon"}, "ATTNVIZ_MAX_WAIT_S: Input should be a valid number"),
    ],
)
def test_a_bad_setting_is_refused_at_start_by_name(env, message):
    code, out, answered = serve_with(env)
    assert not answered and code == 2
    assert message in out and "Traceback" not in out


def test_build_model_is_a_command_and_refuses_a_file_for_its_folder(tmp_path):
    """``attnviz build-model FOLDER`` rebuilds the shipped model (tests/training/test_shipped.py
    checks its recipe); a FOLDER that is a file is refused before any training."""
    listed = subprocess.run([sys.executable, "-m", "attnviz", "--help"], capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    assert "build-model" in listed.stdout
    file = tmp_path / "not-a-folder"
    file.write_text("x")
    out = subprocess.run([sys.executable, "-m", "attnviz", "build-model", str(file)],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert out.returncode == 2
    assert f"FOLDER: {file} is a file, not a folder" in out.stderr and "Traceback" not in out.stderr
