"""A vision-language model served natively: its language model in attnviz's engine (the family's
conversion of the text model), its vision tower and projector through transformers
(``tower.VisionPart``). What a served model reads of images (``registry.ImageReader``,
``RotaryIndexer``) is the transformers bridge's: the same processor, the same image blocks
(``bridge.multimodal.encode``), the same tower recording.

A text with images runs as transformers runs it: the image features (the model's own
``get_image_features``) are written into the image tokens' rows of the token vectors
(``hook_embed``'s output, by a forward hook held for the forward; unscaled, as transformers
writes them after scaling the text's rows), and the engine reads the model's ``Layout``
(``layout.vlm_layout``): M-RoPE's three indices, the spans its mask makes bidirectional.
Generation reads the pixels in its first step only; later steps run from the engine's
``KVCache``, each new token's rotary index the text's next (after the images' shift).
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from attnviz.capture import TraceTensors, capture_trace
from attnviz.capture.decompose import CleanRun, clean_run, recording, recording_bytes
from attnviz.engine.layout import Layout
from attnviz.engine.model import KVCache
from attnviz.errors import TraceError
from attnviz.pretrained.bridge.model import grown_inputs
from attnviz.pretrained.bridge.multimodal import Encoded, encode
from attnviz.pretrained.bridge.towers import mrope_positions, tower_layout
from attnviz.pretrained.folder import RECORD_BYTES, PretrainedModel
from attnviz.pretrained.native_vlm.layout import vlm_layout
from attnviz.pretrained.native_vlm.tower import VisionPart


@dataclass
class NativeVlm(PretrainedModel):
    """A native ``PretrainedModel`` (its language model) that reads images too: ``vision`` its
    tower and projector through transformers, ``processor`` the folder's."""

    vision: VisionPart | None = field(default=None, repr=False)
    processor: Any = field(default=None, repr=False)

    @property
    def reads_images(self) -> bool:
        return self.vision is not None and self.processor is not None

    def _vision(self) -> VisionPart:
        if self.vision is None or self.processor is None:
            raise TraceError(f"images: model {self.name!r} reads text only")
        return self.vision

    def encode(self, text: str, images: Sequence[Any]) -> tuple[Encoded, str]:
        """A text and its images (PIL, in order) as the model reads them
        (``multimodal.encode``), and the text with the model's placeholders."""
        hf = self._vision().hf
        return encode(self.processor, self.tokenizer, hf.config, text, images)

    def mrope(self, ids: list[int], images: Encoded | None = None) -> dict | None:
        """``meta.mrope`` of ``ids`` (with ``images``' inputs grown to them), from the model's
        own ``get_rope_index``: None when its rotary is not multimodal."""
        if self.vision is None:
            return None
        inputs = grown_inputs(self.vision.hf, ids, images, torch.device("cpu"), torch.float32)
        return mrope_positions(self.vision.hf, ids, inputs or None)

    # -- a text with images ------------------------------------------------------------------

    def _read(
        self, ids: list[int], images: Encoded
    ) -> tuple[torch.Tensor, Layout, torch.Tensor, list | None]:
        """The engine's input ids (1, T), the Layout, the images' features (N, C) and the
        tower's calls by layer for a forward on ``ids`` (``images``' own, and perhaps what the
        model wrote after them)."""
        vision = self._vision()
        cpu = grown_inputs(vision.hf, ids, images, torch.device("cpu"), torch.float32)
        try:
            layout = vlm_layout(vision.hf, ids, cpu, self.cfg, vision.first)
        except ValueError as exc:
            raise TraceError(f"images: model {self.name} cannot run them natively: {exc}") from exc
        if layout.positions is not None:
            layout = Layout(positions=layout.positions.to(self.device), spans=layout.spans)
        inputs = grown_inputs(vision.hf, ids, images, self.device, vision.dtype)
        features, calls = vision.features(inputs)
        x = torch.tensor([ids], dtype=torch.long, device=self.device)  # (1, T)
        vocab = self.cfg.vocab_size
        if vocab is not None:  # an image id past the table (its rows are the features')
            x = torch.where(x < vocab, x, torch.zeros_like(x))  # (1, T)
        return x, layout, features, calls

    @contextmanager
    def _writing(self, ids: list[int], image: int | None, features: torch.Tensor) -> Iterator[None]:
        """Forwards inside on ``ids`` read ``features`` in the rows of the ``image`` tokens (a
        forward hook on ``hook_embed``, the first registered: every capture reads its output
        after it); a forward on other tokens (a cached step) is left alone."""
        at = torch.tensor([i == image for i in ids], device=self.device)  # (T,)
        if int(at.sum()) != features.shape[0]:
            raise TraceError(
                f"images: {int(at.sum())} image tokens for {features.shape[0]} image features"
            )

        def put(_m: torch.nn.Module, _inp: tuple, out: torch.Tensor) -> torch.Tensor:
            if out.shape[1] != at.numel():
                return out
            out = out.clone()
            out[0, at] = features.to(device=out.device, dtype=out.dtype)  # (N, C) rows
            return out

        handle = self.model.hook_embed.register_forward_hook(put, prepend=True)  # first
        try:
            yield
        finally:
            handle.remove()

    def trace(
        self, ids: list[int], keep_qkv_bytes: int = -1, images: Encoded | None = None
    ) -> TraceTensors:
        """The engine's captures of ``ids`` (``PretrainedModel.trace``); with ``images`` (a
        text's images, ``ids`` its ids and perhaps what the model wrote after them) the image
        features in their tokens' rows, the model's Layout, and the vision tower's weights."""
        if images is None or not images.inputs:
            return super().trace(ids, keep_qkv_bytes)
        x, layout, features, calls = self._read(ids, images)
        capture = functools.partial(capture_trace, self.model, x, field="images",
                                    keep_qkv_bytes=keep_qkv_bytes, layout=layout)  # fmt: skip
        itemsize = self.model.param_dtype.itemsize
        with self._writing(ids, images.image_token, features):
            if recording_bytes(self.cfg, len(ids), itemsize) > RECORD_BYTES:
                tensors = capture()
                tensors.attribution = functools.partial(
                    self._clean_images, ids, x, images.image_token, features, layout
                )
            else:  # the attributions' clean run recorded on the way (PretrainedModel.trace)
                with recording(self.model) as rec:
                    tensors = capture()
                tensors.attribution = functools.partial(rec.run, tensors.states[-1], layout)
                tensors.attribution_bytes = rec.nbytes()
        if calls is not None:
            assert self.vision is not None
            tensors.vision = calls
            tensors.tower = tower_layout(self.vision.hf, images.blocks, images.inputs, calls[0])
        return tensors

    def _clean_images(
        self, ids: list[int], x: torch.Tensor, image: int | None, features: torch.Tensor,
        layout: Layout,
    ) -> CleanRun:  # fmt: skip
        """The attributions' clean run of a text with images (its own forward, the features
        written again), one forward at a time."""
        with self.lock, self._writing(ids, image, features):
            return clean_run(self.model, x, layout=layout)

    def continue_ids(
        self, ids: list[int], n: int, temperature: float = 0.0, seed: int = 0,
        stop: Collection[int] = (), images: Encoded | None = None,
    ) -> list[int]:  # fmt: skip
        """The ``n`` ids the model writes after ``ids``, or fewer (``engine.generate``'s rule:
        greedy at temperature 0, else drawn by a CPU generator seeded with ``seed``). With
        ``images`` the first step reads them (features, Layout); the later ones run the new
        token alone against the engine's cache, at the text's next rotary index. It never
        writes the image token."""
        if images is None or not images.inputs:
            return super().continue_ids(ids, n, temperature, seed, stop)
        cfg = self.cfg
        if not (cfg.causal and cfg.unembed):
            raise ValueError("model: only a causal model with an unembedding writes tokens")
        if not ids:
            raise ValueError("ids: needs at least one token to continue")
        if not temperature >= 0:
            raise ValueError(f"temperature: must be 0 (greedy) or more (got {temperature!r})")
        x, layout, features, _ = self._read(ids, images)
        T = len(ids)
        # The text after the prompt: index t at t + shift (M-RoPE's rope_deltas, PaliGemma's
        # count from 1), in every section.
        shift = 0 if layout.positions is None else int(layout.positions.max()) + 1 - T
        sections = len(cfg.rope_sections) if cfg.rope_sections else 1
        g = torch.Generator().manual_seed(seed)
        cache = KVCache()
        out: list[int] = []
        with torch.inference_mode():
            with self._writing(ids, images.image_token, features):
                h = self.model(x, cache=cache, layout=layout)  # (1, T, C)
            for _ in range(n):
                logits = self.model.logits(h[:, -1:])[0, -1].float().cpu()  # (V,)
                if images.image_token is not None and images.image_token < logits.numel():
                    logits[images.image_token] = -torch.inf  # it would stand for no image
                if temperature == 0:
                    nxt = int(logits.argmax())
                else:
                    probs = torch.softmax(logits.double() / temperature, dim=-1)
                    nxt = int(torch.multinomial(probs, 1, generator=g))
                out.append(nxt)
                if nxt in stop or len(out) == n:
                    break
                step = torch.tensor([[nxt]], dtype=torch.long, device=self.device)  # (1, 1)
                at = cache.length + shift
                positions = (
                    None if layout.positions is None
                    else torch.full((sections, 1), at, dtype=torch.long, device=self.device)
                    if cfg.rope_sections else torch.tensor([at], device=self.device)
                )  # fmt: skip
                h = self.model(step, cache=cache, layout=Layout(positions=positions))
        return out
