"""Fixtures the API tests share."""

from __future__ import annotations

import pytest


@pytest.fixture
def forwards(monkeypatch) -> list[str]:
    """The texts the server ran a forward on, in order (every trace it computed)."""
    from attnviz.services import trace_service

    ran: list[str] = []
    real = trace_service.run_text_trace

    def counted(req, *args, **kwargs):
        ran.append(req.text)
        return real(req, *args, **kwargs)

    monkeypatch.setattr(trace_service, "run_text_trace", counted)
    return ran
