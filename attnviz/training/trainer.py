"""The training loop: the engine's own ``Transformer``, its parameters made trainable, so what
is shown afterwards is exactly what was trained. A seed fixes the starting weights
(``standard_weights(cfg, seed)``) and the data (a generator seeded alike).

A run trains on one CPU thread (``one_thread``): its steps are many small operations driven from
Python, which a second thread barely speeds up, and torch's OpenMP threads wait for each other
by spinning, so that when anything else wants the cores (the server's traces, a browser, another
process) two threads of a run spin against it and the run takes three to ten times as long
(measured on a 2-core machine: 800 steps of the induction run in 10 to 12 s on one thread, 40 to
150 s on two, while other work ran). On one thread, too, a seed gives the same run number for
number on any CPU.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

import torch
import torch.nn.functional as F

from attnviz.engine import Transformer, TransformerConfig, act_name, capture
from attnviz.engine.config import Norm, Positional
from attnviz.engine.init import standard_weights, trainable
from attnviz.training.tasks import Batch, Induction, Task

HELDOUT_BATCH = 64  # sequences in the held-out batch measured at every checkpoint


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


def model_config(
    arch: Architecture, vocab_size: int, max_tokens: int, encoder_decoder: bool = False
) -> TransformerConfig:
    """A causal model over the task's vocabulary, with learned LayerNorms where there are
    norms (and one after the last block with them), and an unembedding. With
    ``encoder_decoder``, an encoder of as many blocks reads a source and the model's blocks
    attend to it."""
    return TransformerConfig(
        d_model=arch.d_model,
        n_layers=arch.layers,
        n_heads=arch.heads,
        scale=arch.scale,
        causal=True,
        positional=arch.positional,
        n_ctx=max_tokens,
        residual=arch.residual,
        norm=arch.norm,
        ln_affine=True,
        final_norm=arch.norm != "none",
        ffn=arch.ffn,
        vocab_size=vocab_size,
        unembed=True,
        encoder_layers=arch.layers if encoder_decoder else 0,
    )


@dataclass(frozen=True)
class Step:
    step: int  # 1-based: the number of updates made
    loss: float  # nats, on the batch's counted positions, before the update
    grad_norms: list[float]  # per layer, the L2 norm of its parameters' gradients
    seconds: float  # since the start


@dataclass(frozen=True)
class Checkpoint:
    """The model as it was after ``step`` updates (0: the starting weights)."""

    step: int
    heldout: float  # nats, on the task's held-out batch
    pattern: torch.Tensor  # (L, nh, T, T): every head's attention on the task's probe, on the CPU
    seconds: float
    sample: str | None = None  # what the model wrote then, when the run asks for samples
    # An encoder-decoder's other attention on the probe, on the CPU: the decoder's
    # cross-attention (L, nh, T, S) and the encoder's self-attention (L, nh, S, S)
    cross: torch.Tensor | None = None
    encoder: torch.Tensor | None = None


@dataclass
class Run:
    cfg: TransformerConfig
    model: Transformer
    state: Literal["done", "cancelled"] = "done"
    history: list[Step] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)


def checkpoint_steps(steps: int, count: int) -> list[int]:
    """``count`` + 1 steps from 0 to ``steps``, closer together early on, where patterns change
    fastest (square-spaced), each once."""
    if count < 1:
        return [0, steps]
    return sorted({round(steps * (i / count) ** 2) for i in range(count + 1)})


def loss_on(model: Transformer, batch: Batch) -> torch.Tensor:
    """Mean cross-entropy, in nats, of the model's predictions on the batch's counted positions."""
    logits = model.logits(model(batch.inputs, batch.source))  # (B, T, V)
    return F.cross_entropy(logits[batch.mask], batch.targets[batch.mask])


@torch.no_grad()
def snapshot(
    model: Transformer,
    task: Task,
    heldout: Batch,
    step: int,
    t0: float,
    sample: Callable[[Transformer], str] | None = None,
) -> Checkpoint:
    was_training = model.training
    model.eval()
    loss = loss_on(model, heldout).item()
    p = task.probe()
    device = heldout.inputs.device
    probe = torch.tensor([p.ids], device=device)  # (1, T)
    source = None if p.source is None else torch.tensor([p.source], device=device)  # (1, S)
    groups = pattern_names(model.cfg)
    with capture(model, [n for names in groups.values() for n in names]) as cache:
        model(probe, source)
    # per group: (L, nh, T or S, T or S)
    got = {k: torch.stack([cache[n][0] for n in g]).float().cpu() for k, g in groups.items()}
    text = sample(model) if sample is not None else None
    model.train(was_training)
    return Checkpoint(step, loss, got["self"], time.perf_counter() - t0, text,
                      got.get("cross"), got.get("encoder"))  # fmt: skip


def pattern_names(cfg: TransformerConfig) -> dict[str, list[str]]:
    """The hook points of every attention pattern, by kind: "self" (the model's blocks), and
    for an encoder-decoder "cross" (its blocks' cross-attention) and "encoder"."""
    names = {"self": [act_name("pattern", i) for i in range(cfg.n_layers)]}
    if cfg.encoder_layers:
        names["cross"] = [act_name("pattern", i, "cross_attn") for i in range(cfg.n_layers)]
        names["encoder"] = [
            act_name("pattern", i, prefix="encoder.") for i in range(cfg.encoder_layers)
        ]
    return names


def layer_grad_norms(model: Transformer) -> list[float]:
    """The L2 norm of each block's gradients (parameters without a gradient count 0): an
    encoder's blocks first, then the model's."""
    norms = []
    blocks = [*model.encoder.blocks, *model.blocks] if model.cfg.encoder_layers else model.blocks
    for block in blocks:
        grads = [p.grad.pow(2).sum() for p in block.parameters() if p.grad is not None]
        norms.append(float(torch.stack(grads).sum().sqrt()) if grads else 0.0)
    return norms


@contextmanager
def one_thread() -> Iterator[None]:
    """Torch computes on the calling thread alone until the block ends (its intra-op thread
    count is per thread: other threads keep theirs). A thread that first computes in the
    meantime starts with one too (the server's compute thread sets its own before each
    computation: ``services/compute.py``)."""
    before = torch.get_num_threads()
    if before == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def train(
    task: Task | None = None,
    arch: Architecture = Architecture(),
    opt: Optimiser = Optimiser(),
    on_step: Callable[[Step], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    *,
    device: torch.device | str = "cpu",
    checkpoints: int = 0,
    on_checkpoint: Callable[[Checkpoint], None] | None = None,
    sample: Callable[[Transformer], str] | None = None,
    on_weights: Callable[[Run], None] | None = None,
) -> Run:
    """Train a fresh model on ``task`` (the induction task by default) for ``opt.steps`` updates
    (AdamW, no weight decay), or until ``should_stop()`` says so between two of them.

    With ``checkpoints`` > 0, the held-out loss and every head's pattern on the task's probe are
    recorded at ``checkpoint_steps(opt.steps, checkpoints)`` (and where a run is cancelled),
    with ``sample(model)`` (a text it writes, say) when given. ``on_weights(run)`` is called at
    each checkpoint before ``on_checkpoint``, with the run so far: its model is the one being
    trained, to be read (saved, say) then and not kept.
    The data are drawn on the CPU from a generator seeded by ``opt.seed``, then moved, so that
    the data order does not depend on the device."""
    if task is None:
        task = Induction()
    with one_thread():
        device = torch.device(device)
        cfg = model_config(arch, task.vocab.size, task.max_tokens, task.encoder_decoder)
        model = Transformer(cfg)
        model.load_state_dict(standard_weights(cfg, opt.seed))
        model = trainable(model).to(device).train()
        data = torch.Generator().manual_seed(opt.seed)
        adam = torch.optim.AdamW(model.parameters(), lr=opt.lr, weight_decay=0.0)
        run = Run(cfg, model)
        heldout = task.heldout(HELDOUT_BATCH).to(device) if checkpoints else None
        at = set(checkpoint_steps(opt.steps, checkpoints)) if checkpoints else set()
        t0 = time.perf_counter()

        def keep(step: int) -> None:
            assert heldout is not None
            point = snapshot(model, task, heldout, step, t0, sample)
            run.checkpoints.append(point)
            if on_weights is not None:
                on_weights(run)
            if on_checkpoint is not None:
                on_checkpoint(point)

        if 0 in at:
            keep(0)
        for step in range(1, opt.steps + 1):
            if should_stop is not None and should_stop():
                run.state = "cancelled"
                if heldout is not None and run.history and run.checkpoints[-1].step != step - 1:
                    keep(step - 1)
                break
            batch = task.batch(data, opt.batch).to(device)
            loss = loss_on(model, batch)
            adam.zero_grad(set_to_none=True)
            loss.backward()
            record = Step(step, loss.item(), layer_grad_norms(model), time.perf_counter() - t0)
            adam.step()
            run.history.append(record)
            if on_step is not None:
                on_step(record)
            if step in at:
                keep(step)
        model.eval()
        for p in model.parameters():
            p.requires_grad_(False)
        return run
