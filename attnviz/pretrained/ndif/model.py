"""A model served by an NDIF deployment (``--backend ndif`` or a model named ``ndif:<repo id>``):
its config and tokenizer read here, its weights never; every trace runs there (``block``).

The model is described from its config (the layers, heads and widths the page draws), and
nnsight builds it on the meta device to find, once, where its parts are: each decoder layer,
the attention module inside it (the one whose forward calls transformers' attention function),
the token embedding, the final norm and the unembedding. Those paths travel with each trace.
"""

from __future__ import annotations

import contextvars
import inspect
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from attnviz.capture import TraceTensors
from attnviz.capture.fields import REGISTRY
from attnviz.capture.lens import Readout
from attnviz.engine import TransformerConfig
from attnviz.engine.ablate import HeadAblation
from attnviz.engine.config import window_fields
from attnviz.errors import RemoteError, TraceError
from attnviz.pretrained.bridge.head import find_after_blocks
from attnviz.pretrained.bridge.load import _ROPE_KEYS, DEFAULT_CONTEXT, _context, _eos_ids
from attnviz.pretrained.bridge.meta_probe import read_attention
from attnviz.pretrained.folder import Backend, ModelFolderError
from attnviz.pretrained.ndif.client import (
    NDIF_INSTALL,
    Deployment,
    model_key,
    nnsight_module,
    run_remote,
)
from attnviz.pretrained.ndif.tensors import remote_tensors
from attnviz.pretrained.tokenize import TextTokenizer
from attnviz.settings import PROBE_MB

PREFIX = "ndif:"


@dataclass(frozen=True)
class Paths:
    """Where an nnsight model's parts are (dotted module paths): ``final`` the modules it
    applies to its last layer's output before the unembedding, in order (its final norm,
    wherever the model keeps it; none for a model without one)."""

    layers: tuple[str, ...]
    attention: tuple[str, ...]
    embed: str
    final: tuple[str, ...]
    head: str

    def as_plan(self) -> dict:
        return {"layers": list(self.layers), "attention": list(self.attention),
                "embed": self.embed, "final": list(self.final), "head": self.head}  # fmt: skip


def find_paths(hf: Any, n_layers: int) -> Paths | str:
    """The parts of a transformers model (on any device, the meta one included), or why they
    cannot be found. Its final norm is what its forward calls after its last layer, found as
    the transformers bridge's probe finds it (``head.find_after_blocks``: the forward run on
    fake tensors here, the weights never needed), not by its name."""
    names = {id(m): n for n, m in hf.named_modules()}
    attention: list[str] = []
    for name, module in hf.named_modules():
        forward = inspect.unwrap(type(module).forward)  # past decorators (deprecate_kwarg)
        code = getattr(forward, "__code__", None)
        if code is not None and "ALL_ATTENTION_FUNCTIONS" in code.co_names:
            attention.append(name)
    if len(attention) != n_layers:
        return (
            f"{len(attention)} of its modules call transformers' attention function, not one per "
            f"layer ({n_layers})"
        )
    layers = tuple(a.rsplit(".", 1)[0] for a in attention)
    head = hf.get_output_embeddings()
    if head is None or id(head) not in names:
        return "it has no unembedding attnviz can find"
    final = find_after_blocks(hf, n_layers)
    if isinstance(final, str):
        return final
    embed = hf.get_input_embeddings()
    return Paths(
        layers, tuple(attention), names[id(embed)], tuple(names[id(m)] for m in final),
        names[id(head)],
    )  # fmt: skip


# The knock-outs of the traces made now (``NdifModel.ablating``).
_knocked: contextvars.ContextVar[tuple[HeadAblation, ...]] = contextvars.ContextVar(
    "attnviz_ndif_knocked", default=()
)


@dataclass
class NdifModel:
    """A causal language model on an NDIF deployment, as the trace service reads any model
    (``ServedModel``)."""

    name: str
    family: str
    source: Path
    origin: str
    cfg: TransformerConfig
    tokenizer: TextTokenizer = field(repr=False)
    lm: Any = field(repr=False)  # the nnsight model (meta weights; real ones when run here)
    paths: Paths
    key: str  # the model's key on the deployment (its repo id, or a folder there)
    where: Deployment | None  # None: nnsight runs it in this process (the tests)
    remote_key: str = ""  # nnsight's key of it (``client.model_key``), read once at start
    logit_softcap: float | None = None
    # Why its layers' windows are not in ``cfg`` (``meta_probe.read_attention``), if they are not
    windows_unread: str | None = None
    device: torch.device = torch.device("cpu")  # where its arrays land here
    run: str | None = None
    title: str | None = None  # a trained run's model: what it is, in words
    created: float | None = None  # and when its run started (epoch seconds)
    named: bool = False  # its run's owner named it: ``title`` is that name
    examples: list[str] | None = None
    eos_ids: tuple[int, ...] = ()
    # Its forwards run on the deployment, which queues them: nothing here to keep apart, so
    # a wait for NDIF never holds back another visitor's trace. Run here (``where`` None),
    # nnsight runs them one at a time (``_here``).
    lock: AbstractContextManager[Any] = field(default_factory=nullcontext, repr=False)
    _here: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def backend(self) -> Backend:
        return "ndif"

    @property
    def placement(self) -> dict:
        at = "ndif" if self.where is None else f"ndif ({self.where.host})"
        return {"embed": at, "layers": [at] * self.cfg.n_layers, "head": at}

    @property
    def reads_images(self) -> bool:
        return False

    @property
    def unavailable(self) -> Mapping[str, str]:
        why = (
            f"a model served through NDIF ({self.family}) runs on the deployment, where attnviz "
            "reads its attention and hidden states but not each head's slice of its output "
            "projection"
        )
        return {
            name: f"{name}: {why}" for name in REGISTRY.needing("output projection", "clean run")
        }

    @property
    def knockouts(self) -> NdifModel:
        """Itself: each trace sends its knock-outs, replaced on the deployment in their layer's
        attention output (``block.knocked``), as the engine replaces ``hook_z``."""
        return self

    def _run(self, ids: Sequence[int], plan: dict) -> dict:
        nnsight = nnsight_module()
        x = torch.tensor([list(ids)])  # (1, T)
        from attnviz.pretrained.ndif.block import run_plan

        lm = self.lm

        def trace(backend: Any) -> dict:
            with lm.trace(x, backend=backend) if backend is not None else lm.trace(x):
                got = run_plan(lm, plan)
                got = nnsight.save(got)
            return got

        return self._remote(trace)

    def _remote(self, trace: Callable[[Any], dict]) -> dict:
        """``run_remote``: on the deployment, several at once (each request's own thread and
        trace); in this process (no deployment: nnsight runs the model here), one at a time."""
        with self._here if self.where is None else nullcontext():
            return run_remote(trace, self.where, self.key, self.remote_key)

    def trace(self, ids: list[int], keep_qkv_bytes: int = -1) -> TraceTensors:
        knocked = [
            {"layer": a.layer, "head": a.head, "mode": a.mode, "source": a.source}
            for a in _knocked.get()
        ]  # every trip of this trace runs with them (its later parts too)
        base = {
            "paths": self.paths.as_plan(),
            "logit_softcap": self.logit_softcap,
            "ablate": knocked,
        }
        t = remote_tensors(
            self.cfg, ids, lambda plan: self._run(ids, plan), base, self.name, self.cfg.d_model
        )
        assert self.cfg.vocab_size is not None

        def there(rows: torch.Tensor) -> torch.Tensor:  # never called: read out on NDIF
            raise TraceError("fields: this model's predictions are made on its deployment")

        def label(token_ids: list[int]) -> list[str]:
            return self.tokenizer.label_ids(token_ids)[0]

        t.readout = Readout(None, there, self.cfg.vocab_size, list(ids), label)
        return t

    def continue_ids(
        self, ids: list[int], n: int, temperature: float = 0.0, seed: int = 0,
        stop: Collection[int] = (),
    ) -> list[int]:  # fmt: skip
        """The ``n`` ids the model writes greedily after ``ids`` (fewer: it stopped after one
        of ``stop``), by nnsight's generate on the deployment."""
        if temperature != 0:
            raise TraceError(
                "generate.temperature: a model served through NDIF writes greedily here "
                "(temperature 0): its sampling would not be this server's seeded draws"
            )
        nnsight = nnsight_module()
        x = torch.tensor([list(ids)])  # (1, T)
        lm = self.lm

        def trace(backend: Any) -> dict:
            kw = {"backend": backend} if backend is not None else {}
            with lm.generate(x, max_new_tokens=n, do_sample=False, **kw) as tracer:
                out = nnsight.save(tracer.result)
            return {"out": out}

        got = self._remote(trace)
        new = [int(t) for t in got["out"][0, len(ids) :].tolist()]
        for i, t in enumerate(new):
            if t in stop:
                return new[: i + 1]
        return new

    def head_outputs(self, ids: list[int], layers: Sequence[int]) -> dict[int, torch.Tensor]:
        """Every head's output (nh, T, hs) at ``layers`` on ``ids`` of a clean forward on the
        deployment: what ``patch`` copies from its source text."""
        plan = {"paths": self.paths.as_plan(), "heads_out": sorted(set(layers))}
        return dict(self._run(ids, plan)["heads_out"])

    @contextmanager
    def ablating(self, ablations: Sequence[HeadAblation]) -> Iterator[None]:
        """The traces made in the block carry ``ablations`` to the deployment."""
        token = _knocked.set(tuple(ablations))
        try:
            yield
        finally:
            _knocked.reset(token)


def describe(config: Any) -> TransformerConfig:
    """The TransformerConfig that describes a causal language model's config (never built),
    before its attention's rule is read (``read_attention``: its windows, scaling and soft-cap)."""
    c = config.get_text_config()
    H = c.num_attention_heads
    C = c.hidden_size
    rope = any(getattr(c, k, None) for k in _ROPE_KEYS)
    return TransformerConfig(
        d_model=C,
        n_layers=c.num_hidden_layers,
        n_heads=H,
        head_dim=getattr(c, "head_dim", None) or C // H,
        n_kv_heads=getattr(c, "num_key_value_heads", None) or H,
        causal=True,
        n_ctx=_context(c) or DEFAULT_CONTEXT,
        positional="rope" if rope else "none",  # type: ignore[arg-type]
        residual=True,
        vocab_size=c.vocab_size,
        unembed=True,
    )


def tokenizer_file(key: str) -> Path:
    """The model's tokenizer.json: a folder's, else the Hugging Face cache's (fetched into it
    when missing, unless HF_HUB_OFFLINE)."""
    folder = Path(key).expanduser()
    if folder.is_dir():
        path = folder / "tokenizer.json"
        if not path.is_file():
            raise ModelFolderError(f"{key}: no tokenizer.json (the tokenizers library needs one)")
        return path
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(key, "tokenizer.json"))
    except Exception as exc:  # the hub's errors: not found, gated, offline
        raise ModelFolderError(f"{key}: its tokenizer.json could not be had ({exc})") from exc


def load_ndif(
    key: str, where: Deployment | None, name: str | None = None,
    probe_bytes: int = PROBE_MB * 2**20,
) -> NdifModel:  # fmt: skip
    """The model ``key`` (a repo id, or a folder the deployment and this server both read) on
    ``where``: its config and tokenizer here (a folder's, or the Hugging Face cache's), its
    parts found on the meta device, and its attention's windows, scaling and soft-cap read on
    a probe there of at most ``probe_bytes`` of masks (``meta_probe.read_attention``). ``where``
    None: nnsight runs it here (the tests). Without nnsight, a ModelFolderError at start that
    tells the host the command."""
    try:
        nnsight_module()
    except RemoteError as exc:
        raise ModelFolderError(
            f"{key}: an NDIF model needs nnsight, which is not installed: {NDIF_INSTALL}"
        ) from exc
    from nnsight.modeling.transformers import TransformersModel
    from transformers import AutoTokenizer

    try:
        # Its tokenizer given: nnsight 0.8.1 cannot tell transformers 5's text-generation
        # pipeline's tokenizer class, so it would load none.
        lm = TransformersModel(
            key,
            task="text-generation",
            tokenizer=AutoTokenizer.from_pretrained(key),
            dispatch=where is None,
        )
    except Exception as exc:  # transformers' and the hub's errors are many
        raise ModelFolderError(f"{key}: nnsight could not read its config ({exc})") from exc
    hf = lm._module
    cfg = describe(hf.config)
    paths = find_paths(hf, cfg.n_layers)
    if isinstance(paths, str):
        raise ModelFolderError(f"{key}: attnviz cannot read this model through NDIF: {paths}")
    # Each layer's window, scaling and soft-cap, as the bridge's probe reads a local model's:
    # from what its attention is given on a forward here, its weights never needed.
    given = read_attention(hf, cfg.n_layers, probe_bytes)
    why = given if isinstance(given, str) else given.unread
    unread = None if why is None else f"not read over NDIF: {why}"
    if not isinstance(given, str):
        cfg = replace(cfg, attn_scale=given.scaling, attn_softcap=given.softcap,
                      **window_fields(given.windows or ()))  # fmt: skip
    tokenizer = TextTokenizer.from_file(tokenizer_file(key))
    host = "this process" if where is None else where.host
    # A repo id names itself; a folder (a self-hosted deployment's) by its name, as a model
    # folder is, its path not told to clients.
    shown = Path(key).name if Path(key).expanduser().is_dir() else key
    return NdifModel(
        name=name or f"{PREFIX}{shown}",
        family=hf.config.model_type,
        source=Path(key),
        origin=f"NDIF at {host}: {shown}",
        cfg=cfg,
        tokenizer=tokenizer,
        lm=lm,
        paths=paths,
        key=key,
        where=where,
        remote_key="" if where is None else model_key(lm, key),
        logit_softcap=getattr(hf.config.get_text_config(), "final_logit_softcapping", None),
        windows_unread=unread,
        eos_ids=_eos_ids(hf.config.get_text_config().to_dict()),
    )
