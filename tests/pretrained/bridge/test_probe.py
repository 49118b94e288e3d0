"""The transformers bridge's load probe keeps within its cap (issue 42), on tiny random models
whose configs name a window of WIDE tokens (a real StarCoder2-7B names 4,096):

- where every layer's weights on WIDE + 4 tokens fit the cap, they are read (the window's
  rule checked against them);
- where they do not, the model's masks alone are read on WIDE + 4 tokens, no attention
  computed past the short probe's tokens, and the windows are the same;
- a model whose attention is its own code (GPT-Neo) has its windows read from its weights;
- either way the windows are the ones transformers' eager attention applies (the keys its
  weights give nothing), and a window no probe within the cap can read is refused, naming the
  setting that raises it (ATTNVIZ_PROBE_MB, which reaches the load from the server's
  settings)."""

from __future__ import annotations

import pytest
import torch
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.capture.rules import window_note
from attnviz.engine.layout import hidden_keys
from attnviz.pretrained import ModelFolderError
from attnviz.pretrained.bridge import load_bridged
from attnviz.pretrained.bridge.load import MASK_PAIR_BYTES, PROBE_PAST, PROBE_TOKENS
from attnviz.settings import Settings
from tests.support.checkpoints_bridge import _causal, hf_model

CPU = torch.device("cpu")
WIDE = 600  # past any short probe: the probe must read WIDE + PROBE_PAST tokens to see it
MB = 2**20
CAP = 16 * MB  # the smallest ATTNVIZ_PROBE_MB: 604 tokens' masks fit it, 4 x 4 heads' do not


def make_wide_starcoder2(folder, window: int = WIDE, layers: int = 4):
    """StarCoder2, ``layers`` x 4 heads (2 key/value heads), d_model 32, a sliding ``window``."""
    return _causal(
        folder, "starcoder2", 0, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, sliding_window=window,
        max_position_embeddings=2048,
    )  # fmt: skip


def make_wide_gpt_neo(folder, window: int = WIDE):
    """GPT-Neo, 2 layers x 4 heads, d_model 32: a global layer, then a local one of ``window``."""
    return _causal(
        folder, "gpt_neo", 0, hidden_size=32, num_layers=2, num_heads=4,
        attention_types=[[["global", "local"], 1]], window_size=window,
        max_position_embeddings=2048,
    )  # fmt: skip


@pytest.fixture
def eager_lengths(monkeypatch):
    """The (queries, keys) of every eager attention StarCoder2's and GPT-Neo's layers compute
    while the test runs: what the probe built."""
    import transformers.models.gpt_neo.modeling_gpt_neo as neo
    import transformers.models.starcoder2.modeling_starcoder2 as sc2

    seen: list[tuple[int, int]] = []
    own = sc2.eager_attention_forward

    def counted(module, query, key, *args, **kwargs):
        seen.append((query.shape[-2], key.shape[-2]))
        return own(module, query, key, *args, **kwargs)

    monkeypatch.setattr(sc2, "eager_attention_forward", counted)
    neo_attn = neo.GPTNeoSelfAttention._attn

    def counted_neo(self, query, key, *args, **kwargs):
        seen.append((query.shape[-2], key.shape[-2]))
        return neo_attn(self, query, key, *args, **kwargs)

    monkeypatch.setattr(neo.GPTNeoSelfAttention, "_attn", counted_neo)
    return seen


def assert_eagers_masks(folder, windows: list[int | None]) -> None:
    """The keys each layer's window hides (the engine's causal rule) are exactly those
    transformers' eager weights give nothing, in every head, on a text past the window."""
    T = WIDE + 2 * PROBE_PAST
    hf = hf_model(folder)
    ids = torch.randint(0, hf.config.vocab_size, (1, T), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        out = hf(ids, output_attentions=True)
    for layer, weights in enumerate(out.attentions):
        nothing = (weights[0] == 0).all(0)  # (T, T)
        assert torch.equal(hidden_keys(T, T, 0, True, windows[layer], CPU), nothing), layer


def test_every_layers_weights_past_the_window_where_they_fit(tmp_path, eager_lengths):
    folder = make_wide_starcoder2(tmp_path / "wide-starcoder2")
    m = load_bridged(folder, CPU)  # the default cap: 4 x 4 x 604^2 float32 is 23 MB
    need = WIDE + PROBE_PAST
    assert (need, need) in eager_lengths  # every layer's weights, the rule checked on them
    windows = [m.cfg.window_of(i) for i in range(m.cfg.n_layers)]
    assert windows == [WIDE] * 4 and m.no_qk is None
    assert_eagers_masks(folder, windows)


def test_past_the_cap_the_masks_alone_are_read_and_say_the_same(tmp_path, eager_lengths):
    folder = make_wide_starcoder2(tmp_path / "wide-starcoder2")
    need = WIDE + PROBE_PAST
    assert 4 * 4 * need * need * 4 > CAP >= need * need * MASK_PAIR_BYTES
    m = load_bridged(folder, CPU, probe_bytes=CAP)
    # No attention computed past the short probe: its masks read on 604 tokens, nothing else.
    assert eager_lengths and max(t for t, _ in eager_lengths) == PROBE_TOKENS
    windows = [m.cfg.window_of(i) for i in range(m.cfg.n_layers)]
    assert windows == [WIDE] * 4 and m.no_qk is None
    assert_eagers_masks(folder, windows)
    # A trace past the window: the weights made again from q and k are eager's.
    ids = torch.randint(0, 100, (need + 8,), generator=torch.Generator().manual_seed(2)).tolist()
    t = m.trace(ids)
    t.release()
    with torch.no_grad():
        want = hf_model(folder)(torch.tensor([ids]), output_attentions=True).attentions
    for layer, w in enumerate(want):
        assert (t.pattern(layer) - w[0]).abs().max() < 1e-4


def test_a_model_whose_attention_is_its_own_code_has_its_windows_read_from_its_weights(
    tmp_path, eager_lengths
):
    folder = make_wide_gpt_neo(tmp_path / "wide-gpt-neo")
    need = WIDE + PROBE_PAST
    assert 2 * 4 * need * need * 4 <= CAP  # every layer's weights fit
    m = load_bridged(folder, CPU, probe_bytes=CAP)
    assert (need, need) in eager_lengths and m.no_qk is not None
    windows = [m.cfg.window_of(i) for i in range(m.cfg.n_layers)]
    assert windows == [None, WIDE]
    assert_eagers_masks(folder, windows)


@pytest.mark.parametrize(("make", "key"), [(make_wide_starcoder2, "sliding_window"),
                                           (make_wide_gpt_neo, "window_size")])  # fmt: skip
def test_a_window_no_probe_within_the_cap_reads_is_refused(tmp_path, make, key, eager_lengths):
    folder = make(tmp_path / "wide", window=1000)  # 1,004^2 x 32 bytes of masks: 31 MB
    with pytest.raises(ModelFolderError) as refused:
        load_bridged(folder, CPU, probe_bytes=CAP)
    said = str(refused.value)
    assert f"({key} 1,000)" in said and "probe of 1,004 tokens" in said
    assert "over the probe's cap of 16 MB (ATTNVIZ_PROBE_MB raises it)" in said
    assert max(t for t, _ in eager_lengths) == PROBE_TOKENS  # refused before building it


def test_the_servers_setting_is_the_cap(tmp_path):
    folder = make_wide_starcoder2(tmp_path / "wide-starcoder2", window=1000, layers=2)
    base = {"device": "cpu", "builtin_model": False, "models": str(folder)}
    with pytest.raises(ModelFolderError, match="ATTNVIZ_PROBE_MB raises it"):
        create_app(Settings(**base, probe_mb=16))
    with TestClient(create_app(Settings(**base, probe_mb=64))) as c:
        r = c.post("/api/trace", json={"model": "wide-starcoder2", "text": "the cat sat"})
    assert r.status_code == 200, r.text
    attention = r.json()["attention"]
    assert attention["windows"] == [1000, 1000]
    assert attention["window_notes"] == [window_note(1000, True)] * 2
    assert "only the last 1,000 tokens, itself included" in attention["window_notes"][0]
