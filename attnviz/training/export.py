"""A trained run as a Hugging Face-style model folder, which ``load_folder`` (and so ``attnviz
serve --model FOLDER``) reads back exactly:

- ``config.json``: ``model_type`` "attnviz", every ``TransformerConfig`` field by its own name,
  the task's name and vocabulary (``vocab``: the characters in id order), the attnviz version
  and, under ``training``, what the run was (steps, state, last held-out loss); read by
  ``attnviz.pretrained.native``.
- ``model.safetensors``: the engine's state dict as it is (its names, float32).
- ``tokenizer.json``: a character tokenizer (``char_tokenizer``) whose ids are the vocabulary's.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from safetensors.torch import save_file
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

from attnviz import __version__
from attnviz.training.tasks import CharVocab, Task
from attnviz.training.trainer import Run

MODEL_TYPE = "attnviz"
# The token a character outside the vocabulary would become. It is deliberately NOT in the
# vocabulary: such a character makes the tokenizer raise ("Unk token `[UNK]` not found in the
# vocabulary") instead of turning into another character or being dropped, and the model's
# table needs no row that was never trained. ``native.unknown_characters`` names them.
UNK = "[UNK]"
# Words for the page's "merge words" view: a run of letters, digits and underscores is a word;
# every other character (a space, a newline, a punctuation mark) is a word of its own.
WORD_PATTERN = r"\s|[^\w\s]"


def char_tokenizer(vocab: CharVocab) -> Tokenizer:
    """One token per character, with the vocabulary's ids (``vocab.encode``); a character
    outside it is an error, never another token. The text is first cut into words
    (``WORD_PATTERN``), then each word into its characters (a BPE model without merges), so the
    encoding's word ids group the letters of a word. Decoding joins the characters as they are."""
    chars = vocab.chars
    if len(set(chars)) != len(chars) or UNK in chars:
        raise ValueError(f"vocab: characters must be distinct (got {chars!r})")
    tok = Tokenizer(models.BPE({c: i for i, c in enumerate(chars)}, [], unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(WORD_PATTERN), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return tok


def _config(run: Run, task: Task) -> dict:
    last = run.checkpoints[-1] if run.checkpoints else None
    return {
        "model_type": MODEL_TYPE,
        "attnviz_version": __version__,
        "task": task.name,
        "vocab": task.vocab.chars,
        **dataclasses.asdict(run.cfg),
        "training": {
            "steps": run.history[-1].step if run.history else 0,
            "state": run.state,
            "heldout_loss": None if last is None else last.heldout,
            "heldout_step": None if last is None else last.step,
        },
    }


def _write(path: Path, write) -> None:
    """Write through a temporary file in the same folder, flushed to disk, then rename: never
    half a file, even after a crash."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def save_run(run: Run, task: Task, folder: Path, name: str | None = None) -> Path:
    """Write the run's model into ``folder`` (into ``folder / name`` when a name is given; the
    folder's name is the model's name once loaded), creating it, replacing the three files if
    they are there. Returns the folder written."""
    if name is not None:
        if not name or name in (".", "..") or "/" in name or "\\" in name:
            raise ValueError(f"name: must be a plain folder name (got {name!r})")
        folder = Path(folder) / name
    folder = Path(folder)
    cfg = run.cfg
    if cfg.vocab_size != task.vocab.size or not cfg.unembed:
        raise ValueError(
            f"run: a model over the task's {task.vocab.size} characters with an unembedding is "
            f"needed (vocab_size {cfg.vocab_size}, unembed {cfg.unembed})"
        )
    tokenizer = char_tokenizer(task.vocab)
    config = json.dumps(_config(run, task), indent=2, ensure_ascii=False) + "\n"
    state = {k: v.detach().cpu().contiguous() for k, v in run.model.state_dict().items()}
    folder.mkdir(parents=True, exist_ok=True)
    _write(folder / "model.safetensors", lambda p: save_file(state, p, metadata={"format": "pt"}))
    _write(folder / "tokenizer.json", lambda p: tokenizer.save(str(p)))
    _write(folder / "config.json", lambda p: p.write_text(config, encoding="utf-8"))
    return folder
