"""The real shapes ``attnviz bench --shape`` measures: each config.json reads, through its
family, to the real model's size (transformers' count of the same config is the oracle); and a
model of real width and vocabulary (SmolLM2-135M's, two of its layers) written with safetensors
loads and answers a trace of a few hundred tokens with transformers' attention."""

from __future__ import annotations

import pytest
import torch
from fastapi.testclient import TestClient

from attnviz.bench.shape import SHAPES, ShapeError, shape_config, write_folder
from attnviz.bench.shape import table as shape_table
from attnviz.engine import Transformer
from attnviz.pretrained.convert import FAMILIES

# The published parameter counts (a tied unembedding counted once).
PARAMETERS = {"qwen2.5-0.5b": 494_032_768, "smollm2-135m": 134_515_008,
              "llama-3.2-1b": 1_235_814_400}  # fmt: skip
SIZES = {  # d_model, layers, heads, kv heads, head size, feed-forward, vocabulary, rope base
    "qwen2.5-0.5b": (896, 24, 14, 2, 64, 4864, 151936, 1e6),
    "smollm2-135m": (576, 30, 9, 3, 64, 1536, 49152, 1e5),
    "llama-3.2-1b": (2048, 16, 32, 8, 64, 8192, 128256, 5e5),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_each_shape_reads_to_the_real_models_size(name):
    from transformers import AutoConfig, AutoModelForCausalLM

    hf = shape_config(name)
    cfg = FAMILIES[hf["model_type"]].config(hf)
    got = (cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.kv_heads, cfg.d_head, cfg.hidden,
           cfg.vocab_size, cfg.rope_base)  # fmt: skip
    assert got == SIZES[name]
    assert cfg.unembed and cfg.causal and cfg.norm_type == "rms" and cfg.gated
    with torch.device("meta"):
        ours = Transformer(cfg)
        kw = {k: v for k, v in hf.items() if k not in ("model_type", "architectures")}
        theirs = AutoModelForCausalLM.from_config(AutoConfig.for_model(hf["model_type"], **kw))
    tied = cfg.vocab_size * cfg.d_model  # the unembedding is the token table
    assert sum(p.numel() for p in ours.parameters()) - tied == PARAMETERS[name]
    assert theirs.num_parameters() == PARAMETERS[name]


def test_an_unknown_shape_is_refused_by_name():
    with pytest.raises(ShapeError, match="--shape: 'gpt-5' is not one of qwen2.5-0.5b"):
        shape_config("gpt-5")


@pytest.fixture(scope="module")
def smol_dir(tmp_path_factory):
    """SmolLM2-135M's width, heads and full vocabulary, two layers, bfloat16 safetensors."""
    return write_folder("smollm2-135m", tmp_path_factory.mktemp("shape") / "smol", layers=2)


@pytest.mark.slow
def test_a_real_width_model_loads_from_safetensors_and_traces_like_transformers(smol_dir):
    from transformers import AutoModelForCausalLM

    from attnviz.app import create_app
    from attnviz.bench.harness import FIRST, text_of
    from attnviz.pretrained.tokenize import TextTokenizer
    from attnviz.settings import Settings
    from attnviz.wire.compact import decode
    from attnviz.wire.constants import COMPACT_MEDIA_TYPE

    client = TestClient(create_app(Settings(device="cpu", builtin_model=False,
                                            models=str(smol_dir))))  # fmt: skip
    info = client.get("/api/models").json()
    assert client.get("/api/models").status_code == 200, info
    text = text_of(TextTokenizer.from_file(smol_dir / "tokenizer.json"), 300)
    body = {"model": "smol", "text": text}
    first = client.post("/api/trace", json=body, params=FIRST,
                        headers={"Accept": COMPACT_MEDIA_TYPE})  # fmt: skip
    assert first.status_code == 200, first.text[:300]
    meta, _ = decode(first.content)
    assert (meta["n"], meta["layers"], meta["heads"], meta["d"]) == (300, 2, 9, 576)
    r = client.post("/api/trace", json=body, params={"fields": "attentions", "layer": 1})
    assert r.status_code == 200, r.text[:300]
    t = r.json()
    ours = torch.tensor(t["attentions"][0])  # (heads, T, T) of layer 1
    lm = AutoModelForCausalLM.from_pretrained(smol_dir, attn_implementation="eager",
                                              dtype=torch.float32).eval()  # fmt: skip
    with torch.no_grad():
        out = lm(torch.tensor([t["token_ids"]]), output_attentions=True)
    torch.testing.assert_close(ours, out.attentions[1][0], atol=1e-5, rtol=0)


def test_the_shape_table_reads_a_report():
    from attnviz.bench.shape import ShapeReport, ShapeRow

    row = ShapeRow(tokens=2048, hf_forward_ms=30_000.0, first_request_ms=36_000.0, ratio=1.2,
                   first_paint_bytes=250_000, peak_rss_bytes=4 * 10**9, health_worst_ms=12.0,
                   health_failures=0, page_parts_ms={"head": 41.0, "trajectories": 612.4},
                   parts_peak_rss_bytes=4_100_000_000)  # fmt: skip
    gone = ShapeRow(tokens=4096, hf_forward_ms=None, first_request_ms=None, ratio=None,
                    first_paint_bytes=0, peak_rss_bytes=0, health_worst_ms=3.0,
                    health_failures=2, error="/api/trace answered 0",
                    note="transformers' forward needs 28.2 GB of attentions")  # fmt: skip
    report = ShapeReport(shape="qwen2.5-0.5b", device="cpu", torch_threads=2,
                         parameters=494_032_768, weights_bytes=2_000_000_000, dtype="float32",
                         loaded_rss_bytes=2_600_000_000, load_peak_rss_bytes=3_000_000_000,
                         rows=[row, gone],
                         generation={"steps": 256, "prompt_tokens": 32, "ours_s": 60.0,
                                     "transformers_s": 50.0, "same_ids": True})  # fmt: skip
    table = shape_table(report)
    assert "| 2,048 | 30.00 s | 36.00 s | 1.20x | 0.25 MB | 4.00 GB | 12 ms |" in table
    assert "| 4,096 | - | failed | - | 0.00 MB | 0.00 GB | 3 ms, 2 failed |" in table
    assert "4,096 tokens: transformers' forward needs 28.2 GB of attentions" in table
    assert (
        "2,048 tokens, the page's next parts in turn: head 41 ms, trajectories 612 ms (the "
        "server's peak memory then 4.10 GB)"
    ) in table
    assert "4,096 tokens, the page's" not in table
    assert "target for its peak: weights x 1.3 + 1 GB = 3.60 GB" in table
    assert "ours (key/value cache) 60.0 s; transformers' generate" in table and "1.20x" in table
