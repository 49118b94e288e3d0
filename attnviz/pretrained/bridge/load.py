"""Load a model folder with Hugging Face transformers (the optional ``transformers`` extra), check
on a probe what its attention records, and describe it to the rest of attnviz.

Only the folder's own files are read (``local_files_only``), only safetensors weights, and never
code from the folder (``trust_remote_code`` stays off).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open

from attnviz.engine import TransformerConfig
from attnviz.engine.config import window_fields
from attnviz.engine.device import DTYPES, dtype_name, memory_refusal, resolve_dtype
from attnviz.pretrained.bridge.head import Watch, head_path, mark, watching
from attnviz.pretrained.bridge.model import BridgedModel
from attnviz.pretrained.bridge.multimodal import mark_towers, read_processor, reads_images
from attnviz.pretrained.bridge.place import capacities, input_device, load_kwargs, placement_of
from attnviz.pretrained.bridge.record import (
    NAME,
    Mask,
    Recording,
    mask_of_hidden,
    recording,
    register,
)
from attnviz.pretrained.bridge.rule import RecordedRule
from attnviz.pretrained.folder import ModelFolderError, no_safetensors
from attnviz.pretrained.tokenize import TextTokenizer
from attnviz.settings import PROBE_MB, DeviceMap

log = logging.getLogger(__name__)

BRIDGE_INSTALL = "pip install 'attnviz[transformers]'"
# A model without a position table or a named context (ALiBi's BLOOM) reads at most this many.
DEFAULT_CONTEXT = 2048
# A model whose traces keep every weight (no q and k to recompute them from) reads at most as
# many tokens as fit this many bytes of weights.
NO_QK_WEIGHT_BYTES = 2**30
# Recomputed weights must equal the forward's within this (float32) for q and k to be kept.
RULE_TOLERANCE = 1e-5
# The load's probe (``_probe``): every layer on this many random tokens; past a window the config
# names, on this many more than the window, so that the last queries' windows cut.
PROBE_TOKENS = 24
PROBE_PAST = 4
# The config keys that name a window (``named_window``): transformers' sliding_window, GPT-Neo's
# window_size, ModernBERT's local_attention (both sides together), Longformer's
# attention_window (one per layer).
WINDOW_KEYS = ("sliding_window", "window_size", "local_attention", "attention_window")
# What a probe builds per query-key pair: each layer's weights of each head, as float32; or,
# reading the masks alone, the model's masks and the temporaries of reading one (``as_mask``).
WEIGHT_BYTES = 4
MASK_PAIR_BYTES = 32
# Why a family's attention does not go through AttentionInterface, where it is known.
_OWN_ATTENTION = {"bloom": "ALiBi", "mpt": "ALiBi"}
_ROPE_KEYS = (
    "rope_theta",
    "rope_parameters",
    "rope_scaling",
    "rotary_dim",
    "rotary_pct",
    "partial_rotary_factor",
    "rotary_emb_base",
)
_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "n_ctx")


def transformers_missing() -> str | None:
    """Why transformers cannot be imported here, or None when it can."""
    try:
        import transformers  # noqa: F401
    except ImportError as exc:
        return str(exc) or "transformers is not installed"
    return None


def _read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelFolderError(f"{path}: could not be read as JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise ModelFolderError(f"{path}: must hold a JSON object")
    return value


def _weight_files(folder: Path) -> list[Path]:
    single = folder / "model.safetensors"
    if single.is_file():
        return [single]
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        weight_map = _read_json(index).get("weight_map")
        if not isinstance(weight_map, dict):
            raise ModelFolderError(f"{index}: has no weight_map")
        return [folder / Path(str(s)).name for s in sorted(set(weight_map.values()))]
    raise no_safetensors(folder)


def _weight_bytes(files: list[Path]) -> tuple[dict[str, int], torch.dtype | None]:
    """The weights' bytes in each dtype they could be loaded in, and the checkpoint's floating
    dtype, from the files' headers alone."""
    numel, by_dtype = 0, dict[torch.dtype, int]()
    names = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}
    try:
        for path in files:
            with safe_open(path, framework="pt") as f:
                for key in f.keys():  # noqa: SIM118 (not a dict)
                    piece = f.get_slice(key)
                    n = 1
                    for side in piece.get_shape():
                        n *= side
                    numel += n
                    dt = names.get(piece.get_dtype())
                    if dt is not None:
                        by_dtype[dt] = by_dtype.get(dt, 0) + n
    except (SafetensorError, OSError) as exc:
        raise ModelFolderError(f"{files[0].parent}: the weights could not be read ({exc})") from exc
    checkpoint = max(by_dtype, key=by_dtype.__getitem__) if by_dtype else None
    return {k: numel * dt.itemsize for k, dt in DTYPES.items()}, checkpoint


def _model_class(config: Any) -> Any:
    """AutoModelForImageTextToText for a vision-language model, AutoModelForCausalLM for a
    causal language model, else AutoModel (an encoder's body)."""
    from transformers import AutoModel, AutoModelForCausalLM, AutoModelForImageTextToText
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    if reads_images(config):
        return AutoModelForImageTextToText
    archs = getattr(config, "architectures", None) or []
    if archs:
        causal = any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs)
    else:
        mt = config.model_type
        causal = (
            mt in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and mt not in MODEL_FOR_MASKED_LM_MAPPING_NAMES
        )
    return AutoModelForCausalLM if causal else AutoModel


_LOAD_ERRORS = (ValueError, KeyError, OSError, TypeError, ImportError, RuntimeError)


def _from_pretrained(
    auto: Any, folder: Path, config: Any, dtype: torch.dtype | None, placing: dict[str, Any]
) -> tuple[Any, dict]:
    """The folder's model with attnviz's attention function (``record.NAME``): whether its
    attention goes through it is found by running it (``_probe``), not from what its class
    says. A model whose code knows only its own implementations (GPT-Neo's table of attention
    classes) is loaded with eager attention."""
    kwargs = {
        "config": config,
        "local_files_only": True,
        "trust_remote_code": False,
        "use_safetensors": True,
        "dtype": dtype,
        "output_loading_info": True,
        **placing,
    }
    try:
        return auto.from_pretrained(folder, attn_implementation=NAME, **kwargs)
    except _LOAD_ERRORS as exc:
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        log.info("%s: not loaded with attnviz's attention function (%s); eager", folder.name, why)
    return auto.from_pretrained(folder, attn_implementation="eager", **kwargs)


def _context(config: Any) -> int | None:
    for key in _CONTEXT_KEYS:
        value = getattr(config, key, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _own_attention(model_type: str, config: Any) -> str:
    kind = _OWN_ATTENTION.get(model_type) or ("ALiBi" if getattr(config, "alibi", False) else None)
    what = f"its attention ({kind})" if kind else "its attention"
    return f"{what} does not go through transformers' AttentionInterface"


def _verify(records: Recording, attentions: list[torch.Tensor], n_layers: int) -> str | None:
    """None when the rule made of ``records`` gives every layer's weights back; else why not."""
    if not records:
        return None  # the caller says the attention does not go through the interface
    if len(records) != n_layers:
        return (
            f"its attention goes through transformers' AttentionInterface in {len(records)} "
            f"calls, not one per layer ({n_layers})"
        )
    rule = RecordedRule.of(records)
    for layer, r in enumerate(records):
        group = r.q.shape[0] // r.k.shape[0]
        k = r.k.repeat_interleave(group, dim=0)  # (H, S, hs) as repeat_kv
        weights = rule.weights(layer, rule.scores(layer, r.q, k))
        forward = attentions[layer]
        if weights.shape != forward.shape or (weights - forward).abs().max() > RULE_TOLERANCE:
            extra = f" ({', '.join(r.extras)})" if r.extras else ""
            return (
                f"its attention (layer {layer}) computes more than scaled q k^T, its mask and a "
                f"soft-cap{extra}, so its weights are not recomputed from q and k"
            )
    return None


def _describe(
    hf: Any, config: Any, records: Recording, attentions: list[torch.Tensor], width: int,
    windows: list[int | None],
) -> TransformerConfig:  # fmt: skip
    """The TransformerConfig that describes the model (never built): shapes from the probe,
    ``width`` its hidden states' (the residual stream's), ``windows`` each layer's."""
    config = config.get_text_config()  # a vision-language model's: its language model's
    L, H, C = len(attentions), attentions[0].shape[0], width
    if records:
        head_dim, kv = records[0].q.shape[-1], records[0].k.shape[0]
    else:
        head_dim = getattr(config, "head_dim", None) or C // H
        kv = H
    # Causal when no query gave any weight to a later key, in any head of any layer.
    causal = all(bool((torch.triu(a, diagonal=1) == 0).all()) for a in attentions)
    rule = RecordedRule.of(records) if records else None
    vocab = getattr(config, "vocab_size", None)
    n_ctx = _context(config) or DEFAULT_CONTEXT
    positional = "rope" if any(getattr(config, k, None) for k in _ROPE_KEYS) else "none"
    if getattr(config, "position_embedding_type", None) == "rotary":
        positional = "rope"
    if not records:  # every weight kept: as many tokens as fit NO_QK_WEIGHT_BYTES
        n_ctx = min(n_ctx, int((NO_QK_WEIGHT_BYTES / (4 * L * H)) ** 0.5))
    return TransformerConfig(
        d_model=C,
        n_layers=L,
        n_heads=H,
        head_dim=head_dim,
        n_kv_heads=kv,
        causal=causal,
        n_ctx=n_ctx,
        positional=positional,  # type: ignore[arg-type]
        residual=True,
        vocab_size=vocab if isinstance(vocab, int) and vocab > 0 else None,
        unembed=hf.get_output_embeddings() is not None and isinstance(vocab, int),
        attn_scale=rule.scaling() if rule is not None else None,
        attn_softcap=rule.softcap() if rule is not None else None,
        **window_fields(windows),  # each layer's, whether their sizes agree or not
    )


def _read_folder(folder: Path) -> tuple[dict, TextTokenizer]:
    """A Hugging Face folder's config.json and tokenizer, or a ModelFolderError saying what it
    lacks for the transformers backend."""
    if not folder.is_dir():
        raise ModelFolderError(f"{folder}: not a folder")
    if not (folder / "config.json").is_file():
        raise ModelFolderError(f"{folder}: no config.json (a Hugging Face model folder has one)")
    hf_json = _read_json(folder / "config.json")
    if hf_json.get("is_encoder_decoder"):
        raise ModelFolderError(
            f"{folder}: {hf_json.get('model_type')!r} is an encoder-decoder; the transformers "
            "backend serves models that read one text (a decoder or an encoder)"
        )
    if not (folder / "tokenizer.json").is_file():
        raise ModelFolderError(f"{folder}: no tokenizer.json (the tokenizers library needs one)")
    try:
        tokenizer = TextTokenizer.from_file(folder / "tokenizer.json")
    except Exception as exc:  # the tokenizers library raises plain Exceptions
        raise ModelFolderError(f"{folder}/tokenizer.json: could not be read ({exc})") from exc
    return hf_json, tokenizer


def _load_hf(folder: Path, chosen: torch.dtype, kwargs: dict) -> tuple[Any, Any]:
    """transformers' model of ``folder`` in ``chosen``, and its config; a ModelFolderError when
    transformers cannot load it or the checkpoint lacks a weight it needs."""
    import transformers

    register()
    transformers.utils.logging.disable_progress_bar()
    try:
        config = transformers.AutoConfig.from_pretrained(
            folder, local_files_only=True, trust_remote_code=False
        )
        if getattr(config, "is_encoder_decoder", False):
            raise ValueError(f"{config.model_type!r} is an encoder-decoder, which reads two texts")
        hf, info = _from_pretrained(_model_class(config), folder, config, chosen, kwargs)
    except _LOAD_ERRORS as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelFolderError(
            f"{folder}: transformers {transformers.__version__} cannot load it ({first})"
        ) from exc
    # transformers starts a weight the checkpoint lacks from random numbers: refused, but for
    # an encoder's pooler, which no trace reads.
    lacking = [k for k in info.get("missing_keys") or () if "pooler" not in k.split(".")]
    if lacking:
        raise ModelFolderError(
            f"{folder}: the checkpoint lacks {len(lacking)} of the weights transformers' "
            f"{type(hf).__name__} needs (e.g. {sorted(lacking)[0]!r}); they would be random"
        )
    return hf, config


def load_bridged(
    folder: Path,
    device: torch.device,
    name: str | None = None,
    origin: str | None = None,
    dtype: str = "auto",
    device_map: DeviceMap = "none",
    max_memory: Mapping[int | str, int] | None = None,
    offload_folder: Path | None = None,
    probe_bytes: int = PROBE_MB * 2**20,
) -> BridgedModel:
    """Load ``folder`` with transformers (eager attention, recorded), check what its attention
    records on a probe, and describe it. A folder transformers cannot load is a
    ModelFolderError naming the folder and the reason.

    With a ``device_map`` other than "none", accelerate places the layers (``max_memory``:
    each device's bytes, GPU indices as ints; ``offload_folder``: the disk), and the memory
    check counts the room of those devices together (``place.capacities``). The probe builds
    at most ``probe_bytes`` of attention (``_probe``)."""
    folder = Path(folder).expanduser().resolve()
    hf_json, tokenizer = _read_folder(folder)
    model_type = hf_json.get("model_type")
    weights, checkpoint = _weight_bytes(_weight_files(folder))
    label = name or folder.name
    chosen = resolve_dtype(dtype, device, checkpoint)
    room = None if device_map == "none" else capacities(max_memory, offload_folder)
    refusal = memory_refusal(label, weights, chosen, device, room)
    if refusal is not None:
        if room is not None and "disk" not in room:
            refusal += "; or --offload-folder FOLDER keeps on disk the layers that fit nowhere"
        raise ModelFolderError(f"{folder}: {refusal}")
    missing = transformers_missing()
    if missing is not None:
        raise ModelFolderError(
            f"{folder}: the transformers backend needs transformers ({missing}); {BRIDGE_INSTALL}"
        )
    import transformers

    hf, config = _load_hf(folder, chosen, load_kwargs(device_map, max_memory, offload_folder))
    if device_map != "none":
        # Where the inputs go. All on one device, transformers keeps no hf_device_map.
        held = next((p.device for p in hf.parameters() if p.device.type != "meta"), device)
        device = input_device(placement_of(hf, 0, held))
        hf.eval()
    else:
        hf = hf.to(device).eval()
    processor = None
    if reads_images(config):
        processor = read_processor(folder)
        mark_towers(hf)
    model = BridgedModel(
        name=label,
        family=str(model_type or config.model_type),
        source=folder,
        origin=origin or f"folder {folder.name}",
        cfg=TransformerConfig(d_model=1),  # replaced below, from the probe
        hf=hf,
        tokenizer=tokenizer,
        device=device,
        eos_ids=_eos_ids(hf_json),
        processor=processor,
    )
    _probe(model, config, probe_bytes)
    if model.cfg.vocab_size is not None and tokenizer.vocab_size > model.cfg.vocab_size:
        raise ModelFolderError(
            f"{folder}: the tokenizer has {tokenizer.vocab_size} tokens but the model's "
            f"embedding table only {model.cfg.vocab_size} rows"
        )
    cfg = model.cfg
    model.placed = placement_of(hf, cfg.n_layers, device)
    spread = sorted(set(model.placed["layers"]))
    log.info(
        "loaded %s (%s through transformers %s, %d layers x %d heads, d_model %d, %s%s) from %s "
        "on %s",
        label,
        model.family,
        transformers.__version__,
        cfg.n_layers,
        cfg.n_heads,
        cfg.d_model,
        dtype_name(chosen),
        "" if model.no_qk is None else f"; no queries or keys: {model.no_qk}",
        folder,
        device if spread == [str(device)] else f"{', '.join(spread)} (layers; inputs on {device})",
    )
    return model


@dataclass
class ProbeRun:
    """One forward of the probe: its output, what the attention function recorded, each
    layer's weights (H, T, S) and what the model did after its last block."""

    out: Any
    records: Recording
    attentions: list[torch.Tensor]
    watch: Watch


def _probe_ids(model: BridgedModel, vocab: int, length: int) -> torch.Tensor:
    """``length`` random ids (seeded), none an image's placeholder: (1, T) on the model's
    device."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (1, length), generator=g)  # (1, T)
    if model.processor is not None:  # text only: no id an image's features would replace
        special = model.tokenizer.special_ids
        ordinary = torch.tensor([i for i in range(vocab) if i not in special])
        ids = ordinary[ids % len(ordinary)]  # (1, T)
    return ids.to(model.device)


def _run_probe(model: BridgedModel, ids: torch.Tensor) -> ProbeRun:
    """The model on ``ids`` with every layer's weights and hidden states, recorded."""
    # The probe asks for the weights either way: the rule is checked against them. Whether the
    # attention goes through the interface is whether the attention function recorded calls.
    with (
        torch.inference_mode(),
        recording(device=model.device) as records,
        watching(model.hf) as watch,
    ):
        out = model.hf(
            input_ids=ids, output_hidden_states=True, output_attentions=True, use_cache=False
        )
    attentions = [a[0] for a in out.attentions] if out.attentions is not None else []
    if not attentions or any(a is None for a in attentions):
        raise ModelFolderError(
            f"{model.source}: transformers gives no attention weights for {model.family!r} "
            "(output_attentions), so there is nothing to show"
        )
    if len(out.hidden_states) != len(attentions) + 1:
        raise ModelFolderError(
            f"{model.source}: transformers gives {len(out.hidden_states)} hidden states for "
            f"{len(attentions)} layers (expected one per layer and the embeddings)"
        )
    attentions = [a.to(model.device) for a in attentions]  # one device (a device map's first)
    return ProbeRun(out, records, attentions, watch)


def named_window(config: Any) -> tuple[str, int] | None:
    """The largest window a (text) config names, and the key that names it (``WINDOW_KEYS``);
    None when it names none. Only how far the probe must read: which layers slide, and how,
    is read from the masks the model applies."""
    found: list[tuple[int, str]] = []
    for key in WINDOW_KEYS:
        values: list[Any] = []
        for value in config_values(config, key):
            values += value if isinstance(value, list | tuple) else [value]
        found += [(v, key) for v in values
                  if isinstance(v, int) and not isinstance(v, bool) and v > 0]  # fmt: skip
    if not found:
        return None
    size, key = max(found)
    return key, size


def config_values(config: Any, key: str) -> list[Any]:
    """``key`` of a (text) config: its value, or each layer's where the config keeps it per
    layer (transformers' ``per_layer_config``: NeoMME's short and long windows), where the
    config refuses to say one value for all."""
    if getattr(config, "is_heterogeneous", False) and key in (config.per_layer_attributes or ()):
        return [getattr(layer, key, None) for layer in config.per_layer_config]
    return [getattr(config, key, None)]


def probe_lengths(config: Any) -> tuple[int, int, tuple[str, int] | None]:
    """How many tokens the load's probe reads of a model of (text) ``config``: every layer on
    a few, and, past the window its config names (``named_window``, the third), on a few more
    than it, so that each layer's window cuts; at most its context."""
    context = _context(config) or DEFAULT_CONTEXT
    short = min(context, PROBE_TOKENS)
    named = named_window(config)
    # A window as long as the context never cuts (no text is longer): nothing to see past it.
    if named is not None and named[1] >= context:
        named = None
    need = short if named is None else min(context, max(short, named[1] + PROBE_PAST))
    return short, need, named


def _masks_read(model: BridgedModel, ids: torch.Tensor, n_layers: int) -> list[Mask]:
    """Each layer's mask on ``ids``, the attention not computed (``Recording.masks_only``): no
    weights built, whatever the length."""
    with torch.inference_mode(), recording(device=model.device, masks_only=True) as records:
        model.hf(input_ids=ids, use_cache=False)
    if len(records.masks_read) != n_layers:
        raise ModelFolderError(
            f"{model.source}: its attention function was called {len(records.masks_read)} "
            f"times on {ids.shape[1]:,} tokens, not once per layer ({n_layers}), so its "
            "windows cannot be read from its masks"
        )
    return records.masks_read


def _weights_masks(attentions: list[torch.Tensor]) -> list[Mask]:
    """Each layer's mask as its weights say (a model whose masks are its own code's, GPT-Neo's
    and BLOOM's): the keys every head gives exactly nothing, as a rule where one describes
    them (``mask_of_hidden``)."""
    return [mask_of_hidden((a == 0).all(0)) for a in attentions]  # (T, S): hidden from all


def _windows(model: BridgedModel, masks: list[Mask]) -> list[int | None]:
    """Each layer's window of ``masks``; a layer whose mask hides keys no causal rule or window
    describes (chunked attention) shows none, and the log says so."""
    for layer, mask in enumerate(masks):
        if mask.hidden is not None:
            log.warning("%s: layer %d hides keys no causal rule or window describes; its "
                        "window is not shown", model.name, layer)  # fmt: skip
    return [m.window for m in masks]


def _over_cap(
    model: BridgedModel, named: tuple[str, int], need: int, cost: int, cap: int, masks: bool
) -> ModelFolderError:
    key, size = named
    what = (
        "of masks (its attention not computed)"
        if masks
        else "of attention weights (every layer's: its attention does not go through "
        "transformers' AttentionInterface once per layer, so its masks are not read alone)"
    )
    return ModelFolderError(
        f"{model.source}: its config names a window ({key} {size:,}); which keys it hides is "
        f"read on a probe of {need:,} tokens, which would build "
        f"{cost / 2**20:,.0f} MB {what}, over the probe's cap of {cap / 2**20:,.0f} MB "
        "(ATTNVIZ_PROBE_MB raises it)"
    )


def _probe(model: BridgedModel, config: Any, probe_bytes: int = PROBE_MB * 2**20) -> bool:
    """Run the model on random ids: which layers' attention the interface records (none: its
    attention is its own code), whether the recorded rule gives the forward's weights back,
    the shapes and windows that describe it (``model.cfg``, ``model.no_qk``), and how it makes
    its logits (``head.head_path``, kept on the model). True when the attention function was
    called.

    Every layer runs on ``PROBE_TOKENS``; past a window the config names, on ``PROBE_PAST``
    tokens more than it, so that the windows cut: every layer's weights again where they fit
    ``probe_bytes``, else the masks alone (no attention computed) for a model whose attention
    goes through the interface; a window neither fits is refused, saying so."""
    text_config = config.get_text_config()  # a vision-language model's: its language model's
    vocab = getattr(text_config, "vocab_size", None) or model.tokenizer.vocab_size
    short, need, named = probe_lengths(text_config)
    run = _run_probe(model, _probe_ids(model, vocab, short))
    L, H = len(run.attentions), run.attentions[0].shape[0]
    windows = None
    if need > short:
        assert named is not None
        every = L * H * need * need * WEIGHT_BYTES  # every layer's weights
        if every <= probe_bytes:
            run = _run_probe(model, _probe_ids(model, vocab, need))
        elif len(run.records) == L:  # one call per layer: its masks tell its windows
            masks = need * need * MASK_PAIR_BYTES
            if masks > probe_bytes:
                raise _over_cap(model, named, need, masks, probe_bytes, masks=True)
            windows = _windows(model, _masks_read(model, _probe_ids(model, vocab, need), L))
        else:
            raise _over_cap(model, named, need, every, probe_bytes, masks=False)
    records, attentions = run.records, run.attentions
    if windows is None:  # the masks the layers were given, else what their weights say
        said = [r.mask for r in records] if len(records) == L else _weights_masks(attentions)
        windows = _windows(model, said)
    reason = _verify(records, attentions, L)
    called = bool(records)
    if not called:
        reason = _own_attention(model.family, config)
    if reason is not None:
        records.clear()
    model.no_qk = reason
    width = run.out.hidden_states[0].shape[-1]
    model.cfg = _describe(model.hf, config, records, attentions, width, windows)
    logits = getattr(run.out, "logits", None)
    head = head_path(model.hf, run.watch, L, run.out.hidden_states[-1], logits)
    mark(model.hf, head)
    return called


def _eos_ids(hf: dict) -> tuple[int, ...]:
    """config.json's eos_token_id: one id, a list of them, or none."""
    eos = hf.get("eos_token_id")
    ids = eos if isinstance(eos, list) else [eos]
    return tuple(i for i in ids if isinstance(i, int) and not isinstance(i, bool) and i >= 0)
