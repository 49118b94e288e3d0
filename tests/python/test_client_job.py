"""``attnviz.Client`` follows a long text's job to its answer, as the page does: the trace it
gives is the one the server computes at once for a request that is no job."""

from __future__ import annotations

import numpy as np
import pytest

import attnviz
from attnviz.app import create_app
from attnviz.settings import Settings
from tests.api.test_trace_jobs import small_smollm, text_of
from tests.support.servers import served


@pytest.mark.slow
def test_the_client_follows_a_job_to_the_same_trace(tmp_path, monkeypatch):
    folder = small_smollm(tmp_path / "smol", layers=4)
    text = text_of(folder, 300)
    asked: list[str] = []
    opened = attnviz.Client._answer

    def answer(self, request, limit=None):
        status, body = opened(self, request, limit)
        asked.append(f"{request.get_method()} {request.full_url.split('?')[0]} {status}")
        return status, body

    monkeypatch.setattr(attnviz.Client, "_answer", answer)
    traces = []
    for after_s in (0.0, 3600.0):  # every text a job; none
        s = Settings(device="cpu", builtin_model=False, models=str(folder),
                     trace_job_after_s=after_s)  # fmt: skip
        with served(create_app(s)) as url:
            client = attnviz.Client(url)
            model = client.models()[0]["name"]
            asked.clear()
            traces.append(client.trace(model=model, text=text))
            jobs = [a for a in asked if "/api/trace/jobs/" in a]
            assert asked[0].endswith(" 202" if after_s == 0 else " 200"), asked
            assert (len(jobs) >= 2) == (after_s == 0), asked  # its state, then its result
            assert all(a.endswith(" 200") for a in jobs), asked
    job, direct = traces
    assert job.tokens == direct.tokens and len(job.tokens) > 200
    assert job["attentions"].shape == direct["attentions"].shape
    np.testing.assert_array_equal(job["attentions"], direct["attentions"])
