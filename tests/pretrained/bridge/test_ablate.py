"""Knocking heads out of a model served through transformers (the bridge's attention function,
bridge/record.py) against transformers itself, the oracle, independent of that function: eager
attention with a forward pre-hook on the layer's output projection that writes over the head's
slice of its input. A zero-ablated head's hidden states and predictions are transformers' with
that slice zeroed; mean, with the slice's average over the text's positions (of the same,
hooked run); patch, with the source text's slice from transformers' own clean forward, position
by position. Families: GPT-2 (Conv1D projection), StarCoder2 (grouped-query attention, a sliding
window), Gemma 2 (soft-capped logits), ELECTRA (an encoder). BLOOM's attention does not go through
AttentionInterface: refused, saying why, in the trace and in /api/models. Over HTTP: 200, and
the cache keys on ablate."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.errors import TraceError
from attnviz.pretrained.bridge import BridgedModel
from attnviz.pretrained.registry import ModelRegistry, load_model
from attnviz.schemas.trace import TextTraceRequest, TraceQuery
from attnviz.services.parts import select
from attnviz.services.text_trace import ablate_refused, model_info, run_text_trace
from attnviz.settings import Settings
from tests.support.checkpoints import SENTENCES, make_tiny_gpt2
from tests.support.checkpoints_bridge import (
    hf_model,
    make_tiny_bloom,
    make_tiny_electra,
    make_tiny_gemma2,
    make_tiny_starcoder2,
)

CPU = torch.device("cpu")
TOL = 1e-5
TEXT = " ".join(SENTENCES[:2])  # 30-odd tokens: past StarCoder2's and Gemma 2's window of 8
SOURCE = SENTENCES[2]  # shorter than TEXT
KINDS = ["gpt2", "starcoder2", "gemma2", "electra"]

Fill = Callable[[torch.Tensor], torch.Tensor]


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("bridge-ablate")
    return {
        "gpt2": make_tiny_gpt2(root / "knock-gpt2", seed=3),
        "starcoder2": make_tiny_starcoder2(root / "knock-starcoder2", seed=4),
        "gemma2": make_tiny_gemma2(root / "knock-gemma2", seed=5),
        "electra": make_tiny_electra(root / "knock-electra", seed=6),
        "bloom": make_tiny_bloom(root / "knock-bloom", seed=7),
    }


@pytest.fixture(scope="module")
def served(folders) -> dict[str, BridgedModel]:
    out = {}
    for name, folder in folders.items():
        m = load_model(folder, CPU, backend="transformers")
        assert isinstance(m, BridgedModel) and m.backend == "transformers"
        out[name] = m
    return out


# ---- the oracle: transformers' eager forward, hooked before the output projection


def out_proj(hf, layer: int) -> torch.nn.Module:
    """The layer's output projection, whose input is every head's output side by side."""
    base = hf.base_model
    if hasattr(base, "h"):  # GPT-2 (a Conv1D)
        return base.h[layer].attn.c_proj
    if hasattr(base, "encoder"):  # ELECTRA
        return base.encoder.layer[layer].attention.output.dense
    return base.layers[layer].self_attn.o_proj


def head_slice(hf, head: int) -> slice:
    cfg = hf.config
    hs = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    return slice(head * hs, (head + 1) * hs)


def hf_heads_in(hf, ids: list[int], layer: int) -> torch.Tensor:
    """The input of ``layer``'s output projection on transformers' clean forward (T, nh * hs)."""
    got = {}
    handle = out_proj(hf, layer).register_forward_pre_hook(
        lambda _m, args: got.setdefault("x", args[0].detach()[0].clone())
    )
    try:
        with torch.no_grad():
            hf(torch.tensor([ids]))
    finally:
        handle.remove()
    return got["x"]


def hf_ablated(hf, ids: list[int], fills: dict[tuple[int, int], Fill]):
    """transformers' forward with ``fill(x_head)`` written over each (layer, head)'s slice of the
    output projection's input (x_head: (B, T, hs), as this run computed it): the hidden states,
    and the logits of a model that has them."""
    handles = []
    for layer in sorted({layer for layer, _ in fills}):
        heads = {head: fill for (lay, head), fill in fills.items() if lay == layer}

        def pre(_m, args, heads=heads):
            x = args[0].clone()
            for head, fill in heads.items():
                cols = head_slice(hf, head)
                x[..., cols] = fill(x[..., cols])
            return (x, *args[1:])

        handles.append(out_proj(hf, layer).register_forward_pre_hook(pre))
    try:
        with torch.no_grad():
            out = hf(torch.tensor([ids]), output_hidden_states=True)
    finally:
        for h in handles:
            h.remove()
    return tuple(h[0] for h in out.hidden_states), getattr(out, "logits", None)


def zero(x: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(x)


def mean(x: torch.Tensor) -> torch.Tensor:
    return x.mean(dim=1, keepdim=True).expand_as(x)  # over the positions of this run


def patch_from(src: torch.Tensor) -> Fill:
    """The source's head output (n, hs) over the first n positions; the rest keep their own."""

    def fill(x: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        n = min(x.shape[1], src.shape[0])
        x[:, :n] = src[:n]
        return x

    return fill


# ---- the trace service


def trace(m, *ablate: dict, text: str = TEXT):
    body: dict = {"model": m.name, "text": text}
    if ablate:
        body["ablate"] = list(ablate)
    return run_text_trace(TextTraceRequest(**body), ModelRegistry([m]), None)


def gap(states: torch.Tensor, want: tuple[torch.Tensor, ...]) -> float:
    assert states.shape[0] == len(want)
    return max(float((states[i] - h).abs().max()) for i, h in enumerate(want))


def check_predictions(knocked, logits: torch.Tensor | None, ids: list[int]) -> None:
    """The knocked-out trace's next-token probabilities are those of transformers' logits."""
    if logits is None:
        assert "top_k" in knocked.meta["unavailable"]  # an encoder predicts no next token
        return
    top = select(knocked, TraceQuery(fields="top_k")).arrays["top_k"]
    p = logits[0].softmax(-1)[:-1].gather(1, torch.tensor(ids[1:])[:, None])[:, 0]
    assert float((torch.as_tensor(top["target_probs"])[:-1] - p).abs().max()) < TOL


@pytest.mark.parametrize("kind", KINDS)
def test_a_zero_ablated_head_is_transformers_with_that_head_zeroed(served, folders, kind):
    m, hf = served[kind], hf_model(folders[kind])
    clean = trace(m)
    ids = clean.meta["token_ids"]
    knocked = trace(m, {"layer": 0, "head": 2, "mode": "zero"})
    assert knocked.meta["token_ids"] == ids and len(ids) > 20
    assert knocked.meta["ablated"] == [
        {"layer": 0, "head": 2, "mode": "zero", "source": None, "patched": len(ids)}
    ]
    want, logits = hf_ablated(hf, ids, {(0, 2): zero})
    assert gap(knocked.tensors.states, want) < TOL
    check_predictions(knocked, logits, ids)
    # It changed something, and the clean trace is still transformers' clean forward.
    assert gap(clean.tensors.states, want) > 100 * TOL
    plain, _ = hf_ablated(hf, ids, {})
    assert gap(clean.tensors.states, plain) < TOL


@pytest.mark.parametrize("kind", KINDS)
def test_mean_is_the_heads_average_over_the_texts_positions(served, folders, kind):
    m, hf = served[kind], hf_model(folders[kind])
    ids = trace(m).meta["token_ids"]
    # Layer 0's knock-out changes what layer 1 averages: the mean is of the same run.
    knocked = trace(m, {"layer": 0, "head": 1, "mode": "zero"}, {"layer": 1, "head": 3,
                                                                  "mode": "mean"})  # fmt: skip
    want, logits = hf_ablated(hf, ids, {(0, 1): zero, (1, 3): mean})
    assert gap(knocked.tensors.states, want) < TOL
    check_predictions(knocked, logits, ids)
    assert [a["mode"] for a in knocked.meta["ablated"]] == ["zero", "mean"]
    # Not the clean run's mean.
    clean_mean = hf_heads_in(hf, ids, 1)[:, head_slice(hf, 3)].mean(dim=0)
    other, _ = hf_ablated(hf, ids, {(0, 1): zero, (1, 3): lambda x: clean_mean.expand_as(x)})
    assert gap(knocked.tensors.states, other) > 100 * TOL


@pytest.mark.parametrize("kind", KINDS)
def test_patch_copies_the_source_texts_output_from_the_start(served, folders, kind):
    m, hf = served[kind], hf_model(folders[kind])
    ids = trace(m).meta["token_ids"]
    src_ids = list(m.tokenizer(SOURCE).ids)
    n = len(src_ids)
    assert 0 < n < len(ids)  # a shorter source: its n positions patched, the rest their own
    fills = {
        (layer, head): patch_from(hf_heads_in(hf, src_ids, layer)[:, head_slice(hf, head)])
        for layer, head in ((0, 1), (1, 0), (1, 2))
    }  # one source, two layers: its outputs read once, from a clean forward
    knocked = trace(m, *({"layer": layer, "head": head, "mode": "patch", "source": SOURCE}
                         for layer, head in fills))  # fmt: skip
    assert [a["patched"] for a in knocked.meta["ablated"]] == [n] * 3
    want, logits = hf_ablated(hf, ids, fills)
    assert gap(knocked.tensors.states, want) < TOL
    check_predictions(knocked, logits, ids)
    zeroed, _ = hf_ablated(hf, ids, dict.fromkeys(fills, zero))
    assert gap(knocked.tensors.states, zeroed) > 100 * TOL  # the source's outputs arrived


@pytest.mark.parametrize("kind", ["gpt2", "starcoder2"])
def test_attention_moves_after_the_knocked_out_layer_not_before(served, kind):
    m = served[kind]
    clean = trace(m)
    for layer in (0, 1):
        knocked = trace(m, {"layer": layer, "head": 0, "mode": "zero"})
        for at in (0, 1):
            got = [
                torch.as_tensor(select(t, TraceQuery(fields="attentions", layer=at))
                                .arrays["attentions"])
                for t in (clean, knocked)
            ]  # fmt: skip
            moved = float((got[0] - got[1]).abs().max())
            if at <= layer:  # the head's output is after its own weights
                assert moved == 0, (layer, at)
            else:
                assert moved > 1e-4, (layer, at)


@pytest.mark.parametrize("mode", ["zero", "mean", "patch"])
def test_gpt2_knocked_out_through_transformers_is_the_engines_knock_out(served, folders, mode):
    """The same checkpoint, the same knock-out: the native engine's hook on ``hook_z`` and the
    bridge's attention function agree."""
    native = load_model(folders["gpt2"], CPU)
    assert native.backend == "native"
    a = {"layer": 0, "head": 3, "mode": mode, **({"source": SOURCE} if mode == "patch" else {})}
    got = [trace(m, a) for m in (native, served["gpt2"])]
    assert got[0].meta["ablated"] == got[1].meta["ablated"]
    assert float((got[0].tensors.states - got[1].tensors.states).abs().max()) < TOL


def test_the_knock_out_is_gone_after_the_trace(served):
    m = served["starcoder2"]
    clean = trace(m)
    trace(m, {"layer": 1, "head": 1, "mode": "mean"})
    assert torch.equal(trace(m).tensors.states, clean.tensors.states)
    # and a patch's clean forward of its source is the source's own trace
    src = trace(m, text=SOURCE)
    outputs = m.head_outputs(src.meta["token_ids"], [0])
    assert set(outputs) == {0} and outputs[0].shape == (4, len(src.meta["token_ids"]), 8)


def test_bloom_is_refused_saying_why(served):
    m = served["bloom"]
    assert m.no_qk is not None
    with pytest.raises(TraceError) as exc:
        trace(m, {"layer": 0, "head": 0, "mode": "zero"})
    msg = str(exc.value)
    assert msg.startswith("ablate: model knock-bloom (bloom, served through transformers)")
    assert "has no head attnviz can knock out" in msg and f"({m.no_qk})" in msg
    assert "ALiBi" in m.no_qk
    assert ablate_refused(m) == msg.removeprefix("ablate: ")
    assert model_info(m, None).ablate_refused == ablate_refused(m)
    for kind in KINDS:
        assert model_info(served[kind], None).ablate_refused is None


def test_bad_heads_are_named_as_for_the_engine(served):
    m = served["starcoder2"]
    with pytest.raises(TraceError, match=r"^ablate\[0\]\.head: 4 is past model knock-starcoder2"):
        trace(m, {"layer": 0, "head": 4})
    with pytest.raises(TraceError, match=r"^ablate\[1\]\.layer: 2 is past"):
        trace(m, {"layer": 0, "head": 0}, {"layer": 2, "head": 0})


# ---- over HTTP


@pytest.fixture(scope="module")
def bridge_client(folders):
    models = ":".join(str(folders[k]) for k in ("starcoder2", "bloom"))
    settings = Settings(device="cpu", builtin_model=False, models=models, backend="transformers")
    with TestClient(create_app(settings)) as c:
        yield c


def _post(client, model: str, ablate: list) -> object:
    body = {"model": model, "text": TEXT, "ablate": ablate}
    return client.post("/api/trace", params={"fields": "hidden_states"}, json=body)


def test_http_knocks_out_a_bridged_head_and_the_cache_keys_on_ablate(bridge_client, folders):
    m = "knock-starcoder2"
    runs = [
        _post(bridge_client, m, []),
        _post(bridge_client, m, [{"layer": 0, "head": 1, "mode": "zero"}]),
        _post(bridge_client, m, [{"layer": 0, "head": 1, "mode": "mean"}]),
        _post(bridge_client, m, [{"layer": 0, "head": 1, "mode": "zero"}]),
        _post(bridge_client, m, []),
    ]
    assert [r.status_code for r in runs] == [200] * 5, runs[1].text
    states = [torch.tensor(r.json()["hidden_states"]) for r in runs]
    assert torch.equal(states[0], states[4]) and torch.equal(states[1], states[3])
    assert float((states[0][-1] - states[1][-1]).abs().max()) > 1e-4
    assert float((states[1][-1] - states[2][-1]).abs().max()) > 1e-4
    ids = runs[1].json()["token_ids"]
    want, _ = hf_ablated(hf_model(folders["starcoder2"]), ids, {(0, 1): zero})
    assert gap(states[1], want) < 1e-4  # through JSON's float32
    assert runs[1].json()["ablated"] == [
        {"layer": 0, "head": 1, "mode": "zero", "source": None, "patched": len(ids)}
    ]


def test_http_refuses_bloom_with_a_422_naming_ablate(bridge_client):
    models = {m["name"]: m for m in bridge_client.get("/api/models").json()["models"]}
    assert models["knock-starcoder2"]["ablate_refused"] is None
    why = models["knock-bloom"]["ablate_refused"]
    assert "AttentionInterface" in why
    r = _post(bridge_client, "knock-bloom", [{"layer": 0, "head": 0, "mode": "zero"}])
    assert r.status_code == 422, r.text
    assert r.json()["message"] == f"ablate: {why}"
