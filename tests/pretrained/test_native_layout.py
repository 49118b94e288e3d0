"""The native engine with a ``Layout`` against transformers' own vision-language text models, in
float32 within 1e-5: tiny random Qwen2-VL, Qwen2.5-VL and Qwen3-VL text models (multimodal
rotary positions, chunked and interleaved) converted by their families' config and weights
readers, fed 3-D positions that hold a grid of picture tokens; Gemma 3 and PaliGemma (Gemma 2
text) through their multimodal models' language-model path with token_type_ids (Gemma 3's
picture blocks, PaliGemma's prefix), a sliding layer's window shorter than the text; a cached
step at explicit positions against transformers' cache; the config readers' refusals."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from attnviz.capture import capture_trace
from attnviz.engine import Layout, Transformer, act_name, capture
from attnviz.engine.model import KVCache
from attnviz.pretrained.checkpoint import ConversionError
from attnviz.pretrained.convert import FAMILIES

TOL = 1e-5
T = 16


def _perturb(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Every weight moved off its initial value (norms away from 1, biases from 0)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.1)
    return model.eval()


def native(text_config, state: dict) -> Transformer:
    """The engine's model of a transformers text model: its family's readers, as a folder's
    loader calls them (config.json's dict, the checkpoint's tensors). A bare text model has no
    LM head: it is read tied (these runs compare attentions and hidden states, not logits)."""
    hf = text_config.to_dict()
    family = FAMILIES[hf["model_type"]]
    cfg = family.config(hf)
    model = Transformer(cfg)
    model.load_state_dict(family.weights(cfg, state, {**hf, "tie_word_embeddings": True}))
    return model.eval()


def ours_on(model: Transformer, ids: torch.Tensor, layout: Layout) -> dict:
    L = model.cfg.n_layers
    names = [act_name("pattern", i) for i in range(L)]
    names += [act_name("resid_post", i) for i in range(L)]
    with torch.no_grad(), capture(model, names) as cache:
        out = model(ids, layout=layout)
    return {
        "attentions": [cache[act_name("pattern", i)] for i in range(L)],
        "hidden": [cache[act_name("resid_post", i)] for i in range(L - 1)],
        "last": out,
    }


def assert_equal_runs(ours: dict, theirs) -> None:
    assert len(ours["attentions"]) == len(theirs.attentions)
    for a, b in zip(ours["attentions"], theirs.attentions, strict=True):
        assert (a - b).abs().max() < TOL
    for i, h in enumerate(ours["hidden"]):  # hidden state i + 1: block i's output
        assert (h - theirs.hidden_states[i + 1]).abs().max() < TOL
    assert (ours["last"] - theirs.last_hidden_state).abs().max() < TOL


# --- multimodal rotary positions -------------------------------------------------------------


def grid_positions() -> torch.Tensor:
    """(3, 16) positions as get_rope_index gives them: 3 text tokens, a picture of 1 x 3 x 4
    merged patches (time 3, height 3 + row, width 3 + column), then text from the grid's
    largest index + 1 (7), every section alike."""
    rows, cols = torch.meshgrid(torch.arange(3), torch.arange(4), indexing="ij")
    grid = torch.stack([torch.full((12,), 3), 3 + rows.flatten(), 3 + cols.flatten()])
    return torch.cat([torch.arange(3).expand(3, 3), grid, torch.arange(7, 8).expand(3, 1)], 1)


def qwen_text(kind: str):
    """A tiny random text model of ``kind`` (eager attention): 2 layers, 4 heads of 16 (8
    frequency pairs: M-RoPE sections 2 / 3 / 3), 2 key/value heads."""
    import transformers.models.qwen3_vl.modeling_qwen3_vl as q3
    from transformers import (
        Qwen2_5_VLTextConfig,
        Qwen2_5_VLTextModel,
        Qwen2VLTextConfig,
        Qwen2VLTextModel,
    )
    from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLTextConfig

    config_class, model_class = {
        "qwen2_vl": (Qwen2VLTextConfig, Qwen2VLTextModel),
        "qwen2_5_vl": (Qwen2_5_VLTextConfig, Qwen2_5_VLTextModel),
        "qwen3_vl": (Qwen3VLTextConfig, q3.Qwen3VLTextModel),
    }[kind]
    config = config_class(
        vocab_size=60, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                         "mrope_section": [2, 3, 3]},
        attn_implementation="eager", bos_token_id=None, eos_token_id=None, pad_token_id=None,
    )  # fmt: skip
    torch.manual_seed(0)
    return _perturb(model_class(config), 1)


@pytest.fixture(scope="module", params=["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def qwen(request):
    hf = qwen_text(request.param)
    return request.param, hf, native(hf.config, dict(hf.state_dict()))


def _ids() -> torch.Tensor:
    return torch.randint(0, 60, (1, T), generator=torch.Generator().manual_seed(2))


def test_the_families_read_multimodal_rotary_sections(qwen):
    kind, _, ours = qwen
    assert ours.cfg.rope_sections == (2, 3, 3)
    assert ours.cfg.rope_interleaved == (kind == "qwen3_vl")


def test_multimodal_rotary_positions_equal_transformers(qwen):
    _, hf, ours = qwen
    ids, pos = _ids(), grid_positions()
    with torch.no_grad():
        theirs = hf(input_ids=ids, position_ids=pos[:, None], output_attentions=True,
                    output_hidden_states=True)  # fmt: skip
        plain = hf(input_ids=ids, output_attentions=True)
    assert_equal_runs(ours_on(ours, ids, Layout(positions=pos)), theirs)
    assert (plain.attentions[1] - theirs.attentions[1]).abs().max() > 1e-3  # positions matter
    # A trace of the model at the layout: its recomputed weights are transformers' too.
    tensors = capture_trace(ours, ids, keep_qkv_bytes=0, layout=Layout(positions=pos))
    tensors.release()
    for i in range(2):
        assert (tensors.pattern(i) - theirs.attentions[i][0]).abs().max() < TOL


def test_a_cached_step_at_explicit_positions_equals_transformers_cache(qwen):
    from transformers import DynamicCache

    _, hf, ours = qwen
    ids, pos = _ids(), grid_positions()
    P = T - 1
    with torch.no_grad():
        cache = DynamicCache(config=hf.config)
        hf(input_ids=ids[:, :P], position_ids=pos[:, None, :P], cache=cache,
           use_cache=True)  # fmt: skip
        theirs = hf(input_ids=ids[:, P:], position_ids=pos[:, None, P:], cache=cache,
                    use_cache=True).last_hidden_state  # fmt: skip
        kv = KVCache()
        ours(ids[:, :P], cache=kv, layout=Layout(positions=pos[:, :P]))
        step = ours(ids[:, P:], cache=kv, layout=Layout(positions=pos[:, P:]))
        whole = ours(ids, layout=Layout(positions=pos))
    assert (step - theirs).abs().max() < TOL
    assert (step[0, 0] - whole[0, -1]).abs().max() < TOL


@pytest.mark.parametrize("kind", ["qwen2_5_vl", "qwen3_vl"])
def test_the_positions_of_get_rope_index_and_its_deltas(kind):
    """The multimodal model's own get_rope_index (a 1 x 4 x 6 picture grid, merged 2 x 2 into
    6 tokens) places the text model's tokens; ours equal its language model at them (the
    Qwen3-VL text config as the multimodal config writes it, with no mrope_interleaved), and a
    written token continues at index + rope delta, as transformers' generation puts it."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLModel
    from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLConfig
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLModel

    from attnviz.engine.layout import continued

    config_class, model_class = {
        "qwen2_5_vl": (Qwen2_5_VLConfig, Qwen2_5_VLModel),
        "qwen3_vl": (Qwen3VLConfig, Qwen3VLModel),
    }[kind]
    text = qwen_text(kind).config.to_dict()
    vision = {
        "depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 4,
        "out_hidden_size": 64, "patch_size": 8, "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    }  # fmt: skip
    config = config_class(
        text_config={k: v for k, v in text.items() if k != "model_type"}, vision_config=vision,
        image_token_id=55, video_token_id=56, vision_start_token_id=54, vision_end_token_id=57,
        attn_implementation="eager",
    )  # fmt: skip
    torch.manual_seed(0)
    hf = _perturb(model_class(config), 5)
    ids = _ids() % 50
    ids[0, 3], ids[0, 4:10], ids[0, 10] = 54, 55, 57  # <vision_start> 6 x <image> <vision_end>
    types = (ids == 55).int()
    pos, delta = hf.get_rope_index(ids, types, image_grid_thw=torch.tensor([[1, 4, 6]]))
    assert pos[:, 0, 4:10].tolist() == [[4] * 6, [4, 4, 4, 5, 5, 5], [4, 5, 6, 4, 5, 6]]
    ours = native(config.text_config, dict(hf.language_model.state_dict()))
    assert ours.cfg.rope_interleaved == (kind == "qwen3_vl")
    layout = Layout(positions=pos[:, 0])
    with torch.no_grad():
        theirs = hf.language_model(input_ids=ids, position_ids=pos, output_attentions=True,
                                   output_hidden_states=True)  # fmt: skip
    assert_equal_runs(ours_on(ours, ids, layout), theirs)
    later = continued(layout, T, T, 2)
    assert later is not None and later.positions is not None
    assert torch.equal(later.positions, (torch.arange(T, T + 2) + delta[0]).expand(3, 2))


def test_the_config_readers_refuse_what_transformers_does_not_mean():
    hf = qwen_text("qwen2_5_vl").config.to_dict()
    family = FAMILIES["qwen2_5_vl_text"]
    rope = hf["rope_parameters"]
    with pytest.raises(ConversionError, match="mrope_section"):
        family.config({**hf, "rope_parameters": {**rope, "mrope_section": [2, 3, 4]}})
    with pytest.raises(ConversionError, match="mrope_interleaved"):
        family.config({**hf, "rope_parameters": {**rope, "mrope_interleaved": True}})
    # The hub's older style: rope_scaling of type "mrope" is the default rotation.
    old = {k: v for k, v in hf.items() if k != "rope_parameters"}
    cfg = family.config({**old, "rope_theta": 10000.0,
                         "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]}})  # fmt: skip
    assert cfg.rope_sections == (2, 3, 3) and cfg.rope_scaling is None
    assert family.config(hf) == cfg
    # Plain Qwen2 reads no sections (its transformers code has none).
    assert FAMILIES["qwen2"].config({**hf, "model_type": "qwen2"}).rope_sections is None


# --- bidirectional spans -----------------------------------------------------------------------


def _vision() -> dict:
    return {
        "model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 64,
        "num_hidden_layers": 1, "num_attention_heads": 4, "image_size": 64, "patch_size": 8,
        "vision_use_head": False,
    }  # fmt: skip


def _gemma_text(**extra) -> dict:
    """2 layers (a sliding one, window 3, and a full one), 4 heads of 16, 2 key/value heads."""
    return {
        "vocab_size": 60, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "sliding_window": 3,
        "query_pre_attn_scalar": 16, "max_position_embeddings": 256, "bos_token_id": None,
        "eos_token_id": None, "pad_token_id": None, **extra,
    }  # fmt: skip


def _spans(token_type_ids: torch.Tensor, value: int) -> tuple[tuple[int, int], ...]:
    """The runs of ``value`` in (1, T) token_type_ids, as [start, stop) spans."""
    flags = (token_type_ids[0] == value).tolist() + [False]
    spans, begin = [], None
    for i, flag in enumerate(flags):
        if flag and begin is None:
            begin = i
        if not flag and begin is not None:
            spans.append((begin, i))
            begin = None
    return tuple(spans)


def test_gemma3_picture_blocks_equal_transformers():
    """Gemma 3's masks: OR(causal, block) on full layers, AND(window, OR(causal, block)) on
    sliding ones: a block longer than the window sees its later tokens, not its far earlier."""
    from transformers import Gemma3Config, Gemma3Model

    config = Gemma3Config(
        text_config=_gemma_text(layer_types=["sliding_attention", "full_attention"]),
        vision_config=_vision(), mm_tokens_per_image=16, image_token_index=59,
        attn_implementation="eager",
    )  # fmt: skip
    torch.manual_seed(0)
    hf = _perturb(Gemma3Model(config), 3)
    ids = _ids() % 50  # no picture token: the blocks come from token_type_ids alone
    types = torch.zeros(1, T, dtype=torch.long)
    types[0, 2:9] = 1  # a picture of 7 tokens, longer than the window
    types[0, 11:14] = 1
    state = {k: v for k, v in hf.language_model.state_dict().items()}
    ours = native(config.text_config, state)
    assert ours.cfg.window_in_spans and ours.cfg.window_of(0) == 3
    spans = _spans(types, 1)
    assert spans == ((2, 9), (11, 14))
    with torch.no_grad():
        theirs = hf(input_ids=ids, token_type_ids=types, output_attentions=True,
                    output_hidden_states=True)  # fmt: skip
        causal = hf(input_ids=ids, output_attentions=True)
    assert_equal_runs(ours_on(ours, ids, Layout(spans=spans)), theirs)
    tensors = capture_trace(ours, ids, keep_qkv_bytes=0, layout=Layout(spans=spans))
    tensors.release()  # a trace's weights recomputed from q and k: transformers' too
    for i in range(2):
        assert (tensors.pattern(i) - theirs.attentions[i][0]).abs().max() < TOL
    for i in range(2):  # the blocks matter on both layers
        assert (causal.attentions[i] - theirs.attentions[i]).abs().max() > 1e-3
    other = Transformer(replace(ours.cfg, window_in_spans=False))
    other.load_state_dict(ours.state_dict())
    moved = ours_on(other.eval(), ids, Layout(spans=spans))["attentions"][0]
    assert (moved - theirs.attentions[0]).abs().max() > 1e-3  # the composition matters


def test_a_paligemma_prefix_equals_transformers():
    """PaliGemma (Gemma 2 text): the prefix (token_type_ids 0) sees itself whole on every layer,
    OR(AND(window, causal), prefix), at positions from 1."""
    from transformers import PaliGemmaConfig, PaliGemmaModel

    config = PaliGemmaConfig(
        text_config=_gemma_text(model_type="gemma2"), vision_config=_vision(),
        projection_dim=32, hidden_size=32, vocab_size=60, image_token_index=59,
        attn_implementation="eager",
    )  # fmt: skip
    torch.manual_seed(0)
    hf = _perturb(PaliGemmaModel(config), 4)
    ids = _ids() % 50
    types = torch.ones(1, T, dtype=torch.long)
    types[0, :9] = 0  # a prefix of 9, three times the window
    # PaliGemma sets its text config's use_bidirectional_attention, which its eager attention
    # does not read (the model's mask decides): the engine's span is that mask.
    text = config.text_config.to_dict()
    assert text.pop("use_bidirectional_attention") is True
    family = FAMILIES[text["model_type"]]
    cfg = replace(family.config(text), window_in_spans=False)
    ours = Transformer(cfg)
    ours.load_state_dict(family.weights(cfg, dict(hf.language_model.state_dict()), text))
    layout = Layout(positions=torch.arange(1, T + 1), spans=_spans(types, 0))
    with torch.no_grad():
        theirs = hf(input_ids=ids, token_type_ids=types, output_attentions=True,
                    output_hidden_states=True)  # fmt: skip
    assert_equal_runs(ours_on(ours.eval(), ids, layout), theirs)
    # On the sliding layer the prefix overrides the window (Gemma 3's composition would not).
    other = Transformer(replace(cfg, window_in_spans=True))
    other.load_state_dict(ours.state_dict())
    windowed = ours_on(other.eval(), ids, layout)["attentions"][0]
    assert (windowed - theirs.attentions[0]).abs().max() > 1e-3
    assert theirs.attentions[0][0, :, 0, 8].min() > 0  # the first token sees the prefix's last
