"""A vision-language model folder through transformers: which folders are one, their processor
(read from the folder, never the network), and a text with images made into what the model
reads (the ids with each image's tokens, the pixels the processor made, where each image's
tokens sit).

Nothing here names a family: a folder is a vision-language model when its config has a vision
tower's config and transformers maps its type to ``AutoModelForImageTextToText``; what the
processor expects (its image placeholder, its nesting of images per text) is read from the
processor itself.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from attnviz.errors import TraceError
from attnviz.pretrained.bridge.record import mark_vision
from attnviz.pretrained.bridge.vision import ImageBlock, Resize, image_blocks, image_token_ids
from attnviz.pretrained.tokenize import TextTokenizer, Tokens

log = logging.getLogger(__name__)

# What a person may write where an image goes, whatever the model's own placeholder is.
PLACEHOLDER = "<image>"


def reads_images(config: Any) -> bool:
    """Whether ``config`` (a transformers config) is a vision-language model's: a vision tower's
    config beside the text model's, a type transformers loads as image-text-to-text."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    return (
        getattr(config, "vision_config", None) is not None
        and config.model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
    )


# Where a folder names its processor's class, in the order transformers' AutoProcessor reads
# them: transformers 5's processor_config.json, the hub's preprocessor_config.json (the image
# processor's settings, written before processor_config.json existed), the tokenizer's config.
_PROCESSOR_FILES = ("processor_config.json", "preprocessor_config.json", "tokenizer_config.json")


def read_processor(folder: Path) -> Any:
    """``load_processor``, or a ModelFolderError saying why the folder's processor could not
    be loaded."""
    from attnviz.pretrained.folder import ModelFolderError

    try:
        return load_processor(folder)
    except (ValueError, KeyError, OSError, TypeError, ImportError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelFolderError(
            f"{folder}: a vision-language model, but its processor (the image processor and "
            f"tokenizer, read from the folder) could not be loaded ({first})"
        ) from exc


def load_processor(folder: Path) -> Any:
    """The folder's own processor (its tokenizer and image processor), offline, in either layout:
    transformers 5's (processor_config.json with the image processor's settings in it) or the
    hub's (preprocessor_config.json naming the processor, processor_config.json only for the
    processor's own settings, if it has any). Without torchvision transformers falls back to an
    image processor written with Pillow (the slow one), which gives the same patches, and has no
    video processor at all: a processor whose class takes one is made without it
    (``_images_only``). The log says so."""
    from transformers import AutoProcessor
    from transformers.utils import is_torchvision_available

    vision = is_torchvision_available()
    cls = None if vision else _processor_class(folder)
    if cls is not None and any("video" in a for a in cls.get_attributes()):
        processor = _images_only(folder, cls)
    else:
        processor = AutoProcessor.from_pretrained(
            folder, local_files_only=True, trust_remote_code=False
        )
    if getattr(processor, "image_processor", None) is None:
        raise ValueError("its processor has no image processor")
    if not vision:
        log.info(
            "%s: torchvision is not installed, so images are prepared by %s (Pillow's)",
            folder.name,
            type(processor.image_processor).__name__,
        )
    return processor


def _json_of(path: Path) -> dict:
    value = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(value, dict):
        raise ValueError(f"{path.name} must hold a JSON object")
    return value


def _processor_class(folder: Path) -> Any:
    """The processor class the folder names (``_PROCESSOR_FILES``' first ``processor_class``),
    else transformers' processor of its config's model_type; None when transformers has none of
    that name (AutoProcessor then says why)."""
    import transformers
    from transformers import ProcessorMixin
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES

    name = None
    for file in _PROCESSOR_FILES:
        if name is None and (folder / file).is_file():
            name = _json_of(folder / file).get("processor_class")
    if name is None and (folder / "config.json").is_file():
        name = PROCESSOR_MAPPING_NAMES.get(str(_json_of(folder / "config.json").get("model_type")))
    cls = getattr(transformers, name, None) if isinstance(name, str) else None
    return cls if isinstance(cls, type) and issubclass(cls, ProcessorMixin) else None


def _images_only(folder: Path, cls: Any) -> Any:
    """``cls`` (the folder's processor class) made with the folder's image processor, tokenizer
    and the processor's own settings (its processor_config.json's, its chat template), and no
    video processor (transformers' video processors need torchvision): it reads images and
    text. Either layout: the image processor's settings nested in processor_config.json or in
    preprocessor_config.json, as ``AutoImageProcessor`` reads them."""
    from transformers import AutoImageProcessor, AutoTokenizer

    proper = cls.check_argument_for_proper_class

    def check(self: Any, argument: str, value: Any) -> Any:
        return None if value is None else proper(self, argument, value)

    images_only: Any = type(cls.__name__, (cls,), {"check_argument_for_proper_class": check})
    own, _ = cls.get_processor_dict(folder, local_files_only=True)
    parts = {
        "image_processor": AutoImageProcessor.from_pretrained(folder, local_files_only=True),
        "tokenizer": AutoTokenizer.from_pretrained(folder, local_files_only=True),
    }
    rest = {a: None for a in cls.get_attributes() if a not in parts}
    log.info(
        "%s: no video processor without torchvision; %s reads images only",
        folder.name,
        cls.__name__,
    )
    return images_only.from_dict({**own, **parts, **rest})


def mark_towers(hf: Any) -> None:
    """Mark every module of ``hf`` outside its language model (the vision tower, the projector)
    so that the attention function records their calls apart (``record.VISION_MARK``)."""
    text = {id(m) for m in hf.get_decoder().modules()}
    mark_vision(m for m in hf.modules() if id(m) not in text)


@dataclass
class Encoded:
    """A text with its images, as the model reads them: ``tokens`` of the whole sequence (an
    image's tokens special, with no offset or word), ``inputs`` what the forward takes besides
    ``input_ids`` (the pixels, the processor's grids and masks), ``image_token`` the id the
    image features replace."""

    tokens: Tokens
    inputs: dict[str, torch.Tensor] = field(default_factory=dict)
    image_token: int | None = None
    blocks: list[ImageBlock] = field(default_factory=list)  # where each image's tokens are

    @property
    def ids(self) -> list[int]:
        return self.tokens.ids


@dataclass(frozen=True)
class Placed:
    """A text with the model's placeholder where each image goes, and how its characters map
    back to the text as written: ``pieces`` (start in ``text``, start in the original, length),
    the original's spans of text between placeholders, and ``holes`` the placeholders' spans
    (here, in the original: (0, 0) where the images went before the text)."""

    text: str
    pieces: tuple[tuple[int, int, int], ...]
    holes: tuple[tuple[int, int, int, int], ...]

    def original(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original that [start, end) of ``text`` is, (0, 0) for none."""
        for at, orig, n in self.pieces:
            if at <= start < at + n:
                return orig + start - at, orig + min(end, at + n) - at
        for a, b, oa, ob in self.holes:
            if a <= start < b:
                return oa, ob
        return 0, 0


def placed(text: str, placeholder: str, n_images: int, wrapped: str | None = None) -> Placed:
    """``text`` with the model's own ``placeholder`` where each image goes: a ``<image>`` the
    person wrote, or the model's own placeholder, stands for the next image; with none, the
    images go before the text. What attnviz puts in (for a ``<image>``, or before the text) is
    ``wrapped``: the placeholder between the tokens the model expects around an image
    (``vision_start`` / ``vision_end``), when it names any."""
    put = wrapped or placeholder
    marks = sorted({PLACEHOLDER, placeholder}, key=len, reverse=True)
    found = list(re.finditer("|".join(map(re.escape, marks)), text))
    if not found:
        head = put * n_images
        before = tuple((k * len(put), (k + 1) * len(put), 0, 0) for k in range(n_images))
        return Placed(head + text, ((len(head), 0, len(text)),), before)
    if len(found) != n_images:
        raise TraceError(
            f"images: the text has {len(found)} image placeholders ({PLACEHOLDER}) for "
            f"{n_images} image{'s' if n_images != 1 else ''}; give one per image, or none "
            "(the images then go before the text)"
        )
    out, last = "", 0
    pieces: list[tuple[int, int, int]] = []
    holes: list[tuple[int, int, int, int]] = []
    for match in found:
        pieces.append((len(out), last, match.start() - last))
        out += text[last : match.start()]
        mark = put if match.group() == PLACEHOLDER else placeholder
        holes.append((len(out), len(out) + len(mark), match.start(), match.end()))
        out += mark
        last = match.end()
    pieces.append((len(out), last, len(text) - last))
    out += text[last:]
    return Placed(out, tuple(p for p in pieces if p[2] > 0), tuple(holes))


def wrapped_placeholder(processor: Any, tokenizer: TextTokenizer, config: Any) -> str | None:
    """The image placeholder between the tokens the model's config names around an image
    (``vision_start_token_id``, ``vision_end_token_id``: Qwen's), or None when it names none:
    without them the model's own positions (its M-RoPE index) would run two images together."""
    ids = [getattr(config, n, None) for n in ("vision_start_token_id", "vision_end_token_id")]
    if not (isinstance(ids[0], int) and isinstance(ids[1], int)):
        return None
    start, end = tokenizer.tok.id_to_token(ids[0]), tokenizer.tok.id_to_token(ids[1])
    if start is None or end is None:
        return None
    return start + processor.image_token + end


def aligned(ids: Sequence[int], own: Tokens, labels_of_ids: Sequence[str]) -> Tokens:
    """The processor's ``ids`` labelled from ``own``, the folder tokenizer's reading of the same
    text (placeholders once each): each id that is the next of ``own`` takes its label, offsets
    and word; the rest (an image's tokens, what the processor put around them) are special,
    labelled as ``labels_of_ids`` says."""
    labels, offsets, special, words = [], [], [], []
    at = 0
    for i, label in zip(ids, labels_of_ids, strict=True):
        if at < len(own.ids) and own.ids[at] == i:
            labels.append(own.labels[at])
            offsets.append(own.offsets[at])
            special.append(own.special[at])
            words.append(own.words[at])
            at += 1
        else:
            labels.append(label)
            offsets.append((0, 0))
            special.append(True)
            words.append(None)
    return Tokens(list(ids), labels, offsets, special, words)


def encode(
    processor: Any, tokenizer: TextTokenizer, config: Any, text: str, images: Sequence[Any]
) -> tuple[Encoded, str]:
    """``text`` and its ``images`` (PIL images, in order) through the model's processor: the
    sequence the model reads (with each image's block: ``vision.image_blocks``, from the
    model's ``config``), and the text as placed (the model's placeholders in it)."""
    where = placed(
        text, processor.image_token, len(images), wrapped_placeholder(processor, tokenizer, config)
    )
    try:
        batch = processor(text=[where.text], images=[list(images)], return_tensors="pt")
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TraceError(f"images: the model's processor could not read them ({first})") from exc
    ids = [int(i) for i in batch["input_ids"][0]]
    tokens = aligned(ids, tokenizer(where.text), tokenizer.label_ids(ids)[0])
    # Offsets into the text as written (the person's), not the placed one.
    spans = [where.original(a, b) if b > a else (a, b) for a, b in tokens.offsets]
    tokens = Tokens(tokens.ids, tokens.labels, spans, tokens.special, tokens.words)
    inputs = {
        k: v
        for k, v in batch.items()
        # labels: what a processor makes for training (PaliGemma's), never a forward's input.
        if k not in ("input_ids", "attention_mask", "labels") and isinstance(v, torch.Tensor)
    }
    sizes = [(im.height, im.width) for im in images]
    try:
        blocks = image_blocks(ids, batch, config, processor.image_processor, sizes, processor)
    except ValueError as exc:
        raise TraceError(f"images: their tokens could not be placed on a grid ({exc})") from exc
    image = image_token_ids(config, processor).image
    return Encoded(tokens, inputs, image, blocks), where.text


def block_json(block: ImageBlock) -> dict[str, Any]:
    """An image's block as the trace's meta says it: its tokens' span, its grid (the whole
    picture's: the only tile, or the global view), each tile's grid and its box in the
    original picture's pixels (top, left, bottom, right), and what the processor did to the
    picture (``resize``, and in words ``resized``)."""
    out: dict[str, Any] = {
        "image": block.image,
        "start": block.start,
        "stop": block.stop,
        "rows": block.rows,
        "cols": block.cols,
        "height": block.size[0],
        "width": block.size[1],
        "tiles": [
            {
                "start": t.start,
                "rows": t.rows,
                "cols": t.cols,
                "box": [round(v, 3) for v in t.box],
                "merge": t.merge,
                "label": t.label,
            }
            for t in block.tiles
        ],
    }
    if block.resize is not None:
        out["resize"] = resize_json(block.resize, block.size)
        out["resized"] = resized_text(block.resize, block.size)
    return out


def _wh(size: tuple[int, int]) -> dict[str, int]:
    return {"width": size[1], "height": size[0]}


def resize_json(r: Resize, size: tuple[int, int]) -> dict[str, Any]:
    """``r`` as meta.images[i].resize says it: sizes as {width, height}, the crop's box in the
    resized picture's pixels (or null)."""
    sides = ("top", "left", "bottom", "right")
    crop = None if r.crop is None else dict(zip(sides, r.crop, strict=True))
    return {"from": _wh(size), "to": _wh(r.resized), "crop": crop, "view": _wh(r.view),
            "tiles": r.tiles, "global": r.global_view, "patches": r.patches,
            "tokens": r.tokens}  # fmt: skip


def resized_text(r: Resize, size: tuple[int, int]) -> str:
    """``r`` in one line: "resized from 1024 x 768 to 512 x 384 (no crop); 4 tiles of 512 x
    512 and a global view, 64 tokens each (256 patches merged)"."""
    (h, w), (rh, rw), (vh, vw) = size, r.resized, r.view
    said = (
        f"resized from {w} x {h} to {rw} x {rh}"
        if (rh, rw) != (h, w)
        else f"not resized ({w} x {h})"
    )
    if r.crop is None:
        said += " (no crop)"
    else:
        top, left, bottom, right = r.crop
        said += f", cropped to its centre {right - left} x {bottom - top}"
    merged = r.patches != r.tokens
    if r.tiles:
        said += f"; {r.tiles} tiles of {vw} x {vh}"
        said += " and a global view" if r.global_view else ""
        said += f", {r.tokens} tokens each" + (f" ({r.patches} patches merged)" if merged else "")
    else:
        said += f"; {r.patches} patches" + (
            f" merged to {r.tokens} tokens" if merged else f", {r.tokens} tokens (one a patch)"
        )
        if (vh, vw) != (rh, rw) and r.crop is None:
            said += f" of a {vw} x {vh} view"
    return said


def to_device(
    inputs: Mapping[str, torch.Tensor], device: torch.device, dtype: torch.dtype
) -> dict[str, torch.Tensor]:
    """The processor's tensors on the model's device, its floating ones (the pixels) in the
    model's dtype."""
    return {
        k: v.to(device=device, dtype=dtype) if v.is_floating_point() else v.to(device)
        for k, v in inputs.items()
    }
