"""A regular (non-editable) install, as the Docker image makes, carries the page with it."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

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


def test_installed_wheel_serves_the_page(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        timeout=300,
    )
    script = (
        "import attnviz, attnviz.web as w; from fastapi.testclient import TestClient;"
        "from attnviz.app import create_app;"
        "assert w.find_dir('static') == __import__('pathlib').Path(attnviz.__file__).parent / 'static';"
        "c = TestClient(create_app()); r = c.get('/'); assert r.status_code == 200, r.status_code;"
        "print(attnviz.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin", "ATTNVIZ_DEVICE": "cpu"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(str(target))


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
