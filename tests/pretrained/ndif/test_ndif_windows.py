"""What an NDIF model's trace says of its attention (issue 42): each layer's window, scaling and
soft-cap, read at start from what its attention is given on a forward here with its weights on
the meta device (``meta_probe.read_attention``: the positions and masks computed for real, the
weights' arithmetic on shapes alone), as the transformers bridge's probe reads a local model's.
On tiny random Gemma 2 (a soft-cap, a window on alternate layers), Cohere 2 (windows on every
other layer), StarCoder2 (a window on every layer), Llama and Mixtral (experts), the trace's
``meta.attention`` with no deployment ever reached equals the bridge's, and each window hides
exactly the keys transformers' eager weights give nothing; NeoMME's windows, which differ from
layer to layer, are read the same way. Windows that cannot be read are said to be unread, never
"none"."""

from __future__ import annotations

import pytest
import torch

from attnviz.engine.layout import hidden_keys
from attnviz.pretrained.bridge import load_bridged
from attnviz.pretrained.bridge.meta_probe import read_attention
from attnviz.pretrained.ndif import open_ndif
from attnviz.pretrained.registry import ModelRegistry
from attnviz.schemas.trace import TextTraceRequest
from attnviz.services.text_trace import run_text_trace
from tests.support.checkpoints import make_tiny_llama
from tests.support.checkpoints_bridge import (
    NEOMME_HALF_WINDOWS,
    WINDOW,
    _causal,
    hf_forward,
    make_tiny_cohere2,
    make_tiny_gemma2,
    make_tiny_neomme,
    make_tiny_starcoder2,
)

pytest.importorskip("nnsight")  # the extra attnviz[ndif]; in the dev install

CPU = torch.device("cpu")
# Past every window here (StarCoder2's and Gemma 2's 8): the windows cut.
TEXT = "the cat sat on the mat, and then the dog sat on the cat while the bird sang"
# A deployment nothing here reaches: the model is built on the meta device, its weights never
# read, and a trace's meta is made before any trip.
NOWHERE = "http://127.0.0.1:9"


def make_tiny_mixtral(folder):
    """Mixtral, 2 layers x 4 heads (2 key/value heads), d_model 32, 4 experts (2 a token)."""
    return _causal(
        folder, "mixtral", 0, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
        max_position_embeddings=256,
    )  # fmt: skip


# Each family, and the windows its layers have (transformers' own, checked below too).
FAMILIES = {
    "llama": (make_tiny_llama, [None, None]),
    "gemma2": (make_tiny_gemma2, [WINDOW, None]),
    "cohere2": (make_tiny_cohere2, [WINDOW, None, WINDOW, None]),
    "starcoder2": (make_tiny_starcoder2, [WINDOW, WINDOW]),
    "mixtral": (make_tiny_mixtral, [None, None]),
}


def eager_windows_hold(folder, ids: list[int], windows: list, causal: bool) -> None:
    """Each layer's keys that ``windows`` hide are exactly those every head of transformers'
    eager forward gives nothing (the oracle)."""
    out = hf_forward(folder, ids)
    T = len(ids)
    for layer, weights in enumerate(out.attentions):
        nothing = (weights[0] == 0).all(0)  # (T, T)
        assert torch.equal(hidden_keys(T, T, 0, causal, windows[layer], CPU), nothing), layer


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_remote_meta_says_what_the_bridges_probe_reads(tmp_path, family):
    make, windows = FAMILIES[family]
    folder = make(tmp_path / f"tiny-{family}")
    remote = open_ndif(str(folder), NOWHERE)
    assert {p.device.type for p in remote.lm._module.parameters()} == {"meta"}
    models = ModelRegistry([remote, load_bridged(folder, CPU, name="bridged")])
    a, b = (run_text_trace(TextTraceRequest(model=n, text=TEXT), models, None)
            for n in (remote.name, "bridged"))  # fmt: skip
    assert not a.tensors.backend._based  # nothing asked of the deployment: the meta is made here
    assert a.meta["attention"] == b.meta["attention"]
    attention = a.meta["attention"]
    assert attention["windows"] == windows and attention["windows_unread"] is None
    assert a.meta["tokens"] == b.meta["tokens"] and a.tensors.n > 2 * WINDOW
    eager_windows_hold(folder, a.meta["token_ids"], windows, True)
    if family == "gemma2":  # its query_pre_attn_scalar 1 and attention soft-cap, not 1/sqrt(8)
        assert attention["scale"] == 1.0 and attention["softcap"] == 0.2


def test_layers_whose_windows_differ_are_read_on_the_meta_device(tmp_path):
    """NeoMME's windows of 3 and 6 keys either side (a window of 4 and 7) and its global
    layer: read on the meta device as the bridge reads them by running the model, and as
    transformers' eager weights apply them."""
    from transformers import AutoConfig, AutoModel

    folder = make_tiny_neomme(tmp_path / "tiny-neomme")
    with torch.device("meta"):
        meta = AutoModel.from_config(AutoConfig.from_pretrained(folder))
    assert {p.device.type for p in meta.parameters()} == {"meta"}
    given = read_attention(meta, len(NEOMME_HALF_WINDOWS), 2**30)
    assert not isinstance(given, str), given
    windows = [None if w is None else w + 1 for w in NEOMME_HALF_WINDOWS]
    assert given.windows == windows == [4, 7, None, 4]
    bridged = load_bridged(folder, CPU)
    assert [bridged.cfg.window_of(i) for i in range(4)] == windows
    assert given.scaling == bridged.cfg.attn_scale and given.softcap is None
    ids = bridged.tokenizer(TEXT).ids
    eager_windows_hold(folder, ids, windows, False)


def test_windows_not_read_are_said_unread_not_none(tmp_path):
    """Gemma 2's window, whose probe is over what this server reads at start (a cap of 0 MB
    here): its windows are null and the meta says they were not read over NDIF, and why; its
    scaling and soft-cap are read all the same, on the short probe."""
    folder = make_tiny_gemma2(tmp_path / "tiny-gemma2")
    remote = open_ndif(str(folder), NOWHERE, probe_bytes=0)
    trace = run_text_trace(TextTraceRequest(model=remote.name, text=TEXT),
                           ModelRegistry([remote]), None)  # fmt: skip
    attention = trace.meta["attention"]
    assert attention["windows"] == [None, None] and attention["window_notes"] == [None, None]
    unread = attention["windows_unread"]
    assert unread.startswith(f"not read over NDIF: its window of {WINDOW} tokens is read from "
                             "masks of 24 tokens, 0.0176 MB, more than this server reads "
                             "when it starts (0 MB)")  # fmt: skip
    assert attention["scale"] == 1.0 and attention["softcap"] == 0.2
