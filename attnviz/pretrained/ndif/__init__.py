"""Models on an NDIF deployment (``--backend ndif``, or a model named ``ndif:<repo id>``): the
trace sent (``block``), the connection (``client``), the model (``model``) and its trace's
arrays fetched as the parts ask (``tensors``). nnsight is the optional extra attnviz[ndif]."""

from __future__ import annotations

from attnviz.pretrained.folder import ModelFolderError
from attnviz.pretrained.ndif.client import Deployment
from attnviz.pretrained.ndif.model import PREFIX, NdifModel, load_ndif
from attnviz.settings import PROBE_MB

# NDIF_HOST's value that runs the trace with nnsight in this process instead (development and
# the tests: the very trace, executed locally).
LOCAL = "local"


def open_ndif(
    key: str, host: str | None, api_key: str = "", probe_bytes: int = PROBE_MB * 2**20
) -> NdifModel:
    """The model ``key`` (``ndif:`` prefix allowed) on the deployment at ``host``; its masks
    read at start on a probe of at most ``probe_bytes`` (``load_ndif``)."""
    key = key.removeprefix(PREFIX)
    if not host:
        raise ModelFolderError(
            f"{key}: an NDIF model needs its deployment: set NDIF_HOST (an http(s) URL, e.g. "
            "https://api.ndif.us) and NDIF_API_KEY"
        )
    if host != LOCAL and not host.startswith(("http://", "https://")):
        raise ModelFolderError(f"NDIF_HOST: {host!r} is not an http(s) URL")
    where = None if host == LOCAL else Deployment(host.rstrip("/"), api_key)
    return load_ndif(key, where, probe_bytes=probe_bytes)


__all__ = ["LOCAL", "PREFIX", "Deployment", "NdifModel", "open_ndif"]
