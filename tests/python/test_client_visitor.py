"""``attnviz.Client`` as a visitor: one client keeps its cookie across calls (a run it opened by
its id is then in its list), and a token (a run's starter's, or the operator's) makes it that
caller."""

from __future__ import annotations

import httpx

import attnviz
from attnviz.app import create_app
from attnviz.settings import Settings
from tests.support.servers import served

TINY = {"layers": 2, "heads": 2, "d_model": 16}


def test_a_client_is_one_visitor_and_its_token_the_starter_or_the_operator(tmp_path):
    app = create_app(Settings(device="cpu", builtin_model=False, data_dir=tmp_path,
                              admin_token="operator-token"))  # fmt: skip
    with served(app) as url, httpx.Client(base_url=url, timeout=60) as a:
        r = a.post("/api/train", json={"arch": TINY, "opt": {"steps": 3}, "checkpoints": 1})
        run, token = r.json()["id"], r.json()["token"]
        other = attnviz.Client(url)
        assert other.runs() == []
        assert other.run(run)["can_cancel"] is False
        # The same client, its cookie kept: the run it opened is listed, not its to cancel.
        assert [(x["id"], x["yours"], x["can_cancel"]) for x in other.runs()] == [
            (run, False, False)
        ]
        assert attnviz.Client(url).runs() == []  # another client is another visitor
        starter = attnviz.Client(url, token=token)
        assert [(x["id"], x["yours"]) for x in starter.runs()] == [(run, True)]
        operator = attnviz.Client(url, token="operator-token")
        assert [(x["id"], x["can_cancel"]) for x in operator.runs()] == [(run, True)]
