"""Serve a model folder through Hugging Face transformers (the optional extra
``attnviz[transformers]``) when attnviz's own engine has no conversion for its family, or when
asked to (``--backend transformers``).

transformers is imported only when a folder is loaded through the bridge: attnviz imports and
serves without it.
"""

from attnviz.pretrained.bridge.load import BRIDGE_INSTALL, load_bridged, transformers_missing
from attnviz.pretrained.bridge.model import BridgedModel

__all__ = ["BRIDGE_INSTALL", "BridgedModel", "load_bridged", "transformers_missing"]
