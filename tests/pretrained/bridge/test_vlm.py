"""Vision-language folders through the transformers bridge against transformers itself (eager
attention, the oracle), on tiny random checkpoints with processors written locally
(tests/support/checkpoints_vlm.py): a text with an image, placed where the text's placeholder
stands or before the text, gives the language model's weights and hidden states and the vision
tower's weights of transformers' own forward; a text alone runs as a language model's."""

from __future__ import annotations

import pytest
import torch

from attnviz.errors import TraceError
from attnviz.pretrained.bridge.multimodal import PLACEHOLDER
from tests.support import checkpoints_vlm
from tests.support.checkpoints_vlm import TinyVlms, eager_with_towers
from tests.support.images import gradient

CPU = torch.device("cpu")
TOL = 1e-4
FAMILIES = sorted(
    n.removeprefix("make_tiny_") for n in dir(checkpoints_vlm) if n.startswith("make_tiny_")
)
TEXT = "the cat sat on the mat and looked at the dog"


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> TinyVlms:
    return TinyVlms(tmp_path_factory.mktemp("vlm"))


@pytest.mark.parametrize("name", FAMILIES)
def test_both_towers_are_transformers_own(made, name):
    m = made.model(name)
    written = f"look: {PLACEHOLDER} {TEXT}"
    enc, placed = m.encode(written, [gradient()])
    assert placed.count(m.processor.image_token) == 1
    t = m.trace(enc.ids, images=enc)
    inputs = {"input_ids": torch.tensor([enc.ids]), **enc.inputs}
    out, calls = eager_with_towers(made.folder(name), inputs)
    # The language model: every layer's weights (recomputed from the recorded q and k, once
    # the forward's are dropped) and every hidden state.
    t.release()
    assert t.layers == len(out.attentions)
    for layer, want in enumerate(out.attentions):
        assert (t.pattern(layer) - want[0]).abs().max() < TOL
    want_states = torch.stack([h[0] for h in out.hidden_states])  # (L+1, T, C)
    assert t.states.shape == want_states.shape
    assert (t.states - want_states).abs().max() < TOL
    # The vision tower: each layer's calls, in order, transformers' weights.
    assert t.vision is not None and calls
    ours = [w for layer_calls in t.vision for w in layer_calls]
    layers = list(dict.fromkeys(mid for mid, _ in calls))
    by_layer = [[w for mid, w in calls if mid == layer] for layer in layers]
    assert [len(c) for c in t.vision] == [len(c) for c in by_layer]
    assert len(ours) == len(calls)
    for got_calls, want_calls in zip(t.vision, by_layer, strict=True):
        for got, want in zip(got_calls, want_calls, strict=True):
            # Kept as q and k (a real tower's weights would take GBs), made again exactly.
            assert got.kept is None and got.q is not None
            assert got.shape == tuple(want.shape)
            assert (got.weights() - want).abs().max() < TOL
    # The image's tokens are in the sequence: special, no offset, no word.
    image = [i for i, tid in enumerate(enc.ids) if tid == enc.image_token]
    assert image, "no image token in the sequence"
    # Its block's grids hold every one of them, each once.
    [block] = enc.blocks
    cells = [p for t in block.tiles for p in range(t.start, t.stop)]
    assert sorted(cells) == image
    assert all(enc.tokens.special[i] and enc.tokens.words[i] is None for i in image)
    # The text's own tokens keep their offsets into the text as written: all of it, in order.
    spans = [written[a:b].strip() for a, b in enc.tokens.offsets if b > a]
    assert "".join(s for s in spans if s != PLACEHOLDER) == "".join(written.split()).replace(
        PLACEHOLDER, ""
    )


@pytest.mark.parametrize("name", FAMILIES)
def test_no_placeholder_puts_the_image_first_and_a_text_alone_is_a_language_model(made, name):
    m = made.model(name)
    before, placed = m.encode(TEXT, [gradient()])
    # The image first (between the tokens the model names around one, Qwen's vision start and
    # end), then the text as written.
    assert placed.endswith(TEXT) and m.processor.image_token in placed.removesuffix(TEXT)
    first_text = min(i for i, w in enumerate(before.tokens.words) if w is not None)
    image = [i for i, tid in enumerate(before.ids) if tid == before.image_token]
    assert max(image) < first_text
    # A text alone: no vision tower, the language model's trace.
    ids = m.tokenizer(TEXT).ids
    t = m.trace(ids)
    assert t.vision is None and t.states.shape[1] == len(ids)


def test_placeholders_must_match_the_images(made):
    m = made.model("llava")
    with pytest.raises(TraceError, match=r"images: the text has 2 image placeholders"):
        m.encode(f"{PLACEHOLDER} and {PLACEHOLDER}", [gradient()])


@pytest.mark.parametrize("name", ["llava", "qwen2_vl", "gemma3", "idefics3"])
def test_two_images_side_by_side_are_two_blocks(made, name):
    """Two images before the text (no placeholder): their tokens touch, and each is its own
    block of its own grid."""
    m = made.model(name)
    enc, _ = m.encode(TEXT, [gradient(), gradient(30, 40)])
    assert [b.image for b in enc.blocks] == [0, 1]
    first, second = enc.blocks
    assert first.stop <= second.start
    image = [i for i, tid in enumerate(enc.ids) if tid == enc.image_token]
    cells = [p for b in enc.blocks for t in b.tiles for p in range(t.start, t.stop)]
    assert sorted(cells) == image
    t = m.trace(enc.ids, images=enc)
    assert t.tower is not None and not isinstance(t.tower, str)
