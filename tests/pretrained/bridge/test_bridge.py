"""The transformers bridge against transformers itself (eager attention, the oracle), on tiny
random checkpoints of families attnviz's engine has no conversion for: the weights and hidden
states are transformers' own; where the attention goes through AttentionInterface, the
recorded queries and keys give back the scores whose softmax is the weights, past the sliding
window; generation is transformers' greedy generate; a folder neither backend can load is
refused at start, naming both."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from attnviz.errors import TraceError
from attnviz.pretrained import ModelFolderError
from attnviz.pretrained.bridge import BRIDGE_INSTALL, BridgedModel
from attnviz.pretrained.registry import load_model, load_registry
from tests.support.checkpoints import SENTENCES
from tests.support.checkpoints_bridge import (
    WINDOW,
    hf_forward,
    hf_model,
    make_tiny_bloom,
    make_tiny_electra,
    make_tiny_gemma2,
    make_tiny_starcoder2,
    make_unknown,
)

CPU = torch.device("cpu")
TOL = 1e-4
TEXT = " ".join(SENTENCES[:2])  # 30-odd tokens: past the window of 8


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("bridge")
    return {
        "bloom": make_tiny_bloom(root / "tiny-bloom"),
        "starcoder2": make_tiny_starcoder2(root / "tiny-starcoder2"),
        "gemma2": make_tiny_gemma2(root / "tiny-gemma2"),
        "electra": make_tiny_electra(root / "tiny-electra"),
    }


@pytest.fixture(scope="module")
def served(folders) -> dict[str, BridgedModel]:
    out = {}
    for name, folder in folders.items():
        # gemma2 has a native conversion: asked for through transformers explicitly
        backend = "transformers" if name == "gemma2" else "auto"
        model = load_model(folder, CPU, backend=backend)
        assert isinstance(model, BridgedModel)
        out[name] = model
    return out


def oracle(folder, ids: list[int]):
    """transformers' own model (eager attention) and its forward: every weight and state."""
    return hf_model(folder), hf_forward(folder, ids)


def ids_of(model: BridgedModel, text: str = TEXT) -> list[int]:
    ids = model.tokenizer(text).ids
    assert len(ids) > 3 * WINDOW
    return ids


@pytest.mark.parametrize("name", ["bloom", "starcoder2", "gemma2", "electra"])
def test_weights_and_hidden_states_are_transformers_own(served, folders, name):
    m = served[name]
    assert m.backend == "transformers" and m.family == name
    ids = ids_of(m)
    t = m.trace(ids)
    _, out = oracle(folders[name], ids)
    assert t.layers == len(out.attentions) == 2 and t.heads == 4
    for layer, want in enumerate(out.attentions):
        assert (t.pattern(layer) - want[0]).abs().max() < TOL
    want_states = torch.stack([h[0] for h in out.hidden_states])  # (L+1, T, C)
    assert t.states.shape == want_states.shape
    assert (t.states - want_states).abs().max() < TOL
    assert m.cfg.causal == (name != "electra")
    assert m.cfg.unembed == (name != "electra")


@pytest.mark.parametrize("name", ["starcoder2", "gemma2", "electra"])
def test_recorded_queries_and_keys_give_back_the_weights(served, folders, name):
    """With the forward's weights dropped (as the trace cache keeps a trace), every head's
    weights are recomputed from the recorded q and k by the rule the layer used: they are
    transformers' weights, and the scores' softmax (after the soft-cap) is those weights."""
    m = served[name]
    ids = ids_of(m)
    t = m.trace(ids)
    t.release()
    assert t.forward_pattern is None and t.has_qk
    _, out = oracle(folders[name], ids)
    T = len(ids)
    for layer, want in enumerate(out.attentions):
        assert (t.pattern(layer) - want[0]).abs().max() < TOL
        scores = t.scores(layer)  # (nh, T, T) before any soft-cap
        cap = m.cfg.attn_softcap
        capped = scores if cap is None else cap * torch.tanh(scores / cap)
        capped = capped.masked_fill(torch.isneginf(scores), float("-inf"))  # tanh(-inf) = -1
        assert (torch.softmax(capped, dim=-1) - want[0]).abs().max() < TOL
        hidden = torch.isneginf(scores[0])  # (T, T): the same keys hidden in every head
        i, j = torch.meshgrid(torch.arange(T), torch.arange(T), indexing="ij")
        if m.cfg.causal:
            window = m.cfg.window_of(layer)
            expect = (j > i) if window is None else (j > i) | (i - j >= window)
            assert torch.equal(hidden, expect)
        else:
            assert not hidden.any()


def test_the_sliding_window_and_the_soft_cap_are_what_the_model_used(served):
    sc2, gemma = served["starcoder2"], served["gemma2"]
    assert sc2.cfg.sliding_window == WINDOW and sc2.cfg.window_of(0) == WINDOW
    assert sc2.cfg.kv_heads == 2 and sc2.cfg.attn_softcap is None
    # Gemma 2: the first layer slides, the second sees everything; soft-cap 0.2; scale 1
    assert gemma.cfg.layer_types == ("sliding_attention", "full_attention")
    assert gemma.cfg.attn_softcap == 0.2 and gemma.cfg.attn_scale == 1.0
    t = gemma.trace(ids_of(gemma))
    t.release()
    scores = t.scores(1)
    assert scores[torch.isfinite(scores)].abs().max() > 0.2  # the cap changes the weights here
    assert (torch.softmax(scores, dim=-1) - t.pattern(1)).abs().max() > 1e-2


def test_queries_are_the_layers_own_after_its_rotary_embedding(served):
    """StarCoder2's layer 0: its q projection of the normed input, rotated by RoPE: the same
    numbers at position 0 (no rotation), and the same length per head everywhere."""
    m = served["starcoder2"]
    ids = ids_of(m)
    t = m.trace(ids)
    layer = m.hf.model.layers[0]
    with torch.no_grad():
        x = layer.input_layernorm(t.states[0])  # (T, C)
        q = layer.self_attn.q_proj(x).view(len(ids), 4, -1).transpose(0, 1)  # (nh, T, hs)
    rec = t.qkv(0)[0]
    assert (rec[:, 0] - q[:, 0]).abs().max() < TOL
    assert (rec.norm(dim=-1) - q.norm(dim=-1)).abs().max() < TOL
    assert (rec[:, 5:] - q[:, 5:]).abs().max() > 1e-2  # rotated


def test_bloom_records_no_queries_or_keys_and_says_why(served):
    m = served["bloom"]
    assert m.no_qk is not None and "ALiBi" in m.no_qk
    assert set(m.unavailable) >= {"queries", "keys", "values", "scores"}
    assert m.unavailable["queries"].startswith("queries: model tiny-bloom (bloom, served through")
    t = m.trace(ids_of(m))
    t.release()  # its weights are all it has: kept
    assert not t.has_qk and t.forward_pattern is not None
    with pytest.raises(TraceError, match="AttentionInterface"):
        t.scores(0)


@pytest.mark.parametrize("name", ["starcoder2", "bloom", "gemma2"])
def test_greedy_generation_is_transformers_generate(served, folders, name):
    m = served[name]
    ids = m.tokenizer("I sat on the river bank").ids
    hf, _ = oracle(folders[name], ids)
    with torch.no_grad():
        want = hf.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=False,
                           eos_token_id=None, pad_token_id=0)[0, len(ids):].tolist()  # fmt: skip
    assert m.continue_ids(ids, 12) == want


def test_sampling_is_seeded_as_the_engine_samples(served, folders):
    """Temperature > 0: each token drawn from softmax(logits / T) by a CPU generator seeded with
    the seed, one draw a step (the engine's rule), here against whole forwards of transformers."""
    m = served["starcoder2"]
    ids = m.tokenizer("I sat on the river bank").ids
    hf, _ = oracle(folders["starcoder2"], ids)
    g = torch.Generator().manual_seed(7)
    seq, want = list(ids), []
    with torch.no_grad():
        for _ in range(10):
            logits = hf(torch.tensor([seq])).logits[0, -1].double()
            nxt = int(torch.multinomial(torch.softmax(logits / 1.3, dim=-1), 1, generator=g))
            seq.append(nxt)
            want.append(nxt)
    assert m.continue_ids(ids, 10, temperature=1.3, seed=7) == want
    assert m.continue_ids(ids, 10, temperature=1.3, seed=8) != want


def test_generation_stops_after_an_end_of_text_token(served):
    m = served["starcoder2"]
    ids = m.tokenizer("I sat on the river bank").ids
    first = m.continue_ids(ids, 12)
    out = m.continue_ids(ids, 12, stop={first[3]})
    assert out == first[: first.index(first[3]) + 1]


def test_an_encoder_does_not_write(served):
    with pytest.raises(ValueError, match="causal"):
        served["electra"].continue_ids([1, 2, 3], 4)


def test_a_native_family_through_the_bridge_equals_the_native_engine(tiny_gpt2_dir):
    """GPT-2 run by both backends: the same weights and hidden states, and the bridge's
    recorded q and k are the engine's (GPT-2 has no rotation: the projections themselves)."""
    native = load_model(tiny_gpt2_dir, CPU)
    bridged = load_model(tiny_gpt2_dir, CPU, backend="transformers")
    assert native.backend == "native" and bridged.backend == "transformers"
    ids = native.tokenizer(TEXT).ids
    a, b = native.trace(ids), bridged.trace(ids)
    a.release()
    b.release()
    assert (a.states - b.states).abs().max() < TOL
    for layer in range(a.layers):
        assert (a.pattern(layer) - b.pattern(layer)).abs().max() < TOL
        for x, y in zip(a.qkv(layer), b.qkv(layer), strict=True):
            assert (x - y).abs().max() < TOL
    assert native.continue_ids(ids[:5], 6) == bridged.continue_ids(ids[:5], 6)


def test_a_folder_neither_backend_loads_is_refused_naming_both(folders, tmp_path):
    unknown = make_unknown(tmp_path / "mystery", folders["starcoder2"])
    with pytest.raises(ModelFolderError) as err:
        load_registry([unknown], CPU, builtin=False)
    msg = str(err.value)
    assert "'no-such-model'" in msg and "native families:" in msg and "gpt2" in msg
    assert "through transformers:" in msg and "cannot load it" in msg


def test_without_transformers_a_bridged_folder_is_refused_with_the_extra(folders, monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers now fails
    with pytest.raises(ModelFolderError) as err:
        load_registry([folders["bloom"]], CPU, builtin=False)
    msg = str(err.value)
    assert "model_type 'bloom' is not supported by attnviz's own engine" in msg
    assert "transformers backend" in msg and BRIDGE_INSTALL in msg


def test_native_only_refuses_a_family_it_has_no_conversion_for(folders):
    with pytest.raises(ModelFolderError, match="--backend auto or transformers"):
        load_registry([folders["bloom"]], CPU, builtin=False, backend="native")


@pytest.mark.slow
def test_attnviz_imports_and_serves_without_transformers(tiny_gpt2_dir):
    """transformers is imported by the bridge alone, when a folder goes through it: with its
    import failing, the app starts and serves a native model."""
    script = (
        "import sys; sys.modules['transformers'] = None\n"
        "from fastapi.testclient import TestClient\n"
        "from attnviz.app import create_app\n"
        "from attnviz.settings import Settings\n"
        f"app = create_app(Settings(device='cpu', builtin_model=False, models={str(tiny_gpt2_dir)!r}))\n"
        "c = TestClient(app)\n"
        "r = c.get('/api/models'); assert r.status_code == 200, r.text\n"
        "assert [m['backend'] for m in r.json()['models']] == ['native'], r.json()\n"
        "r = c.post('/api/trace', json={'model': 'tiny-gpt2', 'text': 'I sat'})\n"
        "assert r.status_code == 200, r.text\n"
        "assert 'transformers' not in [k for k, v in sys.modules.items() if v is not None]\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]


def test_a_checkpoint_missing_weights_is_refused_not_filled_with_random_ones(folders, tmp_path):
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "partial"
    folder.mkdir()
    for f in folders["starcoder2"].iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    tensors = load_file(folder / "model.safetensors")
    del tensors["model.layers.1.self_attn.k_proj.weight"]
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ModelFolderError, match="lacks 1 of the weights") as err:
        load_model(folder, CPU)
    assert "model.layers.1.self_attn.k_proj.weight" in str(err.value)


def serve_refused(*args: str, before: str = "") -> str:
    """``attnviz serve`` (after ``before``, Python run first): it must stop at start, exit
    code 2; what it said."""
    script = f"{before}\nimport sys\nfrom attnviz.cli import main\nsys.exit(main({list(args)!r}))"
    env = {**os.environ, "ATTNVIZ_DEVICE": "cpu", "ATTNVIZ_BUILTIN_MODEL": "false"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, env=env)  # fmt: skip
    assert out.returncode == 2, out.stderr[-3000:]
    return out.stderr


@pytest.mark.slow
def test_serve_refuses_at_start_naming_both_backends(folders, tmp_path):
    unknown = make_unknown(tmp_path / "mystery", folders["starcoder2"])
    said = serve_refused("serve", "--port", "1", "--model", str(unknown))
    assert (
        f"{unknown}: config.json model_type 'no-such-model' is not supported by attnviz's" in said
    )
    assert "and through transformers: transformers" in said and "cannot load it" in said
    said = serve_refused("serve", "--port", "1", "--backend", "native", "--model",
                         str(folders["bloom"]))  # fmt: skip
    assert "'bloom' is not supported by attnviz's own engine" in said
    assert "--backend auto or transformers serves it through transformers" in said
    # transformers absent: the message says how to get the extra
    said = serve_refused("serve", "--port", "1", "--model", str(folders["bloom"]),
                         before="import sys; sys.modules['transformers'] = None")  # fmt: skip
    assert "the transformers backend, which serves any model transformers loads, is not " in said
    assert BRIDGE_INSTALL in said
    said = serve_refused("serve", "--backend", "onnx")
    assert "argument --backend: invalid choice: 'onnx'" in said
