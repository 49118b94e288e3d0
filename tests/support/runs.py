"""A training run over real HTTP, as the API tests start and follow one."""

from __future__ import annotations

import httpx


def start(client: httpx.Client, **body) -> str:
    """POST /api/train: the run's id (accepted, 202)."""
    r = client.post("/api/train", json=body)
    assert r.status_code == 202, r.text
    return r.json()["id"]


def finished(client: httpx.Client, run_id: str) -> dict:
    """The run's state once it has ended (its events followed to the end)."""
    with client.stream("GET", f"/api/train/{run_id}/events") as r:
        for line in r.iter_lines():
            if line == "event: end":
                break
    state = client.get(f"/api/train/{run_id}").json()
    assert state["state"] != "running"
    return state
