"""The NDIF backend's trace, executed by nnsight in this process (NDIF_HOST=local: the very
trace a deployment runs, ``block.run_plan``), equals attnviz's own engine on the same
checkpoint and the transformers bridge: attentions, hidden states, top-k and the lens, every
head's thumbnail, entropy, score ranges, queries and keys, the view under the token options.
Its answer's bytes are what ``plan_bytes`` says, and bounded for a 405B shape (meta device)."""

from __future__ import annotations

import math

import pytest
import torch

from attnviz.errors import TraceError
from attnviz.pretrained.bridge import load_bridged
from attnviz.pretrained.bridge.head import HEAD_TOLERANCE
from attnviz.pretrained.folder import load_folder
from attnviz.pretrained.ndif import open_ndif
from attnviz.pretrained.ndif.block import plan_bytes, read_call, reduce_layer
from attnviz.pretrained.registry import ModelRegistry
from attnviz.schemas.trace import TextTraceRequest, TraceQuery
from attnviz.services.parts import select
from attnviz.services.text_trace import run_text_trace
from tests.support.checkpoints import make_tiny_llama
from tests.support.checkpoints_bridge import make_tiny_gemma2

pytest.importorskip("nnsight")  # the extra attnviz[ndif]; in the dev install

CPU = torch.device("cpu")
TEXT = "the cat sat on the mat, and then the dog sat on the cat"


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> ModelRegistry:
    root = tmp_path_factory.mktemp("ndif")
    llama = make_tiny_llama(root / "tiny-llama")
    gemma2 = make_tiny_gemma2(root / "tiny-gemma2")
    return ModelRegistry([
        open_ndif(str(llama), "local"),
        load_folder(llama, CPU, name="native"),
        load_bridged(llama, CPU, name="bridged"),
        open_ndif(str(gemma2), "local"),
        load_bridged(gemma2, CPU, name="bridged-gemma2"),
    ])  # fmt: skip


def trace(models: ModelRegistry, name: str, text: str = TEXT):
    return run_text_trace(TextTraceRequest(model=name, text=text), models, None)


def arrays(t, **query) -> dict:
    return select(t, TraceQuery(**query)).arrays


def ndif_name(models: ModelRegistry, family: str) -> str:
    return next(n for n, m in models.models.items() if m.backend == "ndif" and m.family == family)


@pytest.mark.parametrize("oracle", ["native", "bridged"])
def test_the_ndif_trace_equals_the_engine_and_the_bridge(models, oracle):
    remote, local = trace(models, ndif_name(models, "llama")), trace(models, oracle)
    assert remote.meta["backend"] == "ndif" and remote.meta["tokens"] == local.meta["tokens"]
    for fields in ("attentions", "scores", "hidden_states", "entropy", "entropy_mean",
                   "score_range", "embeddings", "rollout", "head_mean", "head_max",
                   "distances"):  # fmt: skip
        a, b = arrays(remote, fields=fields)[fields], arrays(local, fields=fields)[fields]
        assert a.shape == b.shape, fields
        assert torch.allclose(a.double(), b.double(), atol=1e-4, rtol=0), fields
    qk = ("queries", "keys", "values")
    a, b = arrays(remote, fields=",".join(qk), layer=1), arrays(local, fields=",".join(qk), layer=1)
    for name in qk:
        assert torch.allclose(a[name], b[name].float(), atol=1e-4), name
    n = remote.tensors.n
    a = arrays(remote, fields="top_k,lens", pos_start=0, pos_count=n)
    b = arrays(local, fields="top_k,lens", pos_start=0, pos_count=n)
    for part in ("top_k", "lens"):
        for key, value in a[part].items():
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                assert torch.allclose(value, b[part][key], atol=1e-4), (part, key)
            elif isinstance(value, torch.Tensor):  # ids and ranks: the very tokens
                assert torch.equal(value, b[part][key]), (part, key)
            else:
                assert value == b[part][key], (part, key)


@pytest.mark.parametrize("options", [{}, {"hide_special": True}, {"merge_words": True}])
def test_thumbnails_made_on_the_deployment_are_this_servers(models, options):
    """Made there (max-pooled, 8-bit) from the same weights: the very values of the bridge's,
    and within one step of 8 bits of the engine's (its float32 differs in the last digits)."""
    remote, bridged, native = (trace(models, n) for n in
                               (ndif_name(models, "llama"), "bridged", "native"))  # fmt: skip
    for size in (0, 4):
        a = arrays(remote, fields="thumbs", thumb=size, **options)["thumbs"]
        b = arrays(bridged, fields="thumbs", thumb=size, **options)["thumbs"]
        c = arrays(native, fields="thumbs", thumb=size, **options)["thumbs"]
        assert a["pool"] == b["pool"] and a["values"].dtype == torch.uint8
        assert torch.equal(a["values"], b["values"])
        assert (a["values"].int() - c["values"].int()).abs().max() <= 1
        assert torch.allclose(a["scale"], c["scale"], atol=1e-5)
        view_a = arrays(remote, fields="view", layer=1, head=2, **options)["view"]
        view_c = arrays(native, fields="view", layer=1, head=2, **options)["view"]
        assert torch.allclose(view_a.double(), view_c.double(), atol=1e-5)


def test_a_soft_capped_windowed_model_reads_its_own_rule(models):
    """Gemma 2: soft-capped scores and a sliding window on every other layer, read from what
    each attention call was given; a text past the window shows it."""
    text = " ".join(["the cat sat on the mat"] * 6)
    remote = trace(models, ndif_name(models, "gemma2"), text)
    local = trace(models, "bridged-gemma2", text)
    rule = remote.tensors._rule()  # the first trace's
    assert rule is not None and rule.softcap() is not None
    assert any(r.mask.window is not None for r in rule.layers)
    for fields in ("attentions", "hidden_states", "score_range"):
        a, b = arrays(remote, fields=fields)[fields], arrays(local, fields=fields)[fields]
        assert torch.allclose(a.double(), b.double(), atol=1e-4), fields


def test_what_the_deployment_sends_is_what_plan_bytes_says(models):
    """The answers' tensors, counted, against ``plan_bytes`` of the same plans."""
    m = models.get(ndif_name(models, "llama"))
    assert m is not None
    ids = list(m.tokenizer(TEXT).ids)
    base = {"paths": m.paths.as_plan()}
    T, cfg = len(ids), m.cfg
    plans = [
        {"base": True},
        {"base": True, "rows": True},
        {"base": True, "states": True, "thumbs": {"groups": [[i] for i in range(T)], "hide": False,
                                                 "merge": False, "regroup": False, "pool": 4,
                                                 "side": math.ceil(T / 4)}},
        {"qkv": [1]},
        {"pca": True},
        {"predict": {"kind": "lens", "positions": [0, 3], "k": 5, "targets": [1, 2],
                     "vocab": cfg.vocab_size, "tolerance": HEAD_TOLERANCE}},
    ]  # fmt: skip
    for plan in plans:
        got = m._run(ids, {**base, **plan})
        sent = sum(t.numel() * t.element_size() for t in tensors_of(got))
        want = plan_bytes(plan, cfg.n_layers, cfg.n_heads, cfg.kv_heads, T, cfg.d_model,
                          cfg.d_head)  # fmt: skip
        assert sent <= want <= sent + 32 * cfg.n_layers + 64, plan


def tensors_of(x):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from tensors_of(v)
    elif isinstance(x, list | tuple):
        for v in x:
            yield from tensors_of(v)


@pytest.mark.parametrize("T", [512, 4096])
def test_a_405b_shapes_first_trace_is_a_few_megabytes_on_the_meta_device(T):
    """126 layers x 128 heads (8 key/value heads of 128), 512 and 4,096 tokens, the page's
    16-pixel thumbnails: one layer reduced by the very function the deployment runs, on meta
    tensors (shapes, no numbers), times the layers; against the 8 GB (541 GB) of its float16
    weights. Each head's mean entropy comes, not each row's (264 MB at 4,096 tokens)."""
    L, H, KV, hs = 126, 128, 8, 128
    meta = torch.device("meta")
    q = torch.empty(1, H, T, hs, device=meta, dtype=torch.bfloat16)
    k = torch.empty(1, KV, T, hs, device=meta, dtype=torch.bfloat16)
    out = (torch.empty(1, T, H, hs, device=meta, dtype=torch.bfloat16), None)

    class Op:
        inputs = ((None, q, k, k, None), {"scaling": hs**-0.5})

    class Attn:
        is_causal = True

    pool = math.ceil(T / 16)
    plan = {"base": True, "thumbs": {"groups": [[i] for i in range(T)], "hide": False,
                                     "merge": False, "regroup": False, "pool": pool,
                                     "side": math.ceil(T / pool)}}  # fmt: skip
    got = reduce_layer(plan, 0, read_call(Attn(), Op(), True), out)
    one = sum(t.numel() * t.element_size() for t in tensors_of(got))
    assert got["thumbs"].shape == (H, 16, 16) and got["thumbs"].dtype == torch.uint8
    assert got["entropy_mean"].shape == (H,) and "entropy" not in got
    total = L * one
    assert total <= plan_bytes(plan, L, H, KV, T, 16384, hs) <= total + 64 * L
    weights_fp16 = L * H * T * T * 2  # every head's weights, as float16
    assert weights_fp16 > 8e9 and total < 5 * 2**20 and total * 1000 < weights_fp16
    rows = plan_bytes({**plan, "rows": True}, L, H, KV, T, 16384, hs) - total
    assert abs(rows - L * H * T * 4) <= 64 * L  # each row's entropy, on a trip of its own
    # The trajectories' PCA made there: its coordinates, not the 4.2 GB (34 GB) of states.
    states = (L + 1) * T * 16384 * 4
    assert states > 4e9 and plan_bytes({"pca": True}, L, H, KV, T, 16384, hs) < 16 * 2**20


def test_greedy_generation_writes_the_engines_tokens(models):
    remote, native = models.get(ndif_name(models, "llama")), models.get("native")
    assert remote is not None and native is not None
    ids = list(native.tokenizer("the cat sat").ids)
    assert remote.continue_ids(ids, 6) == native.continue_ids(ids, 6)
    with pytest.raises(TraceError, match=r"^generate\.temperature"):
        remote.continue_ids(ids, 2, temperature=0.7)


def test_nnsight_leaves_every_other_object_as_it_was(models):
    """nnsight mounts ``save`` on every object when imported; the backend takes it off (a class
    defined later that checks its attributes, as anyio's do, would fail)."""
    from attnviz.pretrained.ndif.client import nnsight_module

    nnsight_module()
    assert not hasattr(object(), "save") and not hasattr(3, "save")


def test_the_trace_cache_counts_what_it_will_hold_here_not_the_deployments(models):
    """A 405B shape's remote trace: its hidden states (4.2 GB at 512 tokens) stay there, so
    the cache counts the few layers' q, k, v, the entropy rows and thumbnails it keeps."""
    from attnviz.engine import TransformerConfig
    from attnviz.pretrained.ndif.tensors import remote_tensors

    cfg = TransformerConfig(d_model=16384, n_layers=126, n_heads=128, head_dim=128,
                            n_kv_heads=8, causal=True, n_ctx=4096, vocab_size=128256)  # fmt: skip
    t = remote_tensors(cfg, list(range(512)), lambda plan: {}, {}, "ndif:405b", 16384)
    assert t.states.is_meta and "hidden_states" in t.lacking
    assert 100 * 2**20 < t.nbytes() < 256 * 2**20  # against 4.2 GB of states
    small = models.get(ndif_name(models, "llama"))
    assert small is not None
    ids = list(small.tokenizer(TEXT).ids)
    held = small.trace(ids)
    assert not held.lacking and held.nbytes() < 2**20


def test_a_big_models_trajectories_come_from_a_pca_made_on_the_deployment(models, monkeypatch):
    """States over ``STATES_BYTES`` stay on the deployment: the hidden states (and the rollout,
    which would bring every layer's q and k) are refused saying so, and the trajectories' PCA, computed there by the very function this server runs, equals
    the engine's."""
    from attnviz.pretrained.ndif import tensors

    monkeypatch.setattr(tensors, "STATES_BYTES", 0)
    remote, local = trace(models, ndif_name(models, "llama")), trace(models, "native")
    assert remote.tensors.states.is_meta
    with pytest.raises(TraceError, match="stay on the NDIF deployment"):
        arrays(remote, fields="hidden_states")
    assert "hidden_states" in remote.meta["unavailable"]
    assert "projection" not in remote.meta["unavailable"]
    # The rollout multiplies every layer's weights here: refused before any layer is brought.
    assert "rollout" in remote.meta["unavailable"]
    with pytest.raises(TraceError, match="rollout: it multiplies every layer's weights here"):
        arrays(remote, fields="rollout")
    for options in ({}, {"merge_words": True}):
        a = arrays(remote, fields="projection", **options)["projection"]
        b = arrays(local, fields="projection", **options)["projection"]
        assert a["components"] == b["components"] == 3 and a.keys() == b.keys()
        for key in ("mean", "axes", "explained_variance_ratio", "coords"):
            got, want = a[key], b[key]
            assert got.shape == want.shape and got.dtype == want.dtype, key
            assert torch.allclose(got.double(), want.double(), atol=1e-4, rtol=0), key


def test_a_big_traces_entropy_rows_come_on_a_trip_of_their_own(models, monkeypatch):
    """Rows over ``ROWS_BYTES``: the first trace brings each head's mean entropy alone (what the
    page's grid shows), and each row's comes when asked; both equal the engine's."""
    from attnviz.pretrained.ndif import tensors

    monkeypatch.setattr(tensors, "ROWS_BYTES", 0)
    remote, local = trace(models, ndif_name(models, "llama")), trace(models, "native")
    sent: list[dict] = []
    backend = remote.tensors.backend
    run = backend.run
    backend.run = lambda plan: sent.append(plan) or run(plan)
    a, b = (
        arrays(remote, fields="entropy_mean")["entropy_mean"],
        arrays(local, fields="entropy_mean"),
    )
    assert torch.allclose(a, b["entropy_mean"], atol=1e-5, rtol=0)
    assert len(sent) == 1 and not sent[0]["rows"] and remote.tensors.derived("entropy") is None
    rows = arrays(remote, fields="entropy")["entropy"]
    assert len(sent) == 2 and sent[1]["rows"]
    assert torch.allclose(rows, arrays(local, fields="entropy")["entropy"], atol=1e-5, rtol=0)


def test_what_a_requests_fields_want_comes_in_one_trip(models, monkeypatch):
    """Each field declares what it reads of the deployment (``TraceField.wants``): a request
    naming several (one layer's weights and values, every thumbnail, the rows' entropy, the
    trajectories' PCA, predictions) is answered after one trip there, the first trace's, with
    the engine's numbers; asked again, it takes none; another layer's weights take one more."""
    from attnviz.pretrained.ndif import tensors

    monkeypatch.setattr(tensors, "STATES_BYTES", 0)  # the PCA made there
    monkeypatch.setattr(tensors, "ROWS_BYTES", 0)  # the rows not with the first trace alone
    remote, local = trace(models, ndif_name(models, "llama")), trace(models, "native")
    sent: list[dict] = []
    backend = remote.tensors.backend
    run = backend.run
    backend.run = lambda plan: sent.append(plan) or run(plan)
    n = remote.tensors.n
    fields = "attentions,values,thumbs,entropy,projection,top_k"
    ask = {"fields": fields, "layer": 1, "pos_start": 0, "pos_count": n}
    a, b = arrays(remote, **ask), arrays(local, **ask)
    assert len(sent) == 1 and sent[0]["base"] and sent[0]["rows"] and sent[0]["pca"]
    assert sent[0]["qkv"] == [1] and "thumbs" in sent[0] and sent[0]["predict"]["kind"] == "top_k"
    for name in ("attentions", "values", "entropy"):
        assert torch.allclose(a[name].double(), b[name].double(), atol=1e-4), name
    assert (a["thumbs"]["values"].int() - b["thumbs"]["values"].int()).abs().max() <= 1
    for key in ("axes", "coords"):  # a PCA's axes are its own up to sign: compare |x|
        got, want = a["projection"][key].abs(), b["projection"][key].abs().float()
        assert torch.allclose(got, want, atol=1e-4), key
    assert torch.equal(a["top_k"]["ids"], b["top_k"]["ids"])
    assert torch.allclose(a["top_k"]["probs"], b["top_k"]["probs"], atol=1e-4)
    arrays(remote, **ask)
    assert len(sent) == 1  # all of it kept here
    arrays(remote, fields="attentions,scores,view", layer=0)
    assert len(sent) == 2 and sent[1]["qkv"] == [0] and "base" not in sent[1]


@pytest.mark.parametrize(
    "ablate",
    [
        [{"layer": 0, "head": 1, "mode": "zero"}, {"layer": 1, "head": 3, "mode": "zero"}],
        [{"layer": 0, "head": 2, "mode": "mean"}],
        [
            {"layer": 0, "head": 0, "mode": "patch", "source": "a dog ran"},
            {
                "layer": 1,
                "head": 2,
                "mode": "patch",
                "source": "the bird sang in the tree all day long",
            },
        ],
    ],
    ids=["zero", "mean", "patch"],
)
def test_knock_outs_made_on_the_deployment_equal_the_engines(models, ablate):
    """Each knocked head replaced in its layer's attention output there (the engine's rule,
    ``reduce.replace_head``): attentions, hidden states, top-k and a later part's q, k, v equal
    the engine's knocked trace; the trace's ``ablated`` says the same."""
    name = ndif_name(models, "llama")
    assert models.get(name).knockouts is models.get(name)  # no refusal: it knocks heads out
    req = {"text": TEXT, "ablate": ablate}
    remote = run_text_trace(TextTraceRequest(model=name, **req), models, None)
    local = run_text_trace(TextTraceRequest(model="native", **req), models, None)
    clean = trace(models, "native")
    assert remote.meta["ablated"] == local.meta["ablated"]
    for fields in ("attentions", "hidden_states", "entropy_mean"):
        a, b = arrays(remote, fields=fields)[fields], arrays(local, fields=fields)[fields]
        assert torch.allclose(a.double(), b.double(), atol=1e-4, rtol=0), fields
    moved = arrays(clean, fields="hidden_states")["hidden_states"]
    assert not torch.allclose(moved, arrays(local, fields="hidden_states")["hidden_states"])
    a = arrays(remote, fields="queries,keys", layer=1)
    b = arrays(local, fields="queries,keys", layer=1)
    assert torch.allclose(a["queries"], b["queries"].float(), atol=1e-4)
    n = remote.tensors.n
    a = arrays(remote, fields="top_k", pos_start=0, pos_count=n)["top_k"]
    b = arrays(local, fields="top_k", pos_start=0, pos_count=n)["top_k"]
    assert torch.equal(a["ids"], b["ids"]) and torch.allclose(a["probs"], b["probs"], atol=1e-4)
