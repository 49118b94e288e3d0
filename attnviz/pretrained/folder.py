"""Load a model folder in the standard Hugging Face layout into the engine.

A folder holds ``config.json`` (``model_type`` picks the family), ``model.safetensors`` (or shards
listed in ``model.safetensors.index.json``) and ``tokenizer.json``. Weights are read with
``safetensors`` and converted by the family's pure function; no model library is involved.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from attnviz.engine import Transformer, TransformerConfig
from attnviz.pretrained.convert import FAMILIES, ConversionError
from attnviz.pretrained.tokenize import TextTokenizer

log = logging.getLogger(__name__)


class ModelFolderError(ValueError):
    """A folder that cannot be loaded; the message names the folder and what is wrong."""


@dataclass
class PretrainedModel:
    name: str
    family: str
    source: Path
    # Where the weights came from as clients are told: a package or a folder's name, no path.
    origin: str
    cfg: TransformerConfig
    model: Transformer = field(repr=False)
    tokenizer: TextTokenizer = field(repr=False)
    device: torch.device
    # The training run it comes from (attnviz's own runs), else None.
    run: str | None = None
    # Texts it reads, where the server's examples would not do (a character model's alphabet).
    examples: list[str] | None = None
    # Its end-of-text tokens (config.json's eos_token_id): generation stops after writing one.
    eos_ids: tuple[int, ...] = ()
    # Hooks are registered on the shared module during a capture: one forward at a time.
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


def _read_config(folder: Path) -> dict:
    path = folder / "config.json"
    if not path.is_file():
        raise ModelFolderError(f"{folder}: no config.json (a Hugging Face model folder has one)")
    try:
        hf = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelFolderError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(hf, dict):
        raise ModelFolderError(f"{path}: must hold a JSON object")
    return hf


def _read_tensors(folder: Path) -> dict[str, torch.Tensor]:
    single = folder / "model.safetensors"
    index = folder / "model.safetensors.index.json"
    try:
        if single.is_file():
            return load_file(single)
        if index.is_file():
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
            tensors: dict[str, torch.Tensor] = {}
            for shard in shards:
                tensors.update(load_file(folder / shard))
            return tensors
    except (SafetensorError, OSError, KeyError, ValueError) as exc:
        raise ModelFolderError(f"{folder}: the weights could not be read ({exc})") from exc
    if (folder / "pytorch_model.bin").is_file():
        raise ModelFolderError(
            f"{folder}: has pytorch_model.bin but no model.safetensors; only safetensors "
            "weights are loaded (convert with transformers: "
            "AutoModel.from_pretrained(folder).save_pretrained(folder))"
        )
    raise ModelFolderError(f"{folder}: no model.safetensors")


def load_folder(
    folder: Path, device: torch.device, name: str | None = None, origin: str | None = None
) -> PretrainedModel:
    """Read, convert and place on ``device`` the model in ``folder``; float32 computation.
    ``origin`` is what clients are told of where it came from (default: the folder's name)."""
    folder = Path(folder).expanduser().resolve()
    if not folder.is_dir():
        raise ModelFolderError(f"{folder}: not a folder")
    hf = _read_config(folder)
    model_type = hf.get("model_type")
    family = FAMILIES.get(model_type) if isinstance(model_type, str) else None
    if family is None:
        raise ModelFolderError(
            f"{folder}: config.json model_type {model_type!r} is not supported "
            f"(supported: {', '.join(sorted(FAMILIES))})"
        )
    if not (folder / "tokenizer.json").is_file():
        raise ModelFolderError(f"{folder}: no tokenizer.json (the tokenizers library needs one)")
    try:
        tokenizer = TextTokenizer.from_file(folder / "tokenizer.json")
    except Exception as exc:  # the tokenizers library raises plain Exceptions
        raise ModelFolderError(f"{folder}/tokenizer.json: could not be read ({exc})") from exc
    try:
        cfg = family.config(hf)
        state = family.weights(cfg, _read_tensors(folder))
    except ConversionError as exc:
        raise ModelFolderError(f"{folder}: {exc}") from exc
    if cfg.vocab_size is not None and tokenizer.vocab_size > cfg.vocab_size:
        raise ModelFolderError(
            f"{folder}: the tokenizer has {tokenizer.vocab_size} tokens but the model's "
            f"embedding table only {cfg.vocab_size} rows"
        )
    dtypes = sorted({str(t.dtype).removeprefix("torch.") for t in state.values()})
    model = Transformer(cfg)  # float32 parameters; float16/bfloat16 weights widen exactly
    model.load_state_dict(state, strict=True)
    model = model.to(device).eval()
    log.info(
        "loaded %s (%s, %d layers x %d heads, d_model %d, weights %s) from %s on %s",
        name or folder.name,
        family.name,
        cfg.n_layers,
        cfg.n_heads,
        cfg.d_model,
        "/".join(dtypes),
        folder,
        device,
    )
    return PretrainedModel(
        name=name or folder.name,
        family=family.name,
        source=folder,
        origin=origin or f"folder {folder.name}",
        cfg=cfg,
        model=model,
        tokenizer=tokenizer,
        device=device,
        eos_ids=_eos_ids(hf),
    )


def _eos_ids(hf: dict) -> tuple[int, ...]:
    """config.json's eos_token_id: one id, a list of them, or none."""
    eos = hf.get("eos_token_id")
    ids = eos if isinstance(eos, list) else [eos]
    return tuple(i for i in ids if isinstance(i, int) and not isinstance(i, bool) and i >= 0)
