"""The training loop: the engine's own ``Transformer``, its parameters made trainable, so what
is shown afterwards is exactly what was trained. Deterministic for a seed on the CPU: the
weights come from ``standard_weights(cfg, seed)`` and the data from a generator seeded alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import torch
import torch.nn.functional as F

from attnviz.engine import Transformer, TransformerConfig
from attnviz.engine.config import Norm, Positional
from attnviz.engine.init import standard_weights, trainable
from attnviz.training.tasks import Induction


@dataclass(frozen=True)
class Architecture:
    """The toy lab's switches, for a model that predicts the next token."""

    layers: int = 2
    heads: int = 4
    d_model: int = 64
    ffn: bool = False
    positional: Positional = "rope"
    norm: Norm = "pre"
    residual: bool = True
    scale: bool = True  # divide the logits by sqrt(d_head)


@dataclass(frozen=True)
class Optimiser:
    steps: int = 800
    lr: float = 3e-3
    batch: int = 32
    seed: int = 0


def model_config(arch: Architecture, vocab_size: int, max_tokens: int) -> TransformerConfig:
    """A causal model over the task's vocabulary, with learned LayerNorms where there are
    norms (and one after the last block with them), and an unembedding."""
    return TransformerConfig(
        d_model=arch.d_model,
        n_layers=arch.layers,
        n_heads=arch.heads,
        scale=arch.scale,
        causal=True,
        positional=arch.positional,
        max_positions=max_tokens,
        residual=arch.residual,
        norm=arch.norm,
        ln_affine=True,
        final_norm=arch.norm != "none",
        ffn=arch.ffn,
        vocab_size=vocab_size,
        unembed=True,
    )


@dataclass(frozen=True)
class Step:
    step: int  # 1-based: the number of updates made
    loss: float  # nats, on the batch's counted positions, before the update
    grad_norms: list[float]  # per layer, the L2 norm of its parameters' gradients
    seconds: float  # since the start


@dataclass
class Run:
    cfg: TransformerConfig
    model: Transformer
    state: Literal["done", "cancelled"] = "done"
    history: list[Step] = field(default_factory=list)


def layer_grad_norms(model: Transformer) -> list[float]:
    """The L2 norm of each block's gradients (parameters without a gradient count 0)."""
    norms = []
    for block in model.blocks:
        grads = [p.grad.pow(2).sum() for p in block.parameters() if p.grad is not None]
        norms.append(float(torch.stack(grads).sum().sqrt()) if grads else 0.0)
    return norms


def train(
    task: Induction,
    arch: Architecture = Architecture(),
    opt: Optimiser = Optimiser(),
    on_step: Callable[[Step], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Run:
    """Train a fresh model on ``task`` for ``opt.steps`` updates (AdamW, no weight decay), or
    until ``should_stop()`` says so between two of them."""
    cfg = model_config(arch, task.vocab.size, task.max_tokens)
    model = Transformer(cfg)
    model.load_state_dict(standard_weights(cfg, opt.seed))
    trainable(model).train()
    data = torch.Generator().manual_seed(opt.seed)
    adam = torch.optim.AdamW(model.parameters(), lr=opt.lr, weight_decay=0.0)
    run = Run(cfg, model)
    t0 = time.perf_counter()
    for step in range(1, opt.steps + 1):
        if should_stop is not None and should_stop():
            run.state = "cancelled"
            break
        batch = task.batch(data, opt.batch)
        logits = model.logits(model(batch.inputs))  # (B, T, V)
        loss = F.cross_entropy(logits[batch.mask], batch.targets[batch.mask])
        adam.zero_grad(set_to_none=True)
        loss.backward()
        record = Step(step, loss.item(), layer_grad_norms(model), time.perf_counter() - t0)
        adam.step()
        run.history.append(record)
        if on_step is not None:
            on_step(record)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return run
