"""Generation with images through the transformers bridge against transformers itself: a
vision-language model's greedy continuation of a text and its image (``continue_ids`` with the
Encoded inputs) is transformers' own ``generate`` (do_sample=False), for each family's tiny
random folder (tests/support/checkpoints_vlm.py); the trace of the text, the image and what it
wrote is transformers' forward on the whole sequence with the image (PaliGemma's written tokens
its causal suffix, as ``generate`` types them), and its argmax at each written position is the
token written there."""

from __future__ import annotations

import pytest
import torch

from attnviz.pretrained.bridge.multimodal import Encoded
from attnviz.pretrained.registry import load_model
from tests.support.checkpoints_vlm import TinyVlms
from tests.support.images import gradient  # a wide one: Qwen's M-RoPE shifts the text after it

CPU = torch.device("cpu")
TOL = 1e-4
STEPS = 12
FAMILIES = ["llava", "idefics3", "qwen2_vl", "gemma3", "paligemma2"]
TEXT = "look: <image> the cat sat on the mat"


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> TinyVlms:
    return TinyVlms(tmp_path_factory.mktemp("vlm-generate"))


def eos(hf) -> set[int]:
    """The ids transformers' generate stops after (its generation config's)."""
    e = hf.generation_config.eos_token_id
    return set() if e is None else {e} if isinstance(e, int) else set(e)


def generated(hf, enc: Encoded, steps: int = STEPS) -> list[int]:
    """transformers' greedy generate on the processor's ids and inputs: the ids it wrote."""
    x = torch.tensor([enc.ids])  # (1, T)
    with torch.no_grad():
        out = hf.generate(
            input_ids=x, attention_mask=torch.ones_like(x), **enc.inputs, do_sample=False,
            max_new_tokens=steps,
        )  # fmt: skip
    return out[0, len(enc.ids) :].tolist()


def whole(enc: Encoded, new: list[int], name: str) -> dict:
    """transformers' inputs for the text, the image and what was written, as ``generate``
    grows them: token types of the written tokens 1 for PaliGemma (its causal suffix), 0 (text)
    for the rest; every other input (the pixels, grids, masks) the same."""
    suffix = 1 if name == "paligemma2" else 0
    grown = {
        k: torch.cat([v, torch.full((1, len(new)), suffix if k == "token_type_ids" else 0)], -1)
        if k in ("token_type_ids", "mm_token_type_ids") else v
        for k, v in enc.inputs.items()
    }  # fmt: skip
    return {"input_ids": torch.tensor([enc.ids + new]), **grown}


@pytest.mark.parametrize("name", FAMILIES)
def test_greedy_with_an_image_is_transformers_generate(made, name):
    m, hf = made.model(name), made.oracle(name)
    enc, _ = m.encode(TEXT, [gradient(90, 40)])
    want = generated(hf, enc)
    got = m.continue_ids(enc.ids, STEPS, stop=eos(hf), images=enc)
    assert got == want
    assert len(set(got)) > 1 or name != "qwen2_vl", "a continuation that tells positions apart"


@pytest.mark.parametrize("name", FAMILIES)
def test_the_trace_of_what_it_wrote_is_transformers_forward_on_the_whole(made, name):
    m, hf = made.model(name), made.oracle(name)
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
    # Each written token is the forward's first choice after what comes before it.
    assert out.logits[0, n - 1 : -1].argmax(-1).tolist() == new


def test_a_text_after_a_picture_forgets_its_positions(made):
    """Qwen keeps M-RoPE's shift of the text after an image (``rope_deltas``) for the cached
    steps: a text alone, written after a text with a picture, is still transformers' generate
    of the text alone."""
    m, hf = made.model("qwen2_vl"), made.oracle("qwen2_vl")
    enc, _ = m.encode(TEXT, [gradient(90, 40)])
    m.continue_ids(enc.ids, 4, images=enc)
    ids = m.tokenizer("the cat sat on the mat").ids
    with torch.no_grad():
        want = hf.generate(input_ids=torch.tensor([ids]), do_sample=False, max_new_tokens=STEPS)
    assert m.continue_ids(ids, STEPS, stop=eos(hf)) == want[0, len(ids) :].tolist()


def test_sampling_with_an_image_is_seeded(made):
    m = made.model("llava")
    enc, _ = m.encode(TEXT, [gradient(90, 40)])
    a = m.continue_ids(enc.ids, STEPS, temperature=1.5, seed=3, images=enc)
    assert a == m.continue_ids(enc.ids, STEPS, temperature=1.5, seed=3, images=enc)
    assert a != m.continue_ids(enc.ids, STEPS, temperature=1.5, seed=4, images=enc)


def test_ids_that_are_not_the_images_own_are_refused(made):
    m = made.model("llava")
    enc, _ = m.encode(TEXT, [gradient(90, 40)])
    with pytest.raises(ValueError, match="continued from its own ids"):
        m.continue_ids(enc.ids[1:], 2, images=enc)


def test_it_never_writes_the_image_token(made):
    """An image token written would stand for no image (the trace's forward would have more of
    them than features): the model writes its next choice instead."""
    m = load_model(made.folder("llava"), CPU, backend="transformers")
    enc, _ = m.encode(TEXT, [gradient(90, 40)])
    image = enc.image_token
    assert image is not None

    def favour(_module, _args, logits):
        logits[..., image] += 1e4  # the image token first, always
        return logits

    hook = m.hf.get_output_embeddings().register_forward_hook(favour)
    try:
        new = m.continue_ids(enc.ids, 4, images=enc)
        assert len(new) == 4 and image not in new
        assert m.trace(enc.ids + new, images=enc).n == len(enc.ids) + 4
    finally:
        hook.remove()
