"""What a model predicts from a trace: the top-k next tokens at every position (``top_k``) and
the logit lens (``lens``): every hidden state through the final norm and the unembedding, its
top token and probability, and the rank and probability of the token that comes next.

The unembedding of every layer at every position is (L+1) x n x vocab numbers (GPT-2 at 512
tokens: 1.3 GB), never held: rows are unembedded a chunk at a time (``CHUNK_BYTES`` of logits)
on the compute thread, and only the top tokens, the target's logit rank and the probabilities
are kept. Each position is computed once per trace, when a part first asks for it (the page
asks for the positions it draws), with ``LIMITS.max_top_k`` tokens; a part takes its ``k``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch

from attnviz.engine import Transformer
from attnviz.engine.model import CHUNK_BYTES
from attnviz.engine.reduce import read_rows
from attnviz.limits import LIMITS

Rows = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Readout:
    """How one trace's hidden states become scores over the vocabulary.

    Hidden state L (the last) is already after the final norm (the trace's convention, and
    transformers'); hidden states 0 .. L-1 go through ``norm`` first when the model has one.
    ``unembed`` maps (rows, C) to (rows, V) logits, soft-capped as the model caps them."""

    norm: Rows | None
    unembed: Rows
    vocab: int  # V
    ids: list[int]  # the trace's tokens: position i's target is ids[i + 1] (an MLM's: ids[i])
    label: Callable[[list[int]], list[str]]  # token ids -> their labels, as the page shows tokens
    # "next": a causal model predicts the next token; "masked": an encoder's masked-language-
    # model head predicts the token at each position (the text's own, unknown at a mask).
    predicts: Literal["next", "masked"] = "next"
    mask_ids: frozenset[int] = frozenset()  # the tokenizer's mask tokens ("masked")


def native_readout(model: Transformer, ids: list[int], label: Callable) -> Readout | None:
    """The engine's own final norm and unembedding, for a causal model that has one."""
    if not (model.cfg.causal and model.cfg.unembed):
        return None
    assert model.cfg.vocab_size is not None
    return Readout(model.ln_final, model.logits, model.cfg.vocab_size, ids, label)


def mlm_readout(
    head: Callable[[torch.Tensor], torch.Tensor],
    vocab: int,
    ids: list[int],
    label: Callable,
    mask_ids: frozenset[int],
) -> Readout:
    """An encoder's masked-language-model head (pretrained/mlm.py) on every hidden state, as
    it is: a post-norm encoder's states are already normed, and the head has its own norm."""
    return Readout(None, head, vocab, ids, label, "masked", mask_ids)


_FINAL_NORMS = ("norm", "ln_f", "final_layer_norm", "final_layernorm", "final_norm")

# The attribute the transformers bridge's probe sets on a model it loaded (``bridge.head``): its
# HeadPath, found by running it, or why none could be read (a str).
HEAD_MARK = "attnviz_head"


@dataclass(frozen=True)
class HeadPath:
    """How a transformers model makes its logits of its last block's output, as a probe of it
    found by running it: ``final`` the modules it applies first, in order (its final norm,
    wherever the model keeps it; none for a model without one), then its output embedding,
    soft-capped (``softcap``) and multiplied by ``scale`` (a logit scale, 1 without one)."""

    final: tuple[Any, ...]
    softcap: float | None = None
    scale: float = 1.0

    def norm(self, x: torch.Tensor) -> torch.Tensor:
        for module in self.final:
            x = module(x)
        return x


def final_norm(hf: Any) -> Any:
    """A transformers model's final norm, found by its usual names on the base model; None."""
    base = getattr(hf, "base_model", hf)
    return next((getattr(base, n) for n in _FINAL_NORMS if getattr(base, n, None) is not None),
                None)  # fmt: skip


def bridged_readout(hf: Any, causal: bool, ids: list[int], label: Callable) -> Readout | None:
    """transformers' final norm and output embedding (``lm_head``, with its bias when it has
    one), soft-capped and scaled as the model makes its logits: as the bridge's probe found
    them (``HEAD_MARK``), else the final norm by its usual names and the config's soft-cap;
    None for an encoder or a model without them."""
    head = hf.get_output_embeddings() if causal else None
    if not isinstance(head, torch.nn.Linear):
        return None
    path = getattr(hf, HEAD_MARK, None)
    if isinstance(path, str):
        return None
    if path is None:
        norm = final_norm(hf)
        if norm is None:
            return None
        path = HeadPath((norm,), getattr(hf.config, "final_logit_softcapping", None))
    cap, scale = path.softcap, path.scale

    def unembed(x: torch.Tensor) -> torch.Tensor:
        logits = head(x)
        logits = torch.tanh(logits / cap) * cap if cap else logits
        return logits * scale if scale != 1.0 else logits

    norm = path.norm if path.final else None
    return Readout(norm, unembed, head.out_features, ids, label)


def _chunk_rows(vocab: int) -> int:
    """Rows unembedded at once: about CHUNK_BYTES of float32 logits (and as much again of
    temporaries)."""
    return max(1, CHUNK_BYTES // (8 * vocab))


@torch.inference_mode()
def _read(
    readout: Readout, x: torch.Tensor, targets: torch.Tensor, k: int
) -> tuple[torch.Tensor, ...]:
    """Rows of hidden states after the final norm (n, C) -> the top ``k`` ids (n, k) and
    probabilities (n, k) float32, and the target's probability (n,) and rank (n,)
    (``reduce.read_rows``), a few rows of vocabulary logits at a time."""
    return read_rows(readout.unembed, x, targets, k, _chunk_rows(readout.vocab))


def at(states: torch.Tensor, readout: Readout, kind: str, positions: list[int]) -> list[dict]:
    """The predictions at ``positions``, one dict each, unembedded together: with ``kind``
    "top_k", the output's top ``LIMITS.max_top_k`` (``ids``, ``probs``: (K,)); with "lens",
    every hidden state's top token (``ids``, ``probs``: (L+1,)), the target (``targets``, a
    scalar: the next token, -1 after the last; an encoder's head: the text's own token, -1 at a
    mask) and its probability and rank (``target_probs``, ``target_ranks``: (L+1,))."""
    ids = readout.ids
    if readout.predicts == "masked":
        target = [-1 if ids[p] in readout.mask_ids else ids[p] for p in positions]
    else:
        target = [ids[p + 1] if p + 1 < len(ids) else -1 for p in positions]
    targets = torch.tensor(target)
    last = states.shape[0] - 1
    pick = torch.tensor(positions, device=states.device)
    if kind == "top_k":
        top, probs, tprob, _ = _read(readout, states[last, pick], targets, LIMITS.max_top_k)
        top, probs, tprob = top.cpu(), probs.cpu(), tprob.cpu()
        return [{"ids": top[i], "probs": probs[i], "target_probs": tprob[i]}
                for i in range(len(positions))]  # fmt: skip
    # Every hidden state's rows in one batch, (L+1) x m of them, the final norm applied first
    # (the last is already normed): the unembedding's table (V x d, 150 MB for GPT-2) is then
    # read once a chunk, not once a layer.
    with torch.inference_mode():
        x = states[:, pick]  # (L+1, m, C)
        inner = x[:last] if readout.norm is None else readout.norm(x[:last])
        h = torch.cat([inner, x[last:]]).flatten(0, 1)  # ((L+1) m, C)
    m = len(positions)
    top, probs, tprob, trank = _read(readout, h, targets.repeat(last + 1), 1)
    rows = {
        "ids": top[:, 0].unflatten(0, (last + 1, m)).cpu(),  # (L+1, m)
        "probs": probs[:, 0].unflatten(0, (last + 1, m)).cpu(),
        "target_probs": tprob.unflatten(0, (last + 1, m)).cpu(),
        "target_ranks": trank.unflatten(0, (last + 1, m)).cpu(),
    }
    return [
        {"targets": targets[i].to(torch.int32), **{key: v[:, i] for key, v in rows.items()}}
        for i in range(len(positions))
    ]


def work(states: torch.Tensor, kind: str, count: int, vocab: int) -> float:
    """Multiply-adds x 2 of unembedding ``count`` positions for ``kind``."""
    rows = 1 if kind == "top_k" else states.shape[0]
    return 2.0 * rows * count * states.shape[-1] * vocab


def _vocab(readout: Readout, *id_tensors: torch.Tensor) -> dict[str, str]:
    """The label of every id the part names (keys are ids as strings, as JSON keys are)."""
    ids = sorted({int(i) for t in id_tensors for i in t.flatten().tolist() if i >= 0})
    return dict(zip(map(str, ids), readout.label(ids), strict=True))


def part(name: str, got: list[dict], readout: Readout, start: int, k: int) -> dict:
    """The ``top_k`` or ``lens`` array of a part (``capture.fields.predictions`` says what each
    holds) from ``got``, the predictions (``at``) of positions ``start`` onward; ``top_k``
    with ``k`` tokens a position."""
    if name == "top_k":
        ids = torch.stack([g["ids"][:k] for g in got])  # (m, k)
        probs = torch.stack([g["probs"][:k] for g in got])
        target = torch.stack([g["target_probs"] for g in got])  # (m,) the knock-out card's loss
        return {"k": ids.shape[-1], "predicts": readout.predicts, "start": start, "ids": ids,
                "probs": probs, "target_probs": target, "vocab": _vocab(readout, ids)}  # fmt: skip
    out: dict = {"rows": got[0]["ids"].shape[0], "predicts": readout.predicts, "start": start}
    for key in ("ids", "probs", "targets", "target_ranks", "target_probs"):
        out[key] = torch.stack([g[key] for g in got], dim=-1)  # (L+1, m); targets (m,)
    out["vocab"] = _vocab(readout, out["ids"], out["targets"])
    return out
