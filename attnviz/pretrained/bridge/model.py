"""A model folder served through Hugging Face transformers: its trace and its generation.

The model runs as transformers runs it, with the ``"attnviz"`` attention function (``record``):
each layer's eager attention, recorded. A trace keeps what a native trace keeps (q, k, v per
layer, the hidden states, the token vectors) and recomputes scores and weights with the rule
each layer used (``rule``). A model whose attention does not go through transformers'
``AttentionInterface`` (BLOOM's ALiBi) keeps its forward's weights and hidden states instead, and
says why it has no queries or keys.

Heads are knocked out (``ablating``) where the recording reads them: the attention function
replaces a head's slice of what eager attention returns, the input of the layer's output
projection, as the engine's hook on ``hook_z`` does (``engine.ablate``).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from attnviz.capture import KEEP_FORWARD_BYTES, TraceTensors
from attnviz.capture.fields import REGISTRY
from attnviz.engine import TransformerConfig
from attnviz.engine.ablate import HeadAblation
from attnviz.errors import TraceError
from attnviz.pretrained.bridge.multimodal import Encoded, encode, to_device
from attnviz.pretrained.bridge.place import Placement, whole
from attnviz.pretrained.bridge.record import Recording, intervening, recording, vision_layers
from attnviz.pretrained.bridge.record import ablating as planned
from attnviz.pretrained.bridge.rule import RecordedRule
from attnviz.pretrained.bridge.towers import mrope_positions, tower_layout
from attnviz.pretrained.folder import Backend
from attnviz.pretrained.tokenize import TextTokenizer

# The arrays a model without queries and keys cannot give: all of them come from q and k.
QK_FIELDS = ("queries", "keys", "values", "scores", "score_range")


@dataclass
class BridgedModel:
    """A model served through transformers, with what the trace service reads of any model
    (``ServedModel``): the same names as a native ``PretrainedModel``, ``trace`` and
    ``continue_ids``."""

    name: str
    family: str  # config.json's model_type
    source: Path
    origin: str
    cfg: TransformerConfig  # a description (shapes, causal, context), never run
    hf: Any = field(repr=False)  # the transformers model (a PreTrainedModel)
    tokenizer: TextTokenizer = field(repr=False)
    device: torch.device
    # None when every layer's attention goes through AttentionInterface; else why it does not
    # (the trace then has no queries or keys).
    no_qk: str | None = None
    run: str | None = None
    title: str | None = None  # a trained run's model: what it is, in words
    created: float | None = None  # and when its run started (epoch seconds)
    named: bool = False  # its run's owner named it: ``title`` is that name
    examples: list[str] | None = None
    eos_ids: tuple[int, ...] = ()
    # A vision-language model's processor (its image processor and tokenizer), else None.
    processor: Any = field(default=None, repr=False)
    # Where the embedding, each layer and the head live (``place.placement_of``), when a device
    # map spread them; None: all on ``device``.
    placed: Placement | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def encode(self, text: str, images: Sequence[Any]) -> tuple[Encoded, str]:
        """A text and its images (PIL, in order) as this vision-language model reads them
        (``multimodal.encode``), and the text with the model's placeholders."""
        if self.processor is None:
            raise TraceError(f"images: model {self.name!r} reads text only")
        return encode(self.processor, self.tokenizer, self.hf.config, text, images)

    def mrope(self, ids: list[int], images: Encoded | None = None) -> dict | None:
        """``meta.mrope`` of ``ids`` (with ``images``' inputs, grown to ``ids`` past them: what
        the model wrote), from the model's own ``get_rope_index``: None when its rotary is not
        multimodal (``towers.py``)."""
        inputs = grown_inputs(self.hf, ids, images, torch.device("cpu"), torch.float32)
        return mrope_positions(self.hf, ids, inputs or None)

    @property
    def placement(self) -> Placement:
        """The embedding's, each layer's and the head's device: ``{"embed": "cuda:0", "layers":
        ["cuda:0", ..., "cpu", "disk"], "head": "cpu"}``."""
        return self.placed or whole(self.device, self.cfg.n_layers)

    @property
    def reads_images(self) -> bool:
        """A vision-language model (registry.ServedModel): it has a processor of images."""
        return self.processor is not None

    @property
    def backend(self) -> Backend:
        return "transformers"

    @property
    def unavailable(self) -> Mapping[str, str]:
        """The arrays this model's traces lack, each with the reason (a 4xx names it)."""
        # Value-weighted attention needs each head's slice of the output projection, which is
        # the model's own module under transformers (named and laid out by its family).
        lacking = {
            name: f"{name}: a model served through transformers ({self.family}) keeps its output "
            "projection in its own module, which attnviz does not read (each head's slice of "
            "W_O); value-weighted attention needs it (the native engine has it)"
            for name in REGISTRY.needing("output projection")  # no bridged model gives them
        }
        if self.no_qk is None:
            return lacking
        return lacking | {
            name: f"{name}: model {self.name} ({self.family}, served through transformers) "
            f"records no queries or keys: {self.no_qk}"
            for name in QK_FIELDS
        }

    @property
    def knockouts(self) -> BridgedModel | str:
        """What knocks this model's heads out (itself: ``head_outputs`` and ``ablating``), or
        why nothing can (its attention does not go through the attention function)."""
        if self.no_qk is None:
            return self
        return (
            f"model {self.name} ({self.family}, served through transformers) has no head "
            "attnviz can knock out: a knock-out replaces the head's output in the attention "
            "function attnviz adds to transformers' AttentionInterface, and this model's "
            f"attention is not read there ({self.no_qk})"
        )

    # -- running it --------------------------------------------------------------------------

    def forward(
        self, ids: torch.Tensor, keep_weights: bool = True,
        inputs: Mapping[str, torch.Tensor] | None = None,
    ) -> tuple[Any, Recording]:  # fmt: skip
        """transformers' forward on ``ids`` (1, T) (and a vision-language model's ``inputs``:
        the processor's pixels and grids), every hidden state asked for (and the weights, when
        the attention is not recorded), with the attention's records; inside ``ablating``,
        with the heads knocked out."""
        extra = to_device(inputs, self.device, self.hf.dtype) if inputs else {}
        with (
            torch.inference_mode(),
            recording(keep_weights, self.device) as records,
            intervening() as edit,
        ):
            out = self.hf(
                input_ids=ids,
                output_hidden_states=True,
                output_attentions=self.no_qk is not None,
                use_cache=False,
                **extra,
            )
        if edit is not None and (edit.error is not None or edit.missed()):
            why = edit.error or (
                f"its attention was called {edit.calls} times, so layers "
                f"{', '.join(map(str, edit.missed()))} were never reached"
            )
            raise TraceError(f"ablate: model {self.name} ({self.family}): {why}")
        return out, records

    @contextmanager
    def ablating(self, ablations: Sequence[HeadAblation]) -> Iterator[None]:
        """Run the enclosed traces with ``ablations`` in place (``engine.ablate`` says how)."""
        with planned(ablations):
            yield

    def head_outputs(self, ids: list[int], layers: Sequence[int]) -> dict[int, torch.Tensor]:
        """Every head's output (nh, T, hs) at ``layers`` on ``ids`` of a clean forward, as the
        output projection reads it: what ``patch`` copies from its source text."""
        x = torch.tensor([ids], dtype=torch.long, device=self.device)  # (1, T)
        with planned((), keep=layers) as outputs:
            self.forward(x, keep_weights=False)
        return dict(outputs)

    def trace(
        self, ids: list[int], keep_qkv_bytes: int = -1, images: Encoded | None = None
    ) -> TraceTensors:
        """Every layer's q, k, v (or, without them, its weights) and hidden states on ``ids``;
        with ``images`` (a vision-language model's text and images, ``ids`` its ids and perhaps
        what the model wrote after them: ``continue_ids``), the vision tower's weights too."""
        x = torch.tensor([ids], dtype=torch.long, device=self.device)  # (1, T)
        L, H, T = self.cfg.n_layers, self.cfg.n_heads, len(ids)
        keep = L * H * T * T * 4 <= KEEP_FORWARD_BYTES or self.no_qk is not None
        out, records = self.forward(x, keep_weights=keep, inputs=self._inputs(ids, images))
        # On the inputs' device (a device map spreads the layers' over several).
        states = torch.stack([h[0].to(self.device) for h in out.hidden_states])  # (L+1, T, C)
        if len(out.hidden_states) != L + 1:
            raise TraceError(
                f"text: model {self.name} gave {len(out.hidden_states)} hidden states, not "
                f"{L + 1} (one per layer and the embeddings)"
            )
        if not bool(torch.isfinite(states.sum())):
            raise TraceError("text: the computation overflowed (values too large for this model)")
        with torch.inference_mode():
            embeddings = self.hf.get_input_embeddings()(x)[0]  # (T, C) the token table's rows
        if images is not None and images.image_token is not None:
            # An image's positions read its features (the projector's), not a table row.
            at = x[0] == images.image_token  # (T,)
            embeddings = torch.where(at[:, None], states[0], embeddings)  # (T, C)
        vision = vision_layers(records)
        tower = None
        if vision is not None and images is not None:
            tower = tower_layout(self.hf, images.blocks, images.inputs, vision[0])
        if self.no_qk is not None:
            return TraceTensors(
                cfg=self.cfg,
                q=None,
                k=None,
                v=None,
                states=states,
                embeddings=embeddings,
                positional=None,
                forward_pattern=[a[0].to(self.device) for a in out.attentions],  # L x (nh, T, T)
                no_qk_reason=self._no_qk_reason(),
                vision=vision,
                tower=tower,
            )
        if len(records) != L:
            raise TraceError(
                f"text: model {self.name}'s attention was called {len(records)} times, not once "
                f"for each of its {L} layers"
            )
        group = H // records[0].k.shape[0]  # query heads per key/value head
        return TraceTensors(
            cfg=self.cfg,
            q=[r.q for r in records],
            # Each key/value head repeated for the query heads that read it (repeat_kv).
            k=[r.k.repeat_interleave(group, dim=0) for r in records],  # L x (nh, T, hs)
            v=[r.v.repeat_interleave(group, dim=0) for r in records],  # L x (nh, T, hs)
            states=states,
            embeddings=embeddings,
            positional=None,
            forward_pattern=[r.weights for r in records if r.weights is not None] or None,
            rule=RecordedRule.of(records),
            vision=vision,
            tower=tower,
        )

    def _no_qk_reason(self) -> str:
        names = ", ".join(QK_FIELDS)
        return (
            f"fields: {names}: model {self.name} ({self.family}, served through transformers) "
            f"records no queries or keys: {self.no_qk}"
        )

    def continue_ids(
        self, ids: list[int], n: int, temperature: float = 0.0, seed: int = 0,
        stop: Collection[int] = (), images: Encoded | None = None,
    ) -> list[int]:  # fmt: skip
        """The ``n`` ids the model writes after ``ids``, or fewer (it stops after one of
        ``stop``), with transformers' cache of keys and values: greedy at temperature 0 (the
        first of equal logits), else drawn from softmax(logits / T) by a CPU generator seeded
        with ``seed``, as the native engine writes (``engine.generate``). With ``images`` (a
        vision-language model's text and images, ``ids`` its ids) the first forward reads them
        (the pixels, grids, masks and token types), the later ones the cache alone, as
        transformers' ``generate`` runs them; it never writes the image token."""
        if not (self.cfg.causal and self.cfg.unembed):
            raise ValueError("model: only a causal model with an unembedding writes tokens")
        if not ids:
            raise ValueError("ids: needs at least one token to continue")
        if not temperature >= 0:
            raise ValueError(f"temperature: must be 0 (greedy) or more (got {temperature!r})")
        params = inspect.signature(self.hf.forward).parameters
        cache_arg = "cache" if "cache" in params else "past_key_values"  # transformers 5.2x+
        last = {"logits_to_keep": 1} if "logits_to_keep" in params else {}
        g = torch.Generator().manual_seed(seed)
        x = torch.tensor([ids], dtype=torch.long, device=self.device)  # (1, T)
        extra = self._inputs(ids, images)
        self._forget_positions()
        cache: Any = None
        out_ids: list[int] = []
        with torch.inference_mode():
            for _ in range(n):
                kwargs = {cache_arg: cache} if cache is not None else extra
                out = self.hf(input_ids=x, use_cache=True, **last, **kwargs)
                cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
                logits = out.logits[0, -1].float().cpu()  # (V,)
                if images is not None and images.image_token is not None:
                    # An image token written would stand for no image: the forward of the
                    # whole sequence (the trace) would have more of them than features.
                    logits[images.image_token] = -torch.inf
                if temperature == 0:
                    nxt = int(logits.argmax())
                else:
                    probs = torch.softmax(logits.double() / temperature, dim=-1)
                    nxt = int(torch.multinomial(probs, 1, generator=g))
                out_ids.append(nxt)
                if nxt in stop:
                    break
                # The new token alone: the cache holds the keys and values before it.
                x = torch.tensor([[nxt]], dtype=torch.long, device=self.device)  # (1, 1)
                if cache is None:  # a model that keeps no cache reads everything again
                    x = torch.tensor([ids + out_ids], dtype=torch.long, device=self.device)
                    extra = self._inputs(ids + out_ids, images)
        return out_ids

    def _inputs(self, ids: list[int], images: Encoded | None) -> dict[str, torch.Tensor]:
        """``images``' inputs for a forward on ``ids`` (``grown_inputs``)."""
        return grown_inputs(self.hf, ids, images, self.device, self.hf.dtype)

    def _forget_positions(self) -> None:
        """Drop what a model keeps of its last generation's positions (Qwen-VL's M-RoPE keeps
        ``rope_deltas``, the image's shift of the text's positions, for the cached steps), as
        ``generate`` resets it: the first forward sets it again from its own images."""
        for module in self.hf.modules():
            if getattr(module, "rope_deltas", None) is not None:
                module.rope_deltas = None


def grown_inputs(
    hf: Any, ids: list[int], images: Encoded | None, device: torch.device, dtype: torch.dtype
) -> dict[str, torch.Tensor]:
    """What the forward on ``ids`` reads besides them: ``images``' inputs on ``device`` (the
    pixels in ``dtype``), their per-token ones (token types) grown by the tokens ``ids`` has
    past ``images``' own, as transformers' ``generate`` grows them for the tokens it writes
    (the model's ``_update_model_kwargs_for_generation``, on ``hf``: PaliGemma's written tokens
    are its causal suffix, Qwen's text)."""
    if images is None or not images.inputs:
        return {}
    grown = len(ids) - len(images.ids)
    if grown < 0 or ids[: len(images.ids)] != images.ids:
        raise ValueError("ids: a text with images is continued from its own ids")
    inputs = to_device(images.inputs, device, dtype)
    if grown == 0:
        return inputs
    kept = hf._update_model_kwargs_for_generation({}, dict(inputs), num_new_tokens=grown)
    return {k: kept[k] for k in inputs}
