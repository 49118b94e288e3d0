"""Without nnsight (the extra attnviz[ndif]): a trace asks for NDIF and is answered a 503 in
words, which a learner or an API client reads, never the developer's command that installs it
(that goes to the server's log); a server started with an NDIF model stops at start with a
ModelFolderError that tells its host the command. Runs whether nnsight is installed or not: the
import is made to fail."""

from __future__ import annotations

import logging
import sys

import pytest

from attnviz.errors import RemoteError
from attnviz.pretrained.folder import ModelFolderError
from attnviz.pretrained.ndif import open_ndif
from attnviz.pretrained.ndif.client import NDIF_INSTALL, nnsight_module


@pytest.fixture
def no_nnsight(monkeypatch):
    """``import nnsight`` raises ImportError, as where it is not installed."""
    monkeypatch.setitem(sys.modules, "nnsight", None)


def test_a_trace_without_nnsight_is_a_503_in_words_and_the_command_goes_to_the_log(
    no_nnsight, caplog
):
    with caplog.at_level(logging.WARNING), pytest.raises(RemoteError) as err:
        nnsight_module()
    said = str(err.value)
    assert err.value.status == 503
    assert said.startswith("backend: this server cannot reach NDIF")
    assert "its host can install it" in said and "Models page" in said
    assert "pip" not in said and "attnviz[ndif]" not in said and "nnsight" not in said
    assert NDIF_INSTALL in caplog.text  # for the host, in the server's log


def test_a_server_started_with_an_ndif_model_tells_its_host_the_command(no_nnsight):
    with pytest.raises(ModelFolderError) as err:
        open_ndif("ndif:some/model", "local")
    assert str(err.value) == (
        "some/model: an NDIF model needs nnsight, which is not installed: "
        "pip install 'attnviz[ndif]'"
    )
