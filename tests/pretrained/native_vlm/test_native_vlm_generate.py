"""Generation with images by a natively served vision-language model (its language model in the
engine, its tower through transformers) against transformers' own ``generate``
(do_sample=False), for each tiny folder whose text model is a native family: the first step
reads the image, later ones the engine's cache at the text's next rotary index (Qwen's M-RoPE
shift kept); the trace of what it wrote is transformers' forward on the whole sequence."""

from __future__ import annotations

import pytest
import torch

from tests.pretrained.bridge.test_vlm_generate import eos, generated, whole
from tests.support.checkpoints_vlm import TinyVlms
from tests.support.images import gradient

TOL = 1e-4
STEPS = 12
NATIVE = ["gemma3", "qwen2_5_vl", "qwen2_vl", "paligemma2", "llava", "idefics3"]
TEXT = "look: <image> the cat sat on the mat"


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> TinyVlms:
    return TinyVlms(tmp_path_factory.mktemp("native-vlm-generate"))


@pytest.mark.parametrize("name", NATIVE)
def test_greedy_with_an_image_is_transformers_generate(made, name):
    m, hf = made.native(name), made.oracle(name)
    enc, _ = m.encode(TEXT, [gradient(90, 40)])
    want = generated(hf, enc, STEPS)
    got = m.continue_ids(enc.ids, STEPS, stop=eos(hf), images=enc)
    assert got == want
    assert len(set(got)) > 1, "a continuation that tells positions apart"


@pytest.mark.parametrize("name", NATIVE)
def test_the_trace_of_what_it_wrote_is_transformers_forward_on_the_whole(made, name):
    m, hf = made.native(name), made.oracle(name)
    enc, _ = m.encode(TEXT, [gradient(90, 40)])
    new = m.continue_ids(enc.ids, STEPS, images=enc)
    n = len(enc.ids)
    t = m.trace(enc.ids + new, images=enc)
    with torch.no_grad():
        out = hf(**whole(enc, new, name), output_attentions=True, output_hidden_states=True)
    want = torch.stack([h[0] for h in out.hidden_states])  # (L+1, T, C)
    assert t.states.shape == want.shape and t.n == n + len(new)
    assert (t.states - want).abs().max() < TOL
    t.release()
    for layer, w in enumerate(out.attentions):
        assert (t.pattern(layer) - w[0]).abs().max() < TOL
    assert out.logits[0, n - 1 : -1].argmax(-1).tolist() == new
    mrope = m.mrope(enc.ids + new, enc)
    if mrope is not None:  # Qwen: the model's own index of the whole, written tokens text
        given = whole(enc, new, name)
        positions, _ = hf.model.get_rope_index(
            given["input_ids"], mm_token_type_ids=given["mm_token_type_ids"],
            image_grid_thw=given["image_grid_thw"],
        )  # fmt: skip
        assert mrope["positions"] == positions[:, 0].tolist()


def test_sampling_with_an_image_is_seeded_and_a_text_alone_is_the_engines(made):
    m, hf = made.native("qwen2_5_vl"), made.oracle("qwen2_5_vl")
    enc, _ = m.encode(TEXT, [gradient(90, 40)])
    a = m.continue_ids(enc.ids, STEPS, temperature=1.5, seed=3, images=enc)
    assert a == m.continue_ids(enc.ids, STEPS, temperature=1.5, seed=3, images=enc)
    assert a != m.continue_ids(enc.ids, STEPS, temperature=1.5, seed=4, images=enc)
    ids = m.tokenizer("the cat sat on the mat").ids
    with torch.no_grad():
        want = hf.generate(input_ids=torch.tensor([ids]), do_sample=False, max_new_tokens=STEPS)
    assert m.continue_ids(ids, STEPS, stop=eos(hf)) == want[0, len(ids) :].tolist()


def test_it_never_writes_the_image_token(made):
    m = made.native("gemma3")
    enc, _ = m.encode(TEXT, [gradient(90, 40)])
    image = enc.image_token
    assert image is not None

    def favour(_module, _args, logits):
        logits[..., image] += 1e4  # the image token first, always
        return logits

    hook = m.model.hook_logits.register_forward_hook(favour)
    try:
        new = m.continue_ids(enc.ids, 4, images=enc)
        assert len(new) == 4 and image not in new
    finally:
        hook.remove()
