"""What a check reads: the toy trace of the learner's table (computed by the engine, as POST
/api/trace computes it) with the view they look at; a training run's state; a recurrent
comparison."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from attnviz.capture import TraceTensors
from attnviz.learn.path import LearnRefused, Result
from attnviz.numbers import readable_prose
from attnviz.schemas.common import ToyConfig
from attnviz.schemas.learn import LearnFound, LearnView
from attnviz.schemas.trace import ToyTraceRequest
from attnviz.schemas.train import TrainClaim
from attnviz.services.toy_trace import run_toy_trace
from attnviz.services.training.runs import LiveRun, Variant
from attnviz.training.ablations import PRESETS
from attnviz.training.catalog import TASKS
from attnviz.training.tasks import Probe


def vec(values: torch.Tensor | list[float]) -> str:
    """[0.21, 0.423, 0.39]: each number as the page's readable() writes it (under 0.001, as
    readableProse(): "about 0.0004", "practically zero")."""
    return "[" + ", ".join(readable_prose(float(v)) for v in values) + "]"


def quoted(names: list[str], limit: int = 12, last: str = "and") -> str:
    """Names quoted as a sentence lists them: '"place" and "grammar"', '"a", "b" and "c"' (``last``:
    the word before the last one, "or" where one of them is meant); past ``limit``, '... and 3
    more'. A comma never stands for "and"."""
    items = [f'"{n}"' for n in names[:limit]]
    if len(names) > limit:
        items.append(f"{len(names) - limit} more")
        last = "and"
    if len(items) < 2:
        return "".join(items)
    return f"{', '.join(items[:-1])} {last} {items[-1]}"


@dataclass
class ToyReading:
    """The learner's table, its trace and their view. Layers and heads count from 0 here and
    from 1 in what a check says, as on the page."""

    req: ToyTraceRequest
    view: LearnView
    tensors: TraceTensors
    device: torch.device

    def __post_init__(self) -> None:
        v, L, H, n = self.view, self.layers, self.heads, self.n
        if v.layer >= L:
            raise LearnRefused(
                "view.layer", f"{v.layer} is past this model's layers (0 to {L - 1})"
            )
        if v.head >= H:
            raise LearnRefused("view.head", f"{v.head} is past this model's heads (0 to {H - 1})")
        if v.vlayer is not None and v.vlayer > L:
            raise LearnRefused("view.vlayer", f"{v.vlayer} is past the last layer ({L})")
        for name in ("a", "b"):
            i = getattr(v, name)
            if i is not None and i >= n:
                raise LearnRefused(f"view.{name}", f"{i} is past the last token ({n - 1})")

    @property
    def tokens(self) -> list[str]:
        return self.req.tokens

    @property
    def axes(self) -> list[str]:
        return self.req.axis_names()

    @property
    def config(self) -> ToyConfig:
        return self.req.config

    @property
    def n(self) -> int:
        return len(self.req.tokens)

    @property
    def d(self) -> int:
        return self.req.d

    @property
    def layers(self) -> int:
        return self.tensors.layers

    @property
    def heads(self) -> int:
        return self.tensors.heads

    def index(self, name: str) -> int | None:
        """The first token labelled ``name`` (exactly, else ignoring case), or None."""
        found = self.indices(name)
        return found[0] if found else None

    def indices(self, name: str) -> list[int]:
        exact = [i for i, t in enumerate(self.tokens) if t == name]
        if exact:
            return exact
        return [i for i, t in enumerate(self.tokens) if t.strip().lower() == name.lower()]

    def axis(self, name: str, default: int) -> int:
        """The dimension named ``name``, or ``default`` when no axis has that name."""
        names = [a.strip().lower() for a in self.axes]
        return names.index(name) if name in names else default

    def missing(self, *names: str) -> Result | None:
        """A not-done answer when a token the task is about is not in the table."""
        gone = [n for n in names if self.index(n) is None]
        if not gone:
            return None
        return Result(
            False,
            f"There is no token named {quoted(gone, last='or')} in the table now (its tokens are "
            f"{quoted(self.tokens)}). This task is about {quoted(list(names))}: rename a token "
            "back, or open the step again to start from its table.",
        )

    def weights(self, layer: int | None = None, head: int | None = None) -> torch.Tensor:
        """(n, n) softmax weights, rows are queries; the view's layer and head by default."""
        layer = self.view.layer if layer is None else layer
        head = self.view.head if head is None else head
        return self.tensors.pattern(layer, [head])[0].double().cpu()

    def layer_weights(self, layer: int) -> torch.Tensor:
        """(heads, n, n) every head of one layer."""
        return self.tensors.pattern(layer).double().cpu()

    def scores(self, layer: int | None = None, head: int | None = None) -> torch.Tensor:
        """(n, n) logits after scaling (masked: -inf)."""
        layer = self.view.layer if layer is None else layer
        head = self.view.head if head is None else head
        return self.tensors.scores(layer, [head])[0].double().cpu()

    def state(self, layer: int) -> torch.Tensor:
        """(n, d): the input after positions (0), or layer ``layer``'s output."""
        return self.tensors.states[layer].double().cpu()

    @property
    def last(self) -> torch.Tensor:
        return self.state(self.layers)

    def inputs(self) -> torch.Tensor:
        """(n, d) the table as sent, before any position vectors."""
        return torch.tensor(self.req.embeddings, dtype=torch.float64)

    def with_config(self, **changes: Any) -> TraceTensors:
        """The same table under another config (the engine again, on this thread)."""
        config = ToyConfig(**{**self.config.model_dump(), **changes})
        req = self.req.model_copy(update={"config": config})
        return run_toy_trace(req, self.device).tensors


def steps_expected(train: dict[str, str] | None) -> int | None:
    """The steps a train step's run takes as the step opens it (``Step.train``: its preset's,
    else its task's default); None for a step that trains no run of the form (step 1)."""
    if not train or "task" not in train:
        return None
    if train.get("preset"):
        return PRESETS[train["preset"]].opt.steps
    return TASKS[train["task"]].opt.steps


@dataclass
class TrainReading:
    """A training run as it stands and the learner's view of it (a variant, a layer, a head).
    ``expects``: the steps the step's run takes (``steps_expected``); ``cap``: the most steps
    this server trains a run (its settings), which may have made the run shorter."""

    run: LiveRun
    view: LearnView
    yours: bool = True  # the caller's own run (else a link's or another visitor's)
    expects: int | None = None
    cap: int | None = None
    # The tasks found done earlier on this run, each with its own head (LearnCheckRequest.found).
    found: list[LearnFound] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._found_fit()
        v, variants = self.view, self.run.variants
        i = v.variant or 0
        if i >= len(variants):
            raise LearnRefused(
                "view.variant", f"{i} is past this run's variants (0 to {len(variants) - 1})"
            )
        arch = variants[i].arch
        if v.layer >= arch.layers:
            raise LearnRefused(
                "view.layer", f"{v.layer} is past this model's layers (0 to {arch.layers - 1})"
            )
        if v.head >= arch.heads:
            raise LearnRefused(
                "view.head", f"{v.head} is past this model's heads (0 to {arch.heads - 1})"
            )
        if v.query is not None and v.key is not None:
            if self.run.plan.task.encoder_decoder:
                raise LearnRefused(
                    "view.query",
                    "this run's model is an encoder-decoder: its card Attention as it trains "
                    "opens no Why this score (a cell is a decoder-only model's)",
                )
            n = len(self.probe.ids)
            for name, i in (("query", v.query), ("key", v.key)):
                if i >= n:
                    raise LearnRefused(
                        f"view.{name}", f"{i} is past the probe's last token ({n - 1})"
                    )
            if v.key > v.query:
                raise LearnRefused(
                    "view.key",
                    f"{v.key} is after the query ({v.query}): this model is causal, and a "
                    "query does not see a later key",
                )

    def _found_fit(self) -> None:
        """Each found head within its variant's model, else refused by its field."""
        variants = self.run.variants
        for i, f in enumerate(self.found):
            if f.variant >= len(variants):
                raise LearnRefused(
                    f"found.{i}.variant",
                    f"{f.variant} is past this run's variants (0 to {len(variants) - 1})",
                )
            arch = variants[f.variant].arch
            for name, at, count in (("layer", f.layer, arch.layers), ("head", f.head, arch.heads)):
                if at >= count:
                    raise LearnRefused(
                        f"found.{i}.{name}",
                        f"{at} is past this model's {name}s (0 to {count - 1})",
                    )

    def found_head(self, task: str) -> tuple[int, int] | None:
        """The head (layer, head) ``task`` was found done with earlier on the variant in view,
        or None."""
        return next(
            ((f.layer, f.head) for f in self.found
             if f.task == task and f.variant == (self.view.variant or 0)),
            None,
        )  # fmt: skip

    @property
    def variant(self) -> Variant:
        return self.run.variants[self.view.variant or 0]

    @property
    def probe(self) -> Probe:
        """The text the heads card shows (its cells are the view's query and key)."""
        return self.run.plan.task.probe()

    @property
    def task(self) -> str:
        return self.run.task_name

    @property
    def preset(self) -> str | None:
        return self.run.plan.preset

    @property
    def state(self) -> str:
        return self.run.state

    @property
    def claims(self) -> list[TrainClaim] | None:
        with self.run.lock:
            return None if self.run.claims is None else list(self.run.claims)

    def progress(self) -> str:
        """Where a running run is: "step 120 of 600", or with several variants "variant 1 of 2,
        pre-norm, step 178 of 300" (no parentheses: the answers put it after a colon)."""
        with self.run.lock:
            variants = [(v.label, v.state, len(v.history)) for v in self.run.variants]
        total = self.run.plan.opt.steps
        current = next(
            (k for k, (_, state, _) in enumerate(variants) if state == "running"),
            next((k for k, (_, state, _) in enumerate(variants) if state == "waiting"), 0),
        )
        label, _, done = variants[current]
        which = f"variant {current + 1} of {len(variants)}, {label}, " if len(variants) > 1 else ""
        return f"{which}step {done} of {total}"

    def shorter(self) -> str:
        """When the run trained fewer steps than the step expects, a sentence saying so, and
        why where this server's cap made it shorter ("" otherwise): a finding that fails may
        fail only for that."""
        ran = self.run.plan.opt.steps
        if self.expects is None or ran >= self.expects:
            return ""
        each = " each" if len(self.run.variants) > 1 else ""
        said = (
            f"This run trained {ran:,} steps{each}, fewer than the {self.expects:,} this step "
            "expects"
        )
        capped = self.cap is not None and self.cap < self.expects
        most = f" (this server trains at most {self.cap:,} steps a run)" if capped else ""
        if capped and ran >= (self.cap or 0):  # none longer here
            return f"{said}{most}: the shorter run may be why."
        return f"{said}: train it with {min(self.expects, self.cap or self.expects):,} steps{most}."

    @property
    def whose(self) -> str:
        """The run as its answers name it: "your run" to its owner, else "this run"."""
        return "your run" if self.yours else "this run"

    def where(self) -> str:
        v = self.view
        label = self.variant.label
        return f"layer {v.layer + 1}, head {v.head + 1}" + (f" of {label}" if label else "")
