"""Load a vision-language folder natively: its language model by the family's conversion
(``folder.load_folder``, which reads the text model of a folder whose model_type the family
table names), its vision tower and projector through transformers (``tower.load_vision``), and
its processor (``bridge.multimodal.read_processor``), all offline."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import torch

from attnviz.pretrained.bridge.multimodal import read_processor, reads_images
from attnviz.pretrained.folder import ModelFolderError, PretrainedModel, load_folder
from attnviz.pretrained.native_vlm.model import NativeVlm
from attnviz.pretrained.native_vlm.tower import load_vision

log = logging.getLogger(__name__)


def load_native_vlm(
    folder: Path,
    device: torch.device,
    name: str | None = None,
    origin: str | None = None,
    dtype: str = "auto",
) -> NativeVlm:
    """The vision-language model in ``folder``: the language model in the engine (in
    ``dtype``), the tower and projector through transformers in the same dtype. A
    ModelFolderError naming the folder when any part cannot be loaded."""
    import transformers

    text = load_folder(folder, device, name, origin, dtype)
    source = text.source
    try:
        config = transformers.AutoConfig.from_pretrained(
            source, local_files_only=True, trust_remote_code=False
        )
    except (ValueError, KeyError, OSError) as exc:
        raise ModelFolderError(f"{source}: transformers cannot read its config ({exc})") from exc
    if not reads_images(config):
        raise ModelFolderError(
            f"{source}: not a vision-language model transformers knows (its config has no "
            "vision tower's, or its type is not image-text-to-text)"
        )
    processor = read_processor(source)
    vision = load_vision(source, config, device, text.model.param_dtype)
    log.info(
        "%s: its vision tower (%s) runs through transformers %s, its language model natively",
        text.name,
        ", ".join(vision.parts),
        transformers.__version__,
    )
    own = {f.name: getattr(text, f.name) for f in dataclasses.fields(PretrainedModel)}
    return NativeVlm(**own, vision=vision, processor=processor)
