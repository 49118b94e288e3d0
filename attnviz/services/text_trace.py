"""Run a pretrained model on a text and turn its captures into the API's trace."""

from __future__ import annotations

from contextlib import nullcontext

import torch

from attnviz.capture import ComputedTrace, TraceTensors, attention_meta
from attnviz.capture.fields import REGISTRY
from attnviz.capture.lens import Readout, bridged_readout, mlm_readout, native_readout
from attnviz.capture.vision import vision_meta
from attnviz.engine import Transformer
from attnviz.engine.ablate import HeadAblation
from attnviz.errors import TraceError
from attnviz.presets import SHOWCASE
from attnviz.pretrained.bridge.multimodal import Encoded, block_json
from attnviz.pretrained.folder import BACKEND_WORDS
from attnviz.pretrained.images import DEFAULT_MAX_BYTES
from attnviz.pretrained.native import alphabet, characters_of, named_each, unknown_characters
from attnviz.pretrained.registry import (
    ImageReader,
    Knockouts,
    ModelRegistry,
    RotaryIndexer,
    ServedModel,
)
from attnviz.pretrained.tokenize import Tokens
from attnviz.schemas.models import ModelInfo, Placement
from attnviz.schemas.trace import Generate, TextTraceRequest
from attnviz.services import heap
from attnviz.services.images import request_images
from attnviz.training.shipped import SHIPPED_NAME

EXAMPLES = [
    "I sat on the river bank",
    "I went to the investment bank",
    SHOWCASE,
]


class ModelNotFound(LookupError):
    """A model name the server does not have; the message lists the ones it has."""


def token_cap(model: ServedModel, server_cap: int | None) -> int:
    """The most tokens a text may have: the model's positions, or the server's cap if lower."""
    cap = model.cfg.n_ctx
    return cap if server_cap is None else min(cap, server_cap)


def model_info(model: ServedModel, server_cap: int | None) -> ModelInfo:
    cfg = model.cfg
    return ModelInfo(
        name=model.name,
        family=model.family,
        layers=cfg.n_layers,
        heads=cfg.n_heads,
        d_model=cfg.d_model,
        head_dim=cfg.d_head,
        kv_heads=cfg.kv_heads,
        causal=cfg.causal,
        max_tokens=token_cap(model, server_cap),
        model_max_tokens=cfg.n_ctx,
        device=str(model.device),
        placement=placement(model),
        source=model.origin,
        run=model.run,
        title=model.title,
        characters=characters_of(model.tokenizer.tok),
        created=model.created,
        named=model.named,
        examples=model.examples,
        backend=model.backend,
        reads_images=model.reads_images,
        ablate_refused=ablate_refused(model),
    )


def predicting(models: list[ServedModel]) -> str | None:
    """The model a page offers where the chosen one gives no predictions: the character model
    that ships with attnviz, else the first causal one of ``models``; None when none is."""
    causal = [m for m in models if m.cfg.causal]
    shipped = [m for m in causal if m.name == SHIPPED_NAME and m.run is None]
    first = next(iter(shipped or causal), None)
    return None if first is None else first.name


def placement(m: ServedModel) -> Placement:
    """Where ``m``'s embedding, layers and head live (all on its device without a device
    map)."""
    return Placement.model_validate(m.placement)


def ablate_refused(m: ServedModel) -> str | None:
    """Why the model's heads cannot be knocked out (a trace's ``ablate`` is refused), or None:
    the engine's hooks, or the bridge's attention function for a model whose attention goes
    through transformers' AttentionInterface, knock them out."""
    knock = m.knockouts
    return knock if isinstance(knock, str) else None


def spoken(m: ServedModel) -> str:
    """A model as a sentence names it, as the page does: a trained run's by its title, what it
    is ("induction, 2 layers") or the name its owner gave it, in quotes (never its id); the
    shipped model by its title; any other by its name."""
    if m.run is not None:
        return f"\u201c{m.title or 'a trained model'}\u201d"
    return m.title or m.name


def find_model(registry: ModelRegistry, name: str) -> ServedModel:
    model = registry.get(name)
    if model is None:
        # Trained runs' models are not named: their names are their runs' ids, capabilities.
        served = [n for n, m in registry.models.items() if m.run is None]
        have = ", ".join(served) or "none; see docs/models.md to add one"
        raise ModelNotFound(f"model: no model named {name!r} (available: {have})")
    return model


def readout_of(m: ServedModel, ids: list[int]) -> Readout | None:
    """How the trace's hidden states become next-token scores: the engine's final norm and
    unembedding, or transformers' (``attnviz.capture.lens``); None for a model that predicts no
    next token."""

    def label(token_ids: list[int]) -> list[str]:
        return m.tokenizer.label_ids(token_ids)[0]

    model, hf = getattr(m, "model", None), getattr(m, "hf", None)
    head = getattr(m, "mlm", None)
    if isinstance(model, Transformer) and head is not None and not m.cfg.causal:
        vocab = m.tokenizer.tok.get_vocab(with_added_tokens=True)
        masks = frozenset(vocab[t] for t in ("[MASK]", "<mask>") if t in vocab)
        return mlm_readout(head, head.vocab, ids, label, masks)
    if isinstance(model, Transformer):
        return native_readout(model, ids, label)
    if hf is not None:
        return bridged_readout(hf, m.cfg.causal, ids, label)
    return None


def no_predictions(m: ServedModel, readout: Readout | None) -> dict[str, str]:
    """``unavailable`` entries for top_k and lens when the model cannot give them, with why."""
    if readout is not None:
        return {}
    if not m.cfg.causal:
        how = "its checkpoint has no" if m.backend == "native" else "attnviz reads no"
        why = (
            f"model {spoken(m)} is an encoder: it predicts no next token, and {how} "
            "masked-language-model head"
        )
    else:
        why = f"model {spoken(m)} has no unembedding or final norm attnviz can read"
    return {name: f"{name}: {why}" for name in REGISTRY.needing("readout")}


def no_attributions(m: ServedModel, tensors: TraceTensors) -> dict[str, str]:
    """``unavailable`` entries for the attributions when the model cannot give them, with why."""
    if tensors.attribution is None:
        why = (
            f"a model served through {BACKEND_WORDS[m.backend]} keeps its norms and heads in "
            "its own modules: the attributions decompose the native engine's stream"
        )
        return {name: f"{name}: {why}" for name in REGISTRY.needing("clean run")}
    if not m.cfg.unembed:
        why = f"model {spoken(m)} has no unembedding: it predicts no next token"
        return {"logit_attribution": f"logit_attribution: {why}"}
    return {}


def _ids(m: ServedModel, text: str, field: str, cap: int) -> list[int]:
    """The token ids of ``text``, or a TraceError naming ``field``."""
    try:
        ids = list(m.tokenizer(text).ids)
    except Exception as exc:  # the tokenizers library raises plain Exceptions
        raise TraceError(f"{field}: the tokenizer could not read it ({exc})") from exc
    if not ids:
        raise TraceError(f"{field}: the tokenizer made no tokens of it")
    if len(ids) > cap:
        raise TraceError(f"{field}: {len(ids)} tokens exceed the cap of {cap}")
    return ids


def _knockouts(req: TextTraceRequest, m: ServedModel) -> Knockouts:
    """What knocks out the model's heads, once each head ``req.ablate`` names is checked
    against the model (a TraceError naming it)."""
    knock = m.knockouts
    if isinstance(knock, str):
        raise TraceError(f"ablate: {knock}")
    cfg = m.cfg
    for i, a in enumerate(req.ablate):
        if a.layer >= cfg.n_layers:
            raise TraceError(
                f"ablate[{i}].layer: {a.layer} is past model {spoken(m)}'s {cfg.n_layers} layers "
                f"(0 to {cfg.n_layers - 1})"
            )
        if a.head >= cfg.n_heads:
            raise TraceError(
                f"ablate[{i}].head: {a.head} is past model {spoken(m)}'s {cfg.n_heads} heads "
                f"(0 to {cfg.n_heads - 1})"
            )
    return knock


def _unreadable(m: ServedModel, text: str, exc: Exception) -> TraceError:
    """Why the model's tokenizer could not read ``text``: the characters it has no token for,
    else the tokenizer's own words."""
    unknown = unknown_characters(m.tokenizer.tok, text)
    if unknown:
        return TraceError(
            f"text: the model {spoken(m)} has no token for {named_each(unknown)}; it reads "
            f"only {alphabet(''.join(m.tokenizer.tok.get_vocab()))}"
        )
    return TraceError(f"text: the tokenizer could not read it ({exc})")


def _over_cap(m: ServedModel, server_cap: int | None, what: str) -> str:
    cap, server = (
        token_cap(m, server_cap),
        "" if server_cap is None else f", this server {server_cap}",
    )
    return f"{what} exceed the cap of {cap} (model {spoken(m)} allows {m.cfg.n_ctx}{server})"


def check_text(
    req: TextTraceRequest, m: ServedModel, server_cap: int | None, max_image_bytes: int
) -> int:
    """Before a trace is computed (a job accepted): the refusals ``run_text_trace`` gives that
    the text and the model tell without a forward (its tokens over the cap, images for a
    text-only model, ``generate`` and ``ablate`` the model cannot take), each a TraceError
    naming the field. Returns the text's tokens and those it writes: with images, the trace
    has theirs too, known once they are decoded, on the compute thread (a query among them is
    bounded by the cap till then: ``TraceJobs.token_bound``)."""
    if req.images and not m.reads_images:
        # Refused either way: a bad image named first, as the trace names it (the decoding is
        # bounded by the caps, and only a request refused anyway pays it here).
        request_images(req, m, max_image_bytes)
    try:
        n = len(m.tokenizer(req.text).ids)
    except Exception as exc:  # the tokenizers library raises plain Exceptions
        raise _unreadable(m, req.text, exc) from exc
    cap = token_cap(m, server_cap)
    if n == 0 and not req.images:
        raise TraceError("text: the tokenizer made no tokens of it")
    if n > cap:
        raise TraceError(f"text: {_over_cap(m, server_cap, f'{n} tokens')}")
    steps = 0
    if req.generate is not None:
        steps = req.generate.steps
        if not (m.cfg.causal and m.cfg.unembed):
            raise TraceError(
                f"generate: model {spoken(m)} does not write text (it is an encoder, not a "
                "causal model with an unembedding)"
            )
        if n + steps > cap:
            raise TraceError(f"generate.steps: {n} tokens and {steps} more exceed the cap of {cap}")
    if req.ablate:
        _knockouts(req, m)
        for i, a in enumerate(req.ablate):
            if a.source is not None:
                _ids(m, a.source, f"ablate[{i}].source", cap)
    return n + steps


def head_ablations(
    req: TextTraceRequest, m: ServedModel, cap: int
) -> tuple[list[HeadAblation], Knockouts | None]:
    """The request's ``ablate``, each head checked against the model, with what knocks them out
    (None without any); a patch's head outputs read from one clean forward of its source text
    (under the model's lock)."""
    if not req.ablate:
        return [], None
    knock = _knockouts(req, m)
    sources: dict[str, dict[int, torch.Tensor]] = {}
    for i, a in enumerate(req.ablate):  # one forward per source text, for all its layers
        if a.source is not None and a.source not in sources:
            layers = [b.layer for b in req.ablate if b.source == a.source]
            ids = _ids(m, a.source, f"ablate[{i}].source", cap)
            sources[a.source] = knock.head_outputs(ids, layers)
    return [
        HeadAblation(a.layer, a.head, a.mode,
                     None if a.source is None else sources[a.source][a.layer][a.head])
        for a in req.ablate
    ], knock  # fmt: skip


def _tokens(m: ServedModel, req: TextTraceRequest, pictures: list) -> tuple[Tokens, Encoded | None]:
    """The text's tokens (with its images' where the model reads them), and the images as the
    model's processor encoded them; a text the tokenizer cannot read is refused, naming it."""
    try:
        if pictures and isinstance(m, ImageReader):
            images, _ = m.encode(req.text, [p.image for p in pictures])
            return images.tokens, images
        return m.tokenizer(req.text), None
    except TraceError:
        raise
    except Exception as exc:  # the tokenizers library raises plain Exceptions
        raise _unreadable(m, req.text, exc) from exc


def _over_token_cap(
    m: ServedModel, server_cap: int | None, n: int, images: Encoded | None
) -> TraceError:
    """The refusal of ``n`` tokens over the cap, naming the text, or the images that made
    most of them."""
    if images is None:
        return TraceError(f"text: {_over_cap(m, server_cap, f'{n} tokens')}")
    each = [b.stop - b.start for b in images.blocks]
    own, k = sum(each), len(each)
    split = f" ({' + '.join(map(str, each))})" if k > 1 else ""
    what = (
        f"the text and its images make {n} tokens ({own} image tokens{split} for "
        f"{k} image{'s' if k != 1 else ''} and {n - own} of the text)"
    )
    return TraceError(f"images: {_over_cap(m, server_cap, what)}")


def _generate(
    m: ServedModel, g: Generate, ids: list[int], cap: int, images: Encoded | None
) -> list[int]:
    """The tokens a causal model writes after ``ids``; refused for a model that writes none,
    or past the cap."""
    cfg, n = m.cfg, len(ids)
    if not (cfg.causal and cfg.unembed):
        raise TraceError(
            f"generate: model {spoken(m)} does not write text (it is an encoder, not a "
            "causal model with an unembedding)"
        )
    if n + g.steps > cap:
        raise TraceError(f"generate.steps: {n} tokens and {g.steps} more exceed the cap of {cap}")
    if images is not None and isinstance(m, ImageReader):
        # The first step reads the images; the trace is of them, the text and the new.
        return m.continue_ids(ids, g.steps, g.temperature, g.seed, stop=m.eos_ids, images=images)
    return m.continue_ids(ids, g.steps, g.temperature, g.seed, stop=m.eos_ids)


def _generated(m: ServedModel, g: Generate, start: int, new: list[int]) -> dict:
    """``meta.generated``: where the written tokens start, and how they were written."""
    return {
        "start": start,
        "steps": len(new),
        "asked": g.steps,
        "stopped": len(new) < g.steps or (bool(new) and new[-1] in m.eos_ids),
        "temperature": g.temperature,
        "seed": g.seed,
        "text": m.tokenizer.written_text(new),
    }


def run_text_trace(
    req: TextTraceRequest,
    registry: ModelRegistry,
    server_cap: int | None,
    keep_qkv_bytes: int = -1,
    max_image_bytes: int = DEFAULT_MAX_BYTES,
) -> ComputedTrace:
    """Every layer's attention, scores, q/k/v and hidden states of the model on the text; q, k
    and v kept when they take at most ``keep_qkv_bytes`` (always when negative), else
    recomputed a layer at a time when asked for. The request's images are decoded (each at
    most ``max_image_bytes``) and refused for a model that reads text only."""
    m = find_model(registry, req.model)
    pictures = request_images(req, m, max_image_bytes)
    toks, images = _tokens(m, req, pictures)
    n, cap = len(toks.ids), token_cap(m, server_cap)
    if n == 0:
        raise TraceError("text: the tokenizer made no tokens of it")
    if n > cap:
        raise _over_token_cap(m, server_cap, n, images)
    cfg = m.cfg
    all_ids, labels, special = list(toks.ids), list(toks.labels), list(toks.special)
    words: list[int | None] = list(toks.words)
    offsets = [list(o) for o in toks.offsets]
    generated = None
    total = n + (req.generate.steps if req.generate is not None else 0)
    # The forward's largest block: a layer's scores of every head, or its feed-forward's
    # hidden layer, or its q, k and v.
    # With images, the vision tower's blocks (a tile's patches, hundreds to thousands) dwarf a
    # short text's and their size is not the text model's: unknown, so roomy (its heaps reused
    # from one tower layer to the next instead of a fresh mapping each, page-faulted anew).
    largest = (
        None if images is not None
        else 4 * total * max(cfg.n_heads * total, cfg.hidden, 3 * cfg.d_model)
    )  # fmt: skip
    # One forward at a time on the shared model; with malloc's heaps reused from layer to layer
    # when its blocks are large and the text not long (heap.py).
    with m.lock, heap.roomy(total, largest):
        if req.generate is not None:
            new = _generate(m, req.generate, all_ids, cap, images)
            new_labels, new_special = m.tokenizer.label_ids(new)
            all_ids += new
            labels += new_labels
            special += new_special
            words += [None] * len(new)  # never merged with the text's words
            offsets += [[0, 0]] * len(new)
            generated = _generated(m, req.generate, n, new)
        ablations, knock = head_ablations(req, m, cap)
        with knock.ablating(ablations) if knock is not None else nullcontext():
            if images is not None and isinstance(m, ImageReader):
                tensors = m.trace(all_ids, keep_qkv_bytes, images=images)
            else:
                tensors = m.trace(all_ids, keep_qkv_bytes)
        tensors.ablations = ablations  # what each key adds through a knocked-out head
    if tensors.readout is None:  # (a remote model's trace reads out on its deployment)
        tensors.readout = readout_of(m, all_ids)
    meta = {
        "mode": "text",
        "tokens": labels,
        "axes": [f"x{i + 1}" for i in range(cfg.d_model)],
        "n": len(all_ids),
        "d": cfg.d_model,
        "layers": cfg.n_layers,
        "heads": cfg.n_heads,
        "head_dim": cfg.d_head,
        "device": str(m.device),
        "model": m.name,
        "family": m.family,
        # What ran it, and the arrays it cannot give with the reason (the page says so).
        "backend": m.backend,
        "unavailable": {
            **no_predictions(m, tensors.readout),
            **no_attributions(m, tensors),
            **m.unavailable,  # the model's own reasons first
            **tensors.lacking,
        },  # fmt: skip
        "causal": cfg.causal,
        "kv_heads": cfg.kv_heads,
        # rope and attention: how q and k make the weights (a remote model's, where unread)
        **attention_meta(cfg, getattr(m, "windows_unread", None)),
        "text": req.text,
        "token_ids": all_ids,
        "offsets": offsets,
        "special": special,
        "words": words,
        "generated": generated,
        "ablated": [
            {
                "layer": a.layer,
                "head": a.head,
                "mode": a.mode,
                "source": r.source,
                "patched": a.patched(len(all_ids)),
            }
            for a, r in zip(ablations, req.ablate, strict=True)
        ],  # fmt: skip
    }
    if images is not None:
        # Each image: where its tokens are and the grid they form, and the picture as decoded.
        meta["images"] = [
            {**block_json(b), **p.as_json()} for b, p in zip(images.blocks, pictures, strict=True)
        ]
        if tensors.vision is not None:
            # The vision tower's layers and heads, each tile's patch grid (the ``vision`` field).
            meta["vision"] = vision_meta(tensors.vision, tensors.tower or "no tiles were read")
    mrope = m.mrope(all_ids, images) if isinstance(m, RotaryIndexer) else None
    if mrope is not None:
        meta["mrope"] = mrope  # each position's temporal, height and width index
    if m.backend != "native":
        # transformers rotated q and k inside the model, by the model's own convention: they are
        # shown as its attention received them, and the page says so (meta["backend"]).
        meta["rope"] = None
    return ComputedTrace(meta, tensors)
