"""NDIF's plan finds a model's final norm as the transformers bridge's probe does (issue 42):
the modules its forward calls after its last layer (``head.find_after_blocks``, the forward run
on fake tensors, so over the meta device's weights that a deployment's model has here), never
a guess by name. On tiny random Llama, OPT (its final norm on ``model.decoder``, which no name
on the base model finds), Gemma 2 and Mixtral (experts), the plan's modules are those the
bridge's probe found by running the model. The predictions and logit lens made on the
deployment (nnsight's local execution) are the bridge's, and top-k transformers' own: OPT's
(that final norm), Cohere's and Granite's (a logit scale, found there from the model's own
logits as the bridge's probe finds it, ``reduce.logit_scale``: no name read)."""

from __future__ import annotations

import pytest
import torch

from attnviz.capture.lens import HEAD_MARK
from attnviz.pretrained.bridge import load_bridged
from attnviz.pretrained.ndif import open_ndif
from attnviz.pretrained.ndif.model import find_paths
from attnviz.pretrained.registry import ModelRegistry
from attnviz.schemas.trace import TextTraceRequest, TraceQuery
from attnviz.services.parts import select
from attnviz.services.text_trace import run_text_trace
from tests.support.checkpoints import make_tiny_llama
from tests.support.checkpoints_bridge import (
    _causal,
    hf_forward,
    make_tiny_cohere,
    make_tiny_gemma2,
    make_tiny_granite,
    make_tiny_opt,
)

pytest.importorskip("nnsight")  # the extra attnviz[ndif]; in the dev install

CPU = torch.device("cpu")
TEXT = "the cat sat on the mat, and then the dog sat on the cat"


def make_tiny_mixtral(folder):
    """Mixtral, 2 layers x 4 heads (2 key/value heads), d_model 32, 4 experts (2 a token): its
    experts' routing has shapes that depend on the numbers, which fake tensors lack."""
    return _causal(
        folder, "mixtral", 0, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
        max_position_embeddings=256,
    )  # fmt: skip


MAKERS = {"llama": make_tiny_llama, "opt": make_tiny_opt, "gemma2": make_tiny_gemma2,
          "mixtral": make_tiny_mixtral}  # fmt: skip


@pytest.mark.parametrize("family", sorted(MAKERS))
def test_the_plans_final_norm_is_the_one_the_bridges_probe_found(tmp_path, family):
    from nnsight.modeling.transformers import TransformersModel
    from transformers import AutoTokenizer

    folder = MAKERS[family](tmp_path / f"tiny-{family}")
    # As a deployment's model is here: built on the meta device, its weights never read.
    lm = TransformersModel(str(folder), task="text-generation",
                           tokenizer=AutoTokenizer.from_pretrained(folder), dispatch=False)  # fmt: skip
    remote = lm._module
    assert {p.device.type for p in remote.parameters()} == {"meta"}
    bridged = load_bridged(folder, CPU)
    paths = find_paths(remote, bridged.cfg.n_layers)
    assert not isinstance(paths, str), paths
    found = getattr(bridged.hf, HEAD_MARK)
    assert not isinstance(found, str), found
    names = {id(m): n for n, m in bridged.hf.named_modules()}
    assert paths.final == tuple(names[id(m)] for m in found.final)
    assert paths.final  # each of these has a final norm
    if family == "opt":
        assert paths.final == ("model.decoder.final_layer_norm",)


READ_OUT = {"opt": make_tiny_opt, "cohere": make_tiny_cohere, "granite": make_tiny_granite}


@pytest.mark.parametrize("family", sorted(READ_OUT))
def test_predictions_and_lens_on_the_deployment_are_the_bridges(tmp_path, family):
    folder = READ_OUT[family](tmp_path / f"tiny-{family}")
    models = ModelRegistry([open_ndif(str(folder), "local"),
                            load_bridged(folder, CPU, name="bridged")])  # fmt: skip
    remote = next(n for n, m in models.models.items() if m.backend == "ndif")
    a, b = (run_text_trace(TextTraceRequest(model=n, text=TEXT), models, None)
            for n in (remote, "bridged"))  # fmt: skip
    n = a.tensors.n
    query = TraceQuery(fields="top_k,lens,hidden_states", pos_start=0, pos_count=n)
    got, want = select(a, query).arrays, select(b, query).arrays
    states = got["hidden_states"].double()
    assert torch.allclose(states, want["hidden_states"].double(), atol=1e-4)
    for part in ("top_k", "lens"):
        for key, value in got[part].items():
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                assert torch.allclose(value, want[part][key], atol=1e-4), (part, key)
            elif isinstance(value, torch.Tensor):  # ids and ranks: the very tokens
                assert torch.equal(value, want[part][key]), (part, key)
            else:
                assert value == want[part][key], (part, key)
    # And top-k is the softmax of transformers' own logits (Granite's divided, Cohere's scaled).
    probs = hf_forward(folder, a.meta["token_ids"]).logits[0].softmax(-1)  # (T, V)
    top = got["top_k"]
    assert torch.equal(top["ids"].long(), probs.topk(top["k"]).indices)
    assert torch.allclose(top["probs"], probs.gather(1, top["ids"].long()), atol=1e-5)
