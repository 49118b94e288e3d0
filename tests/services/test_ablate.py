"""Knocking a head out (engine/ablate.py, the trace's ``ablate``) against transformers, the
oracle: a zero-ablated head's trace equals a transformers forward whose output projection reads
zeros in that head's slice (a forward pre-hook on ``c_proj`` / ``o_proj``); mean and patch
equal the same hook filled with the head's mean over positions and with its output on the
source text, read from transformers' own forwards; a patch from a shorter text leaves the rest
clean. Over HTTP: the cache keys on ``ablate``, the meta says what was done, bad heads are 422s
naming ``ablate[i].layer`` and the like."""

from __future__ import annotations

import pytest
import torch

from attnviz.limits import LIMITS
from attnviz.pretrained.registry import ModelRegistry, load_model
from attnviz.schemas.trace import TextTraceRequest, TraceQuery
from attnviz.services.parts import select
from attnviz.services.text_trace import run_text_trace
from tests.support.checkpoints import SENTENCES, make_tiny_gpt2, make_tiny_llama

CPU = torch.device("cpu")
TOL = 1e-4
TEXT = " ".join(SENTENCES[:2])
SOURCE = SENTENCES[2]


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("ablate")
    return {
        "gpt2": make_tiny_gpt2(root / "ablate-gpt2", seed=5),
        "llama": make_tiny_llama(root / "ablate-llama", seed=6),
    }


def hf_model(folder):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()


def out_proj(hf, layer: int) -> torch.nn.Module:
    """The layer's output projection, whose input is every head's output side by side."""
    base = hf.base_model
    if hasattr(base, "h"):  # GPT-2
        return base.h[layer].attn.c_proj
    return base.layers[layer].self_attn.o_proj


def head_slice(hf, head: int) -> slice:
    hs = hf.config.hidden_size // hf.config.num_attention_heads
    hs = getattr(hf.config, "head_dim", None) or hs
    return slice(head * hs, (head + 1) * hs)


def hf_heads_in(hf, ids: list[int], layer: int) -> torch.Tensor:
    """The input of ``layer``'s output projection on a clean forward (T, nh * hs)."""
    got = {}
    handle = out_proj(hf, layer).register_forward_pre_hook(
        lambda _m, args: got.setdefault("x", args[0].detach()[0].clone())
    )
    with torch.no_grad():
        hf(torch.tensor([ids]))
    handle.remove()
    return got["x"]


def hf_ablated(hf, ids: list[int], layer: int, head: int, fill) -> tuple[torch.Tensor, ...]:
    """transformers' hidden states with ``fill(x_head)`` (x_head: (B, T, hs), the head's slice
    of the output projection's input) written over that head's slice before the projection."""
    cols = head_slice(hf, head)

    def pre(_m, args):
        x = args[0].clone()
        x[..., cols] = fill(x[..., cols])
        return (x, *args[1:])

    handle = out_proj(hf, layer).register_forward_pre_hook(pre)
    try:
        with torch.no_grad():
            out = hf(torch.tensor([ids]), output_hidden_states=True)
    finally:
        handle.remove()
    return tuple(h[0] for h in out.hidden_states)


def trace(m, **ablate) -> object:
    body = {"model": m.name, "text": TEXT}
    if ablate:
        body["ablate"] = [ablate]
    return run_text_trace(TextTraceRequest(**body), ModelRegistry([m]), None)


def close(states: torch.Tensor, hf_states: tuple[torch.Tensor, ...]) -> float:
    return max(float((states[i] - h).abs().max()) for i, h in enumerate(hf_states))


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_a_zero_ablated_head_is_transformers_with_that_head_zeroed(folders, kind):
    m = load_model(folders[kind], CPU)
    assert m.backend == "native"
    hf = hf_model(folders[kind])
    clean = trace(m)
    ids = clean.meta["token_ids"]
    knocked = trace(m, layer=0, head=2, mode="zero")
    assert knocked.meta["token_ids"] == ids and len(ids) > 20
    assert knocked.meta["ablated"] == [
        {"layer": 0, "head": 2, "mode": "zero", "source": None, "patched": len(ids)}
    ]
    want = hf_ablated(hf, ids, 0, 2, torch.zeros_like)
    assert close(knocked.tensors.states, want) < TOL
    # It changed something, and the clean trace is transformers' clean forward.
    assert close(clean.tensors.states, want) > 100 * TOL
    with torch.no_grad():
        plain = tuple(h[0] for h in hf(torch.tensor([ids]), output_hidden_states=True)[-1])
    assert close(clean.tensors.states, plain) < TOL
    # Layer 0's own weights do not move (the head's output is after them); layer 1's do.
    a0 = select(knocked, TraceQuery(fields="attentions", layer=0)).arrays["attentions"]
    c0 = select(clean, TraceQuery(fields="attentions", layer=0)).arrays["attentions"]
    assert torch.equal(torch.as_tensor(a0), torch.as_tensor(c0))
    a1 = select(knocked, TraceQuery(fields="attentions", layer=1)).arrays["attentions"]
    c1 = select(clean, TraceQuery(fields="attentions", layer=1)).arrays["attentions"]
    assert float((torch.as_tensor(a1) - torch.as_tensor(c1)).abs().max()) > 1e-4
    # The predictions are of the ablated run: its logits are transformers' ablated logits.
    got = select(knocked, TraceQuery(fields="lens,top_k")).arrays
    lens, top = got["lens"], got["top_k"]
    with torch.no_grad():
        logits = hf.lm_head(want[-1])
    target = torch.tensor(ids[1:])
    p = logits.softmax(-1)[:-1].gather(1, target[:, None])[:, 0]
    assert float((lens["target_probs"][-1, :-1] - p).abs().max()) < TOL
    # top_k carries the same probability (the card's loss), 0 after the last token.
    assert torch.equal(top["target_probs"], lens["target_probs"][-1])
    assert float(top["target_probs"][-1]) == 0


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_mean_is_the_heads_average_over_the_texts_positions(folders, kind):
    m = load_model(folders[kind], CPU)
    hf = hf_model(folders[kind])
    ids = trace(m).meta["token_ids"]
    knocked = trace(m, layer=1, head=3, mode="mean")
    want = hf_ablated(hf, ids, 1, 3, lambda x: x.mean(dim=1, keepdim=True).expand_as(x))
    assert close(knocked.tensors.states, want) < TOL
    assert knocked.meta["ablated"][0]["mode"] == "mean"


@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_patch_copies_the_source_texts_output_from_the_start(folders, kind):
    m = load_model(folders[kind], CPU)
    hf = hf_model(folders[kind])
    ids = trace(m).meta["token_ids"]
    src_ids = list(m.tokenizer(SOURCE).ids)
    n = len(src_ids)
    assert 0 < n < len(ids)  # a shorter source: its n positions patched, the rest clean
    cols = head_slice(hf, 1)
    src = hf_heads_in(hf, src_ids, 0)[:, cols]  # (n, hs)

    def fill(x):
        x = x.clone()
        x[:, :n] = src
        return x

    knocked = trace(m, layer=0, head=1, mode="patch", source=SOURCE)
    assert knocked.meta["ablated"][0]["patched"] == n
    want = hf_ablated(hf, ids, 0, 1, fill)
    assert close(knocked.tensors.states, want) < TOL
    # Not the same as zeroing it: the source's outputs arrived.
    assert close(knocked.tensors.states, hf_ablated(hf, ids, 0, 1, torch.zeros_like)) > TOL


def test_the_engine_hook_is_gone_after_the_trace(folders):
    m = load_model(folders["gpt2"], CPU)
    clean = trace(m)
    trace(m, layer=0, head=0, mode="zero")
    again = trace(m)
    assert torch.equal(clean.tensors.states, again.tensors.states)
    assert all(not b.attn.hook_z._forward_hooks for b in m.model.blocks)


# ---- over HTTP (the tiny GPT-2 of conftest's app)


def _post(client, ablate, **params):
    body = {"model": "tiny-gpt2", "text": TEXT, "ablate": ablate}
    return client.post("/api/trace", params={"fields": "hidden_states", **params}, json=body)


def test_the_cache_keys_on_ablate_and_meta_says_what_was_done(client):
    clean = _post(client, [])
    zero = _post(client, [{"layer": 1, "head": 0, "mode": "zero"}])
    mean = _post(client, [{"layer": 1, "head": 0, "mode": "mean"}])
    again = _post(client, [])
    assert {r.status_code for r in (clean, zero, mean, again)} == {200}
    states = [torch.tensor(r.json()["hidden_states"]) for r in (clean, zero, mean, again)]
    assert torch.equal(states[0], states[3])
    assert float((states[0][-1] - states[1][-1]).abs().max()) > 1e-4
    assert float((states[1][-1] - states[2][-1]).abs().max()) > 1e-4
    assert clean.json()["ablated"] == []
    assert zero.json()["ablated"][0] | {"source": None} == {
        "layer": 1, "head": 0, "mode": "zero", "source": None,
        "patched": len(zero.json()["tokens"]),
    }  # fmt: skip


@pytest.mark.parametrize(
    ("ablate", "field"),
    [
        ([{"layer": 2, "head": 0}], "ablate[0].layer: 2 is past model tiny-gpt2's 2 layers"),
        ([{"layer": 0, "head": 0}, {"layer": 0, "head": 4}], "ablate[1].head: 4 is past"),
        ([{"layer": -1, "head": 0}], "ablate[0].layer: "),
        ([{"layer": 0, "head": 0, "mode": "patch"}], "ablate[0].source: a patch needs"),
        ([{"layer": 0, "head": 0, "source": "x"}], "ablate[0].source: only a patch"),
        ([{"layer": 0, "head": 0, "mode": "half"}], "ablate[0].mode: "),
        ([{"layer": 0, "head": 1}, {"layer": 0, "head": 1}], "ablate[1]: layer 0 head 1 is"),
        ([{"layer": 0, "head": 0}] * (LIMITS.max_ablate + 1), "ablate: "),
        (
            [{"layer": 0, "head": 0, "mode": "patch", "source": "x" * (LIMITS.max_text_chars + 1)}],
            "ablate[0].source: ",
        ),
        (  # more tokens than the model has positions (the tiny GPT-2's 256)
            [{"layer": 0, "head": 0, "mode": "patch", "source": "a b " * 300}],
            "ablate[0].source: 601 tokens exceed the cap of 256",  # the last space is one
        ),
    ],
)
def test_bad_ablations_are_422s_naming_the_field(client, ablate, field):
    r = _post(client, ablate)
    assert r.status_code == 422, r.text
    assert field in r.json()["message"]


def test_a_knock_out_is_not_with_generate(client):
    body = {"model": "tiny-gpt2", "text": TEXT, "generate": {"steps": 2},
            "ablate": [{"layer": 0, "head": 0}]}  # fmt: skip
    r = client.post("/api/trace", params={"fields": "hidden_states"}, json=body)
    assert r.status_code == 422 and "ablate: not with generate" in r.json()["message"]


def test_a_bridged_model_knocks_out_as_the_engine_does(folders):
    """GPT-2 through transformers (its attention through the bridge's recording function) and
    through the engine: the same knock-out, the same hidden states
    (tests/pretrained/bridge/test_ablate.py checks every mode against transformers' hooks)."""
    bridged = load_model(folders["gpt2"], CPU, backend="transformers")
    native = load_model(folders["gpt2"], CPU)
    a = {"layer": 0, "head": 0, "mode": "zero"}
    got = trace(bridged, **a).tensors.states
    assert torch.allclose(got, trace(native, **a).tensors.states, atol=TOL)
    clean = trace(bridged).tensors.states
    assert not torch.allclose(got[-1], clean[-1], atol=TOL), "the knock-out changed nothing"


@pytest.mark.parametrize("mode", ["zero", "mean", "patch"])
def test_value_weighted_attention_reads_what_a_knocked_out_head_writes(folders, mode):
    """Through a knocked-out head each key adds w'_ij v_j W_O, with w' the weights by which it
    reaches the output in that run: none when zeroed, the column means when averaged (every
    query gets the mean output), none at the patched positions. w' times the values is exactly
    what the head wrote (transformers' o_proj input, the oracle), and value_weighted and
    value_weighted_sum are the norms of w'_ij v_j W_O^h and of their sum over heads."""
    m = load_model(folders["gpt2"], CPU)
    hf = hf_model(folders["gpt2"])
    layer, head = 0, 1
    extra = {"source": SOURCE} if mode == "patch" else {}
    knocked = trace(m, layer=layer, head=head, mode=mode, **extra)
    ids = knocked.meta["token_ids"]
    got = select(
        knocked, TraceQuery(fields="attentions,values,value_weighted,value_weighted_sum", layer=0)
    ).arrays
    a = torch.as_tensor(got["attentions"][0]).double()  # (nh, T, T)
    v = torch.as_tensor(got["values"][0]).double()  # (nh, T, hs)
    w_o = knocked.tensors.w_o[layer].double()  # (nh, hs, C)
    n = knocked.meta["ablated"][0]["patched"]
    w = a.clone()
    if mode == "zero":
        w[head] = 0
    elif mode == "mean":
        w[head] = a[head].mean(dim=0, keepdim=True)
    else:
        w[head, :n] = 0
    # What the head wrote is w' times its values (where it wrote from this text's keys).
    written = hf_ablated_input(hf, ids, layer, head, mode, n, m)
    rows = slice(n, None) if mode == "patch" else slice(None)
    assert float((w[head] @ v[head] - written)[rows].abs().max()) < TOL
    f = torch.einsum("hjd,hdc->hjc", v, w_o)  # (nh, T, C) v_j W_O^h
    want = w * torch.linalg.vector_norm(f, dim=-1)[:, None, :]
    assert float((torch.as_tensor(got["value_weighted"][0]).double() - want).abs().max()) < TOL
    total = torch.linalg.vector_norm(torch.einsum("hij,hjc->ijc", w, f), dim=-1)  # (T, T)
    summed = torch.as_tensor(got["value_weighted_sum"][0]).double()
    assert float((summed - total).abs().max()) < TOL
    if mode == "zero":
        assert float(want[head].abs().max()) == 0


def hf_ablated_input(hf, ids, layer, head, mode, n, m) -> torch.Tensor:
    """The head's slice of the output projection's input as the knocked-out run wrote it."""
    cols = head_slice(hf, head)
    clean = hf_heads_in(hf, ids, layer)[:, cols].double()  # (T, hs)
    if mode == "zero":
        return torch.zeros_like(clean)
    if mode == "mean":
        return clean.mean(dim=0, keepdim=True).expand_as(clean)
    out = clean.clone()
    out[:n] = hf_heads_in(hf, list(m.tokenizer(SOURCE).ids), layer)[:n, cols].double()
    return out
