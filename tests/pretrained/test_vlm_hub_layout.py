"""Vision-language folders as people download them (issue 42): the hub's files predate
transformers 5's processor_config.json, so the image processor's settings are in
preprocessor_config.json, which names the processor, and Qwen's config.json keeps its text
model's keys at the top. Every family attnviz serves with images loads from that layout as
from transformers 5's, under both backends, without torchvision (not installed here, and made
unimportable in a child process for the check that must not depend on it): the same processor,
the same sequence, pixels and grids, the same trace."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from attnviz.pretrained.bridge import BridgedModel
from attnviz.pretrained.bridge.multimodal import PLACEHOLDER, load_processor
from attnviz.pretrained.native_vlm import NativeVlm
from attnviz.pretrained.registry import load_model
from tests.support.checkpoints_vlm import TinyVlms, hub_layout
from tests.support.images import gradient

CPU = torch.device("cpu")
NATIVE = ["idefics3", "llava", "qwen2_vl", "qwen2_5_vl", "gemma3", "paligemma2"]
FAMILIES = [*NATIVE, "qwen3_vl"]  # Qwen3-VL: through transformers under either backend
TEXT = f"look: {PLACEHOLDER} the cat sat on the mat"
PICTURE = gradient(90, 40)


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> TinyVlms:
    return TinyVlms(tmp_path_factory.mktemp("vlm-newer"))


@pytest.fixture(scope="module")
def hub(made, tmp_path_factory):
    root = tmp_path_factory.mktemp("vlm-hub")
    folders: dict[str, Path] = {}

    def folder(family: str) -> Path:
        if family not in folders:
            folders[family] = hub_layout(made.folder(family), root / family)
        return folders[family]

    return folder


def test_the_hub_layout_is_the_hubs(hub):
    """What the tests below load: no image processor's settings in processor_config.json (none
    at all for Qwen's, whose processor has no settings of its own), preprocessor_config.json
    naming the processor, Qwen's text model's keys beside vision_config."""
    qwen = hub("qwen2_5_vl")
    assert not (qwen / "processor_config.json").exists()
    pre = json.loads((qwen / "preprocessor_config.json").read_text())
    assert pre["processor_class"] == "Qwen2_5_VLProcessor" and "max_pixels" in pre
    config = json.loads((qwen / "config.json").read_text())
    assert "text_config" not in config and config["rope_scaling"]["type"] == "mrope"
    smol = json.loads((hub("idefics3") / "processor_config.json").read_text())
    assert smol == {"image_seq_len": 16, "processor_class": "Idefics3Processor"}


@pytest.mark.parametrize("family", FAMILIES)
def test_the_processor_reads_either_layout_alike(made, hub, family):
    """The processor of either layout makes the same ids and pixels of a text and an image
    (SmolVLM's 16 tokens a tile and Gemma 3's 16 an image come from processor_config.json)."""
    newer, older = load_processor(made.folder(family)), load_processor(hub(family))
    assert type(older).__name__ == type(newer).__name__
    assert type(older.image_processor) is type(newer.image_processor)
    text = TEXT.replace(PLACEHOLDER, newer.image_token)
    a = newer(text=[text], images=[[PICTURE]], return_tensors="pt")
    b = older(text=[text], images=[[PICTURE]], return_tensors="pt")
    assert set(a) == set(b)
    for key, value in a.items():
        assert torch.equal(value, b[key]), key


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["auto", "transformers"])
@pytest.mark.parametrize("family", FAMILIES)
def test_a_hub_folder_serves_as_the_newer_one(made, hub, family, backend):
    """Loaded from the hub's layout, a model is served as from transformers 5's (natively where
    its language model is a native family, with ``auto``): the same sequence, image blocks and
    inputs, and every layer's weights."""
    m = load_model(hub(family), CPU, backend=backend)
    native = backend == "auto" and family in NATIVE
    assert isinstance(m, NativeVlm if native else BridgedModel) and m.reads_images
    want = made.native(family) if native else made.model(family)
    enc, placed = m.encode(TEXT, [PICTURE])
    wenc, wplaced = want.encode(TEXT, [PICTURE])
    assert (enc.ids, placed, enc.blocks) == (wenc.ids, wplaced, wenc.blocks)
    assert set(enc.inputs) == set(wenc.inputs)
    assert all(torch.equal(v, wenc.inputs[k]) for k, v in enc.inputs.items())
    t, w = m.trace(enc.ids, images=enc), want.trace(wenc.ids, images=wenc)
    t.release()
    w.release()
    for layer in range(t.layers):
        assert torch.equal(t.pattern(layer), w.pattern(layer))


# A child process in which torchvision cannot be imported, whether or not it is installed: it
# loads a Qwen2.5-VL folder in the hub's layout through both backends and encodes an image.
_WITHOUT_TORCHVISION = """
import json, sys
sys.modules["torchvision"] = None  # importing it raises ImportError; find_spec says None
import torch
from attnviz.pretrained.registry import load_model
from tests.support.images import gradient

folder, text = sys.argv[1], sys.argv[2]
out = {}
for backend in ("auto", "transformers"):
    m = load_model(folder, torch.device("cpu"), backend=backend)
    enc, _ = m.encode(text, [gradient(90, 40)])
    out[backend] = {"served": type(m).__name__, "processor": type(m.processor).__name__,
                    "images": type(m.processor.image_processor).__name__, "ids": enc.ids,
                    "video": getattr(m.processor, "video_processor", None) is not None}
import transformers.utils
out["torchvision"] = transformers.utils.is_torchvision_available()
print(json.dumps(out))
"""


@pytest.mark.slow
def test_without_torchvision_the_hubs_qwen_folder_loads(made, hub):
    folder = hub("qwen2_5_vl")
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_WITHOUT_TORCHVISION), str(folder), TEXT],
        capture_output=True, text=True, cwd=Path(__file__).parents[2], timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["torchvision"] is False
    assert out["auto"]["served"] == "NativeVlm" and out["transformers"]["served"] == "BridgedModel"
    want, _ = made.model("qwen2_5_vl").encode(TEXT, [PICTURE])
    for backend in ("auto", "transformers"):
        got = out[backend]
        assert got["processor"] == "Qwen2_5_VLProcessor" and not got["video"]
        assert got["images"] == "Qwen2VLImageProcessorPil"
        assert got["ids"] == want.ids
