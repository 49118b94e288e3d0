"""Predictions (capture/lens.py) against transformers, the oracle: ``top_k`` is the softmax of
transformers' logits, and the logit lens is transformers' hidden states through its own final
norm and lm_head, within 1e-4, on tiny random GPT-2 and Llama checkpoints run by the native
engine and by the transformers bridge; the chunked computation equals the whole one; over HTTP
the JSON and the compact forms agree, a bad ``k`` is a 422 naming it, an encoder says why it
has no predictions."""

from __future__ import annotations

import pytest
import torch

from attnviz.capture import lens
from attnviz.limits import LIMITS
from attnviz.pretrained.registry import BUILTIN_NAME, ModelRegistry, load_model
from attnviz.schemas.trace import TextTraceRequest, TraceQuery
from attnviz.services.parts import select
from attnviz.services.text_trace import run_text_trace
from attnviz.wire.compact import decode
from attnviz.wire.constants import COMPACT_MEDIA_TYPE
from tests.support.checkpoints import SENTENCES, make_tiny_gpt2, make_tiny_llama

CPU = torch.device("cpu")
TOL = 1e-4
TEXT = " ".join(SENTENCES[:2])


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("lens")
    return {
        "gpt2": make_tiny_gpt2(root / "lens-gpt2", seed=3),
        "llama": make_tiny_llama(root / "lens-llama", seed=4),
    }


def hf_reference(folder, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' logits (T, V) and its logit lens (L+1, T, V): each hidden state but the
    last through its final norm, then its lm_head (the last is already normed: the logits)."""
    from transformers import AutoModelForCausalLM

    hf = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        out = hf(torch.tensor([ids]), output_hidden_states=True)
        norm = getattr(hf.base_model, "ln_f", None) or hf.base_model.norm
        states = [h[0] for h in out.hidden_states]
        lensed = [hf.lm_head(norm(h)) for h in states[:-1]] + [hf.lm_head(states[-1])]
    return out.logits[0], torch.stack(lensed)


@pytest.mark.parametrize("backend", ["auto", "transformers"])
@pytest.mark.parametrize("kind", ["gpt2", "llama"])
def test_top_k_and_the_lens_are_transformers_logits(folders, kind, backend):
    m = load_model(folders[kind], CPU, backend=backend)
    assert m.backend == ("native" if backend == "auto" else "transformers")
    trace = run_text_trace(TextTraceRequest(model=m.name, text=TEXT), ModelRegistry([m]), None)
    ids = trace.meta["token_ids"]
    assert "top_k" not in trace.meta["unavailable"] and len(ids) > 20
    k = 7
    part = select(trace, TraceQuery(fields="top_k,lens", k=k)).arrays
    top, grid = part["top_k"], part["lens"]
    assert top["start"] == grid["start"] == 0
    logits, lensed = hf_reference(folders[kind], ids)
    L1, T = len(trace.tensors.states), len(ids)
    assert lensed.shape[:2] == (L1, T)

    # top_k: the k largest of softmax(logits), most probable first, and the same ids.
    probs = logits.softmax(-1)
    assert top["k"] == k and top["ids"].shape == top["probs"].shape == (T, k)
    assert (top["probs"] - probs.gather(1, top["ids"].long())).abs().max() < TOL
    assert (top["ids"] == probs.topk(k).indices).all()
    assert (top["probs"][:, :-1] >= top["probs"][:, 1:]).all()
    # k of V tokens: what they hold is less than 1, and the rest of the row holds what is left.
    held = top["probs"].double().sum(-1)
    assert float(held.max()) < 1
    rest = probs.double().sum(-1) - probs.double().topk(k).values.sum(-1)
    assert (1 - held - rest).abs().max() < TOL

    # The lens: the top token of every row, its probability, the next token's rank and prob.
    lp = lensed.softmax(-1)  # (L+1, T, V)
    assert grid["rows"] == L1 and grid["ids"].shape == grid["probs"].shape == (L1, T)
    assert (grid["ids"] == lp.argmax(-1)).all()
    assert (grid["probs"] - lp.amax(-1)).abs().max() < TOL
    assert grid["ids"][-1].tolist() == top["ids"][:, 0].tolist()  # the last row: the output
    assert grid["targets"].tolist() == ids[1:] + [-1]
    target = torch.tensor(ids[1:])
    want = lp[:, :-1].gather(2, target.expand(L1, -1)[..., None])[..., 0]  # (L+1, T-1)
    assert (grid["target_probs"][:, :-1] - want).abs().max() < TOL
    tl = lensed[:, :-1].gather(2, target.expand(L1, -1)[..., None])  # the target's logits
    rank = (lensed[:, :-1] > tl).sum(-1) + 1
    assert (grid["target_ranks"][:, :-1] == rank).all()
    assert (grid["target_ranks"][:, -1] == 0).all() and (grid["target_probs"][:, -1] == 0).all()

    # Every id named has its label, as the page labels tokens.
    named = set(grid["ids"].flatten().tolist()) | set(top["ids"].flatten().tolist())
    assert {int(i) for i in top["vocab"]} == set(top["ids"].flatten().tolist())
    assert named <= {int(i) for i in grid["vocab"]} | {int(i) for i in top["vocab"]}
    labels = m.tokenizer.label_ids(ids)[0]
    assert grid["vocab"][str(ids[1])] == labels[1]


def test_a_window_of_positions_is_the_same_slice_in_any_chunks(folders, monkeypatch):
    """pos_start and pos_count give the same numbers as the whole text's, sliced; a few rows of
    logits at a time (as a long text is unembedded) the same tokens and ranks, and the same
    probabilities up to float32 rounding (a matrix product's sums group by its rows)."""
    m = load_model(folders["gpt2"], CPU)
    req = TextTraceRequest(model=m.name, text=TEXT)
    whole = select(run_text_trace(req, ModelRegistry([m]), None), TraceQuery(fields="top_k,lens"))
    monkeypatch.setattr(lens, "_chunk_rows", lambda vocab: 3)
    fresh = run_text_trace(req, ModelRegistry([m]), None)
    part = select(fresh, TraceQuery(fields="top_k,lens", pos_start=13, pos_count=9)).arrays
    assert part["top_k"]["start"] == part["lens"]["start"] == 13
    for name in ("top_k", "lens"):
        for key, value in part[name].items():
            if not isinstance(value, torch.Tensor):
                continue
            want = whole.arrays[name][key]
            want = want[13:22] if name == "top_k" or key == "targets" else want[:, 13:22]
            if value.dtype == torch.int32:
                assert torch.equal(value, want), (name, key)
            else:
                torch.testing.assert_close(value, want, rtol=1e-5, atol=1e-7)
    assert len(part["top_k"]["ids"]) == 9 and part["lens"]["targets"].tolist() == (
        fresh.meta["token_ids"][14:23])  # fmt: skip
    # Past the end: the positions there are.
    n = fresh.meta["n"]
    tail = select(fresh, TraceQuery(fields="lens", pos_start=n - 2, pos_count=50)).arrays["lens"]
    assert tail["ids"].shape[-1] == 2 and tail["targets"].tolist()[-1] == -1


COMPACT = {"accept": COMPACT_MEDIA_TYPE}


def test_json_and_compact_agree_and_k_picks_the_first(client):
    body = {"model": "tiny-gpt2", "text": SENTENCES[0]}
    params = {"fields": "top_k,lens", "k": 4}
    r = client.post("/api/trace", json=body, params=params)
    assert r.status_code == 200, r.text
    j = r.json()
    c = client.post("/api/trace", json=body, params=params, headers=COMPACT)
    assert c.status_code == 200
    meta, arrays = decode(c.content)
    assert meta["top_k"] == {"k": 4, "predicts": "next", "start": 0, "vocab": j["top_k"]["vocab"]}
    assert meta["lens"]["rows"] == j["lens"]["rows"] == j["layers"] + 1
    assert arrays["top_k.ids"].tolist() == j["top_k"]["ids"]
    assert torch.equal(arrays["top_k.probs"], torch.tensor(j["top_k"]["probs"]))
    for key in ("ids", "probs", "targets", "target_ranks", "target_probs"):
        assert arrays[f"lens.{key}"].tolist() == torch.tensor(j["lens"][key]).tolist(), key
    # The default k, and k of 20 (the cap) starting with the same 4.
    r = client.post("/api/trace", json=body, params={"fields": "top_k"}).json()
    assert r["top_k"]["k"] == LIMITS.default_top_k
    many = client.post("/api/trace", json=body, params={"fields": "top_k", "k": 20}).json()
    assert [row[:4] for row in many["top_k"]["ids"]] == j["top_k"]["ids"]


@pytest.mark.parametrize(
    ("k", "message"),
    [
        (0, "k: Input should be greater than or equal to 1"),
        (LIMITS.max_top_k + 1, f"k: Input should be less than or equal to {LIMITS.max_top_k}"),
        ("many", "k: Input should be a valid integer"),
    ],
)
def test_a_bad_k_is_a_422_naming_it(client, k, message):
    body = {"model": "tiny-gpt2", "text": SENTENCES[0]}
    for headers in ({}, COMPACT):
        r = client.post("/api/trace", json=body, params={"fields": "top_k", "k": k},
                        headers=headers)  # fmt: skip
        assert r.status_code == 422, r.text
        assert r.json()["message"].startswith(message)


def test_a_window_out_of_range_or_over_the_bound_is_a_422(client, monkeypatch):
    body = {"model": "tiny-gpt2", "text": SENTENCES[0]}
    n = client.post("/api/trace", json=body, params={"fields": "entropy_mean"}).json()["n"]
    r = client.post("/api/trace", json=body, params={"fields": "lens", "pos_start": n})
    assert r.status_code == 422
    assert r.json()["message"] == f"pos_start: {n} is out of range ({n} tokens: 0 to {n - 1})"
    r = client.post("/api/trace", json=body, params={"fields": "lens", "pos_count": 0})
    assert r.status_code == 422 and r.json()["message"].startswith("pos_count: Input should be")
    monkeypatch.setattr(LIMITS, "max_unembed_flops", 1e5)  # 3 x 4 x 32 x 400 x 2: 3.1e5
    r = client.post("/api/trace", json=body, params={"fields": "lens", "pos_count": 4})
    assert r.status_code == 422
    assert r.json()["message"].startswith("pos_count: lens of 4 positions (3 hidden states")
    assert "ask for fewer positions (pos_start, pos_count)" in r.json()["message"]


def test_an_encoder_says_why_it_predicts_nothing(client):
    body = {"model": BUILTIN_NAME, "text": SENTENCES[0]}
    r = client.post("/api/trace", json=body, params={"fields": "lens"})
    assert r.status_code == 422
    assert r.json()["message"].startswith(f"fields: lens: model {BUILTIN_NAME} is an encoder")
    meta = client.post("/api/trace", json=body, params={"fields": "entropy_mean"}).json()
    assert "masked-language-model head" in meta["unavailable"]["top_k"]


def test_a_toy_trace_has_no_predictions(client, apple_request):
    r = client.post("/api/trace", json=apple_request, params={"fields": "top_k"})
    assert r.status_code == 422
    assert r.json()["message"].startswith("fields: top_k needs a model that predicts tokens")


def make_mlm(folder, model_type: str, seed: int = 5):
    """A small random BERT, RoBERTa or DistilBERT with its masked-language-model head (2 layers
    x 4 heads, d_model 32), every parameter perturbed, as transformers saves it."""
    from transformers import AutoConfig, AutoModelForMaskedLM

    from tests.support.checkpoints import (
        _perturbed_save,
        make_roberta_tokenizer,
        make_wordpiece_tokenizer,
    )

    folder.mkdir(parents=True, exist_ok=True)
    tok = make_roberta_tokenizer() if model_type == "roberta" else make_wordpiece_tokenizer()
    sizes = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
             "intermediate_size": 64}  # fmt: skip
    if model_type == "distilbert":
        sizes = {"dim": 32, "n_layers": 2, "n_heads": 4, "hidden_dim": 64}
    extra = {"roberta": {"max_position_embeddings": 130, "type_vocab_size": 1, "pad_token_id": 1,
                         "bos_token_id": 0, "eos_token_id": 2},
             "bert": {"max_position_embeddings": 128},
             "distilbert": {"max_position_embeddings": 128, "pad_token_id": 0}}[model_type]  # fmt: skip
    config = AutoConfig.for_model(model_type, vocab_size=tok.get_vocab_size(), **sizes, **extra)
    tok.save(str(folder / "tokenizer.json"))
    torch.manual_seed(seed)
    return _perturbed_save(AutoModelForMaskedLM.from_config(config), folder, seed)


def hf_mlm_lens(folder, ids: list[int]) -> torch.Tensor:
    """transformers' masked-language-model head on every hidden state: (L+1, T, V)."""
    from transformers import AutoModelForMaskedLM

    hf = AutoModelForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        out = hf(torch.tensor([ids]), output_hidden_states=True)
        if hasattr(hf, "cls"):
            head = hf.cls
        elif hasattr(hf, "lm_head"):
            head = hf.lm_head
        else:

            def head(h):
                return hf.vocab_projector(hf.vocab_layer_norm(hf.activation(hf.vocab_transform(h))))

        lensed = torch.stack([head(h[0]) for h in out.hidden_states])
    assert torch.allclose(lensed[-1], out.logits[0], atol=1e-5)  # the last: the model's logits
    return lensed


@pytest.mark.parametrize("model_type", ["bert", "roberta", "distilbert"])
def test_an_encoders_mlm_head_predicts_each_position_as_transformers(tmp_path, model_type):
    folder = make_mlm(tmp_path / f"mlm-{model_type}", model_type)
    m = load_model(folder, CPU)
    assert m.backend == "native" and m.mlm is not None
    mask = "<mask>" if model_type == "roberta" else "[MASK]"
    text = f"The animal didn't {mask} the street because it was too tired."
    trace = run_text_trace(TextTraceRequest(model=m.name, text=text), ModelRegistry([m]), None)
    ids = trace.meta["token_ids"]
    assert "lens" not in trace.meta["unavailable"]
    part = select(trace, TraceQuery(fields="top_k,lens", k=4)).arrays
    top, grid = part["top_k"], part["lens"]
    assert top["predicts"] == grid["predicts"] == "masked"
    lensed = hf_mlm_lens(folder, ids)
    lp = lensed.softmax(-1)
    assert (top["ids"] == lp[-1].topk(4).indices).all()
    assert (top["probs"] - lp[-1].topk(4).values).abs().max() < TOL
    assert (grid["ids"] == lp.argmax(-1)).all()
    assert (grid["probs"] - lp.amax(-1)).abs().max() < TOL
    # The target is the text's own token, unknown (-1, rank 0) at the mask.
    at = ids.index(m.tokenizer.tok.token_to_id(mask))
    want = [-1 if i == at else t for i, t in enumerate(ids)]
    assert grid["targets"].tolist() == want
    has = torch.tensor(want) >= 0
    target = torch.tensor(ids)
    tl = lensed.gather(2, target.expand(len(lensed), -1)[..., None])  # (L+1, T, 1)
    rank = (lensed > tl).sum(-1) + 1
    assert (grid["target_ranks"][:, has] == rank[:, has]).all()
    assert (grid["target_ranks"][:, ~has] == 0).all()
    p = lp.gather(2, target.expand(len(lensed), -1)[..., None])[..., 0]
    assert (grid["target_probs"][:, has] - p[:, has]).abs().max() < TOL


def test_an_encoder_saved_without_its_head_says_so(tmp_path):
    from transformers import AutoModel

    folder = make_mlm(tmp_path / "mlm-bert", "bert")
    AutoModel.from_pretrained(folder).save_pretrained(tmp_path / "body")  # the encoder alone
    (tmp_path / "body" / "tokenizer.json").write_bytes((folder / "tokenizer.json").read_bytes())
    m = load_model(tmp_path / "body", CPU)
    assert m.mlm is None
    trace = run_text_trace(TextTraceRequest(model=m.name, text=TEXT), ModelRegistry([m]), None)
    assert trace.meta["unavailable"]["lens"] == (
        f"lens: model {m.name} is an encoder: it predicts no next token, and its "
        "checkpoint has no masked-language-model head"
    )


def test_the_bench_says_what_predictions_cost_beside_the_first_request():
    from attnviz.bench import serve as bench

    row = bench.Row(tokens=512, hf_forward_ms=800.0, first_request_ms=1000.0, ratio=1.25,
                    first_paint_bytes=110_000, bytes_per_value=0.01, parts_ms=900.0,
                    parts_bytes=1_840_000, predictions_ms=250.0, top_k_all_ms=500.0)  # fmt: skip
    encoder = bench.Row(tokens=128, hf_forward_ms=None, first_request_ms=100.0, ratio=None,
                        first_paint_bytes=1, bytes_per_value=0.01, parts_ms=1.0, parts_bytes=1)  # fmt: skip
    table = bench.table(bench.Report(model="m", device="cpu", torch_threads=2, repeat=3,
                                     rows=[encoder, row]))  # fmt: skip
    line = next(x for x in table.splitlines() if x.startswith("Predictions"))
    assert line.endswith("512 tokens: the card's 250 ms (1.25x the first request with it), "
                         "top-k at every position 500 ms (1.50x).")  # fmt: skip
    assert "128 tokens" not in line  # an encoder's row has none
    assert bench.PREDICTIONS["fields"] == "top_k,lens"
