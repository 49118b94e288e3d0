"""Load a model folder in the standard Hugging Face layout into the engine.

A folder holds ``config.json`` (``model_type`` picks the family), ``model.safetensors`` (or shards
listed in ``model.safetensors.index.json``) and ``tokenizer.json``. Weights are memory-mapped with
``safetensors``, converted by the family's pure function and put into an engine built on the
meta device (``load_state_dict(assign=True)``): no tensor is copied but where a layout or a dtype
changes. No model library is involved.
"""

from __future__ import annotations

import bisect
import functools
import json
import logging
import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch
from safetensors import SafetensorError, safe_open

from attnviz.capture import TraceTensors, capture_trace
from attnviz.capture.decompose import CleanRun, clean_run, recording, recording_bytes
from attnviz.engine import Transformer, TransformerConfig
from attnviz.engine.ablate import EngineKnockouts
from attnviz.engine.device import DTYPES, dtype_name, memory_refusal, resolve_dtype
from attnviz.engine.placement import (
    Placement,
    PlacementError,
    capacities_of,
    free_capacities,
    part_bytes,
    place_model,
    placement_of,
    plan_layers,
)
from attnviz.pretrained.convert import FAMILIES, ConversionError
from attnviz.pretrained.mlm import MlmHead, read_mlm_head
from attnviz.pretrained.pages import FilePages
from attnviz.pretrained.tokenize import TextTokenizer

log = logging.getLogger(__name__)

# What runs a served model: attnviz's own engine (native, this loader's models) or Hugging Face
# transformers (the bridge, pretrained/bridge). One definition: the schemas' backend fields and
# every served model's ``backend`` read it.
Backend = Literal["native", "transformers", "ndif"]
# Each backend in words, as a sentence names what runs a model ("runs through ...").
BACKEND_WORDS: dict[Backend, str] = {
    "native": "attnviz's engine",
    "transformers": "transformers",
    "ndif": "an NDIF deployment",
}
# The backends whose models run elsewhere: their computations here mostly wait for the
# deployment, on threads of their own (services/compute.py's remote ones).
REMOTE_BACKENDS: frozenset[Backend] = frozenset({"ndif"})


class ModelFolderError(ValueError):
    """A folder that cannot be loaded; the message names the folder and what is wrong."""


@dataclass
class PretrainedModel:
    name: str
    family: str
    source: Path
    # Where the weights came from as clients are told: a package or a folder's name, no path.
    origin: str
    cfg: TransformerConfig
    model: Transformer = field(repr=False)
    tokenizer: TextTokenizer = field(repr=False)
    device: torch.device
    # The training run it comes from (attnviz's own runs), else None; what it is, in words
    # ("induction, 2 layers"), and when the run started (epoch seconds), for its name on a page.
    run: str | None = None
    title: str | None = None
    created: float | None = None
    named: bool = False  # the run's owner named it: ``title`` is that name (and the label)
    # Texts it reads, where the server's examples would not do (a character model's alphabet).
    examples: list[str] | None = None
    # Its end-of-text tokens (config.json's eos_token_id): generation stops after writing one.
    eos_ids: tuple[int, ...] = ()
    # Hooks are registered on the shared module during a capture: one forward at a time.
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # An encoder's masked-language-model head, when its checkpoint has one (pretrained/mlm.py).
    mlm: MlmHead | None = field(default=None, repr=False)

    # What the trace service reads of any model (registry.ServedModel; the transformers bridge,
    # pretrained/bridge, has the same): which backend runs it, what its traces lack, a trace,
    # a continuation.
    @property
    def backend(self) -> Backend:
        return "native"

    @property
    def unavailable(self) -> Mapping[str, str]:
        return {}  # the engine records every array

    @property
    def placement(self) -> dict:
        """Where its parts live: {"embed": device, "layers": [device per layer], "head":
        device}; one device for all unless loaded with a device_map (``engine.placement``)."""
        return placement_of(self.model, self.device).as_dict()

    @property
    def reads_images(self) -> bool:
        return False  # the engine's families read text only

    @property
    def knockouts(self) -> EngineKnockouts:
        """The engine's hooks on ``hook_z`` knock any head out."""
        return EngineKnockouts(self.model, self.device)

    def trace(self, ids: list[int], keep_qkv_bytes: int = -1) -> TraceTensors:
        """The engine's captures of one sequence (``capture_trace``): q, k and v kept when they
        take at most ``keep_qkv_bytes`` (always when negative), else recomputed per layer."""
        x = torch.tensor([ids], dtype=torch.long, device=self.device)  # (1, T)
        itemsize = self.model.param_dtype.itemsize
        if recording_bytes(self.cfg, len(ids), itemsize) > RECORD_BYTES:
            tensors = capture_trace(self.model, x, field="text", keep_qkv_bytes=keep_qkv_bytes)
            tensors.attribution = functools.partial(self._clean_run, x)  # another forward
            return tensors
        # A short text's forward records the attributions' clean run on its way (kept with
        # the trace, and counted in its size): the first attribution then runs no forward.
        with recording(self.model) as rec:
            tensors = capture_trace(self.model, x, field="text", keep_qkv_bytes=keep_qkv_bytes)
        tensors.attribution = functools.partial(rec.run, tensors.states[-1])
        tensors.attribution_bytes = rec.nbytes()
        return tensors

    def _clean_run(self, x: torch.Tensor) -> CleanRun:
        """The attributions' clean run of ``x`` (capture/decompose.py), its hooks on the
        shared module one forward at a time."""
        with self.lock:
            return clean_run(self.model, x)

    def continue_ids(
        self, ids: list[int], n: int, temperature: float = 0.0, seed: int = 0,
        stop: Collection[int] = (),
    ) -> list[int]:  # fmt: skip
        """What the model writes after ``ids`` (``engine.generate.continue_ids``)."""
        from attnviz.engine.generate import continue_ids

        return continue_ids(self.model, ids, n, temperature, seed, stop=stop)


# A trace's forward records the clean run of its attributions (``decompose.recording``) when
# that takes at most this many bytes (GPT-2 at 512 tokens: 77 MB, its norms' inputs half of
# it; MiniLM at 512: 21 MB); a longer text's first attribution runs a forward of its own.
RECORD_BYTES = 96 * 2**20


def _read_config(folder: Path) -> dict:
    path = folder / "config.json"
    if not path.is_file():
        raise ModelFolderError(f"{folder}: no config.json (a Hugging Face model folder has one)")
    try:
        hf = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelFolderError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(hf, dict):
        raise ModelFolderError(f"{path}: must hold a JSON object")
    return hf


def _open(path: Path) -> dict[str, torch.Tensor]:
    """Every tensor of one safetensors file, memory-mapped: each shares the file's pages (a
    private mapping: nothing is read until used, and nothing written goes back to the file)."""
    with safe_open(path, framework="pt") as f:
        return {key: f.get_tensor(key) for key in f.keys()}  # noqa: SIM118 (not a dict)


def _read_tensors(folder: Path) -> dict[str, torch.Tensor]:
    """The checkpoint's tensors, memory-mapped, from ``model.safetensors`` or the shards that
    ``model.safetensors.index.json`` lists."""
    single = folder / "model.safetensors"
    index = folder / "model.safetensors.index.json"
    try:
        if single.is_file():
            return _open(single)
        if index.is_file():
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            if not isinstance(weight_map, dict) or not all(
                isinstance(v, str) for v in weight_map.values()
            ):
                raise ValueError("weight_map must map tensor names to shard files")
            tensors: dict[str, torch.Tensor] = {}
            for shard in sorted(set(weight_map.values())):
                if Path(shard).name != shard:
                    raise ValueError(f"shard {shard!r} is not a file name in the folder")
                tensors.update(_open(folder / shard))
            missing = sorted(set(weight_map) - set(tensors))
            if missing:
                raise ValueError(f"the index lists {missing[0]!r}, which no shard holds")
            return tensors
    except (SafetensorError, OSError, KeyError, TypeError, ValueError) as exc:
        raise ModelFolderError(f"{folder}: the weights could not be read ({exc})") from exc
    raise no_safetensors(folder)


def no_safetensors(folder: Path) -> ModelFolderError:
    """Why ``folder`` has no weights to load: none at all, or only a pickle (never loaded)."""
    if (folder / "pytorch_model.bin").is_file():
        return ModelFolderError(
            f"{folder}: has pytorch_model.bin but no model.safetensors; only safetensors "
            "weights are loaded (convert with transformers, by the class that keeps every "
            f"weight, the output head too: {_saving_class(folder)}"
            ".from_pretrained(folder).save_pretrained(folder))"
        )
    return ModelFolderError(f"{folder}: no model.safetensors")


def _saving_class(folder: Path) -> str:
    """The transformers class that reads and writes every weight of ``folder``'s checkpoint:
    the one config.json's ``architectures`` names (it saved them), else the Auto class of the
    model's kind. Never ``AutoModel``, which drops a causal model's LM head; and not an Auto
    class with a head where the checkpoint may lack it (it would write a random one)."""
    try:
        hf = _read_config(folder)
    except ModelFolderError:
        hf = {}
    names = hf.get("architectures")
    if isinstance(names, list) and names and isinstance(names[0], str) and names[0].isidentifier():
        return f"transformers.{names[0]}"
    if "vision_config" in hf:
        return "AutoModelForImageTextToText"
    model_type = hf.get("model_type")
    family = FAMILIES.get(model_type) if isinstance(model_type, str) else None
    try:
        causal = family.config(hf).causal if family is not None else None
    except ConversionError:
        causal = None
    if causal is True:
        return "AutoModelForCausalLM"
    if causal is False:
        return "AutoModelForMaskedLM (AutoModel for an encoder saved without its head)"
    return "AutoModelForCausalLM (a causal model) or AutoModelForMaskedLM (a masked one)"


def _checkpoint_dtype(tensors: dict[str, torch.Tensor]) -> torch.dtype | None:
    """The floating dtype that holds most of the checkpoint's numbers."""
    count: dict[torch.dtype, int] = {}
    for t in tensors.values():
        if t.is_floating_point():
            count[t.dtype] = count.get(t.dtype, 0) + t.numel()
    return max(count, key=count.__getitem__) if count else None


def _weight_bytes(skeleton: Transformer) -> dict[str, int]:
    """The parameters' bytes in each dtype they could be loaded in."""
    n = sum(p.numel() for p in skeleton.parameters())
    return {name: n * dt.itemsize for name, dt in DTYPES.items()}


def _place(
    state: dict[str, torch.Tensor], dtype: torch.dtype, device: torch.device
) -> dict[str, torch.Tensor]:
    """The state in ``dtype`` on ``device``, each tensor converted at most once. A tensor already
    so is kept as it is (a memory-mapped one stays mapped, a transposed view stays a view). One
    that must be converted is written in the engine's layout, contiguous (a (d_in, d_out)
    matrix-vector product reads it fastest), in that same pass; tensors that share a storage (a
    tied unembedding and the token table, GPT-2's fused q|k|v) are converted once, storage and
    all, and stay views of it. ``state`` is emptied as it goes, so that each original can be
    freed once converted."""
    users: dict[int, int] = {}
    for t in state.values():
        ptr = t.untyped_storage().data_ptr()
        users[ptr] = users.get(ptr, 0) + 1
    out: dict[str, torch.Tensor] = {}
    placed: dict[int, torch.Tensor] = {}  # a shared storage's address -> its converted copy
    pages = FilePages()  # a converted tensor's file pages, given back (not read again)
    for name in list(state):
        t = state.pop(name)
        want = dtype if t.is_floating_point() else t.dtype
        if t.dtype == want and t.device == device:
            out[name] = t
            continue
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        if users[ptr] == 1:
            out[name] = torch.empty(t.shape, dtype=want, device=device).copy_(t)
            pages.release(t)
            continue
        if ptr not in placed:
            whole = torch.empty(0, dtype=t.dtype, device=t.device)
            whole.set_(storage, 0, (storage.nbytes() // t.element_size(),), (1,))  # (n,) all
            placed[ptr] = whole.to(device=device, dtype=want)
            pages.release(whole)
        out[name] = placed[ptr].as_strided(t.shape, t.stride(), t.storage_offset())
    if pages.released:
        log.debug("gave back %.1f MB of the checkpoint's pages", pages.released / 1e6)
    return out


def _mapped_bytes(params: Sequence[torch.Tensor], raw: dict[str, torch.Tensor]) -> int:
    """Bytes of ``params`` (each storage once) that lie in the checkpoint's own tensors: read in
    place from the file's mapping, not copied."""
    spans = sorted((t.data_ptr(), t.data_ptr() + t.nbytes) for t in raw.values() if t.nbytes)
    starts = [s for s, _ in spans]
    seen: set[int] = set()
    total = 0
    for p in params:
        ptr = p.data_ptr()
        if ptr in seen or p.device.type != "cpu":
            continue
        seen.add(ptr)
        i = bisect.bisect_right(starts, ptr) - 1
        if i >= 0 and ptr + p.nbytes <= spans[i][1]:
            total += p.nbytes
    return total


def load_folder(
    folder: Path,
    device: torch.device,
    name: str | None = None,
    origin: str | None = None,
    dtype: str = "auto",
    device_map: str = "none",
    max_memory: Mapping[int | str, str | int] | None = None,
    offload_folder: Path | None = None,
) -> PretrainedModel:
    """Read, convert and place on ``device`` the model in ``folder``. With ``device_map``
    ("auto", "balanced", "sequential"; "none": all on ``device``) its blocks are spread over the
    devices ``max_memory`` gives (device -> size; default: each GPU's and the CPU's free memory)
    by bytes (``engine.placement``), and ``device`` becomes the embedding's. ``dtype`` (``DType``):
    the parameters', ``auto`` the checkpoint's half precision on a GPU, float32 on a CPU. The
    weights are memory-mapped and each converted once; a float32 checkpoint loaded in float32 on
    the CPU computes from the file's pages where the family keeps a tensor's layout. A model
    that does not fit the device's free memory is refused (ModelFolderError) before any weight
    is read. ``origin`` is what clients are told of where it came from (default: the folder's
    name)."""
    folder = Path(folder).expanduser().resolve()
    if not folder.is_dir():
        raise ModelFolderError(f"{folder}: not a folder")
    hf = _read_config(folder)
    model_type = hf.get("model_type")
    family = FAMILIES.get(model_type) if isinstance(model_type, str) else None
    if family is None:
        raise ModelFolderError(
            f"{folder}: config.json model_type {model_type!r} is not supported "
            f"(supported: {', '.join(sorted(FAMILIES))})"
        )
    if not (folder / "tokenizer.json").is_file():
        raise ModelFolderError(f"{folder}: no tokenizer.json (the tokenizers library needs one)")
    try:
        tokenizer = TextTokenizer.from_file(folder / "tokenizer.json")
    except Exception as exc:  # the tokenizers library raises plain Exceptions
        raise ModelFolderError(f"{folder}/tokenizer.json: could not be read ({exc})") from exc
    label = name or folder.name
    try:
        cfg = family.config(hf)
    except ConversionError as exc:
        raise ModelFolderError(f"{folder}: {exc}") from exc
    raw = _read_tensors(folder)  # memory-mapped: nothing is read yet
    chosen = resolve_dtype(dtype, device, _checkpoint_dtype(raw))
    with torch.device("meta"):  # shapes only: the converted tensors become the parameters
        model = Transformer(cfg)
    plan = _plan(folder, model, chosen, device_map, max_memory, offload_folder)
    if plan is not None:
        device = torch.device("cpu")  # converted here, then each part moved to its device
    refusal = memory_refusal(label, _weight_bytes(model), chosen, device) if plan is None else None
    if refusal is not None:
        raise ModelFolderError(f"{folder}: {refusal}")
    try:
        state = family.weights(cfg, raw, hf)
    except ConversionError as exc:
        raise ModelFolderError(f"{folder}: {exc}") from exc
    if cfg.vocab_size is not None and tokenizer.vocab_size > cfg.vocab_size:
        raise ModelFolderError(
            f"{folder}: the tokenizer has {tokenizer.vocab_size} tokens but the model's "
            f"embedding table only {cfg.vocab_size} rows"
        )
    dtypes = sorted({dtype_name(t.dtype) for t in state.values()})
    model.load_state_dict(_place(state, chosen, device), strict=True, assign=True)
    left = [n for n, t in [*model.named_parameters(), *model.named_buffers()] if t.is_meta]
    if left:
        raise RuntimeError(f"the engine's {left[0]} was not loaded from the state dict")
    model.eval()
    if plan is not None:
        place_model(model, plan)
        device = torch.device(plan.embed)
    params = list(model.parameters())
    total = sum(p.nbytes for p in {p.data_ptr(): p for p in params}.values())
    mapped = _mapped_bytes(params, raw)
    # An encoder's masked-language-model head, when the checkpoint carries one (predictions).
    # On the head's device, where the states it reads are (a tied decoder: W_E there, a copy
    # when the model is placed with its table elsewhere).
    head = torch.device(plan.head) if plan is not None else device
    try:
        mlm = (read_mlm_head(family.name, hf, raw, model.W_E.to(head), chosen, head)
               if not cfg.causal else None)  # fmt: skip
    except ConversionError as exc:
        raise ModelFolderError(f"{folder}: {exc}") from exc
    del raw
    log.info(
        "loaded %s (%s, %d layers x %d heads, d_model %d) from %s on %s: weights %s as %s, "
        "%.1f MB, %.1f MB of it read in place from the file",
        label,
        family.name,
        cfg.n_layers,
        cfg.n_heads,
        cfg.d_model,
        folder,
        device,
        "/".join(dtypes),
        dtype_name(chosen),
        total / 1e6,
        mapped / 1e6,
    )
    return PretrainedModel(
        name=label,
        family=family.name,
        source=folder,
        origin=origin or f"folder {folder.name}",
        cfg=cfg,
        model=model,
        tokenizer=tokenizer,
        device=device,
        eos_ids=_eos_ids(hf),
        mlm=mlm,
    )


def _plan(
    folder: Path,
    skeleton: Transformer,
    dtype: torch.dtype,
    device_map: str,
    max_memory: Mapping[int | str, str | int] | None,
    offload_folder: Path | None,
) -> Placement | None:
    """Where ``skeleton``'s parts go under ``device_map`` (None: "none", all on one device); a
    model that fits on none of the devices is refused with the figures."""
    if device_map == "none":
        return None
    try:
        if offload_folder is not None:
            raise PlacementError(
                "offload_folder: the native engine computes from memory and offloads nothing to "
                "disk (the transformers backend does: --backend transformers)"
            )
        capacities = capacities_of(max_memory) if max_memory else free_capacities()
        blocks, embed, head = part_bytes(skeleton, dtype.itemsize)
        return plan_layers(blocks, embed, head, capacities, device_map)  # type: ignore[arg-type]
    except ValueError as exc:  # PlacementError too
        raise ModelFolderError(f"{folder}: {exc}") from exc


def _eos_ids(hf: dict) -> tuple[int, ...]:
    """config.json's eos_token_id: one id, a list of them, or none."""
    eos = hf.get("eos_token_id")
    ids = eos if isinstance(eos, list) else [eos]
    return tuple(i for i in ids if isinstance(i, int) and not isinstance(i, bool) and i >= 0)
