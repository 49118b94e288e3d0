"""A regular (non-editable) install, as the Docker image makes, carries the page with it."""

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest

# Each starts a server or a process of its own: the whole suite runs them, `make test-fast` not.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
        check=True,
        timeout=300,
    )
    (whl,) = out.glob("attnviz-*.whl")
    return whl


def test_wheel_carries_static_files_and_templates(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("static", "templates"):
        for f in (ROOT / folder).rglob("*"):
            if f.is_file():
                assert f"attnviz/{f.relative_to(ROOT).as_posix()}" in names


def test_wheel_carries_the_shipped_character_model(wheel):
    """The model folder in the package (attnviz/models/charlm-pydoc), byte for byte."""
    from attnviz.training.shipped import shipped_dir

    archive = zipfile.ZipFile(wheel)
    files = sorted(p for p in shipped_dir().iterdir() if p.is_file())
    assert [p.name for p in files] == ["config.json", "model.safetensors", "recipe.json",
                                       "text.txt.gz", "tokenizer.json"]  # fmt: skip
    for f in files:
        assert archive.read(f"attnviz/models/charlm-pydoc/{f.name}") == f.read_bytes()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_the_wheel_in_a_fresh_venv_outside_the_checkout_serves_the_page(wheel, tmp_path):
    """`pip install` of the built wheel into a new venv, then `attnviz serve` from a folder
    outside the checkout, over real HTTP: the page and every module it imports come from the
    installed package. (The heavy dependencies, torch and the model wheel, are read from this
    environment's site-packages through a .pth line, after the venv's own, so the installed
    attnviz is the one imported.)"""
    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site,) = venv.glob("lib/python*/site-packages")
    deps = Path(next(p for p in sys.path if p.endswith("site-packages")))
    (site / "_deps.pth").write_text(f"{deps}\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "install", "-q",
         "--no-deps", "--target", str(site), str(wheel)],
        check=True, timeout=300,
    )  # fmt: skip
    python = venv / "bin" / "python"
    # The venv's own view of the package: a PYTHONPATH of the caller's (a checkout first on the
    # path) would hide the installed wheel.
    bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run(
        [str(python), "-c", "import attnviz, attnviz.web as w; print(attnviz.__file__);"
         "print(w.find_dir('static'))"],
        cwd=tmp_path, env=bare, capture_output=True, text=True, check=True, timeout=120,
    ).stdout.split()  # fmt: skip
    package = site / "attnviz"
    assert where == [str(package / "__init__.py"), str(package / "static")]

    port = _free_port()
    env = {"PATH": "/usr/bin:/bin", "ATTNVIZ_DEVICE": "cpu", "HOME": str(tmp_path)}
    server = subprocess.Popen(
        [str(python), "-m", "attnviz", "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            if server.poll() is not None:
                raise AssertionError(server.stderr.read().decode()[-3000:] if server.stderr else "")
            try:
                if _get(f"{base}/healthz")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        status, page = _get(f"{base}/")
        assert status == 200
        html = page.decode()
        (importmap,) = re.findall(r'<script type="importmap"[^>]*>(.*?)</script>', html, re.S)
        imports = json.loads(importmap)["imports"]
        installed = {
            p.relative_to(package / "static").as_posix()
            for p in (package / "static" / "js").rglob("*.js")
        }
        assert {k.removeprefix("/static/") for k in imports} == installed
        for url in imports.values():
            status, body = _get(base + url)
            rel = url.split("?")[0].removeprefix("/static/")
            assert status == 200, url
            assert body == (package / "static" / rel).read_bytes()
        # The character model in the installed package is served beside the default model.
        status, body = _get(f"{base}/api/models")
        names = [m["name"] for m in json.loads(body)["models"]]
        assert status == 200 and names == ["all-MiniLM-L6-v2", "charlm-pydoc"]
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_dockerfile_is_a_non_root_cpu_image_with_a_healthcheck():
    """The text of the Dockerfile; the image itself is built and run by `make image-test`
    (deploy/image/smoke.sh, in CI)."""
    text = (ROOT / "Dockerfile").read_text()
    lines = [
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
    ]
    assert lines[:2] == ["ARG BASE=python:3.11-slim", "FROM ${BASE}"]
    assert 'ARG TORCH_SPEC="torch==2.13.0"' in lines
    (user,) = [line for line in lines if line.startswith("USER ")]
    uid = user.split()[1].split(":")[0]
    assert uid.isdigit() and int(uid) > 0  # numeric, so runAsNonRoot can check it
    assert any(line.startswith("HEALTHCHECK") for line in lines) and "/healthz" in text
    assert "EXPOSE 8000" in lines
    assert not any("ATTNVIZ_PORT" in line for line in lines)  # PORT from the host must win
    for line in lines:
        if line.startswith("COPY "):
            for src in line.split()[1:-1]:
                assert (ROOT / src).exists(), f"Dockerfile copies {src}, which is not in the repo"
    last_run = max(i for i, line in enumerate(lines) if line.startswith("RUN "))
    assert lines.index(user) > last_run  # everything installed as root, then dropped
