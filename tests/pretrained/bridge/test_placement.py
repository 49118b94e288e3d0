"""A bridged model spread by a device map (``--device-map``): the placement it reports is
accelerate's own plan for the same capacities (``infer_auto_device_map`` on the model built on
the meta device), its traces with layers offloaded to disk equal those of the model in memory,
and one that fits on none of the devices it may use is refused with the figures."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attnviz.pretrained import ModelFolderError
from attnviz.pretrained.bridge import load_bridged
from attnviz.pretrained.bridge.place import input_device
from tests.support.checkpoints import SENTENCES
from tests.support.checkpoints_bridge import (
    make_tiny_bloom,
    make_tiny_electra,
    make_tiny_starcoder2,
)

CPU = torch.device("cpu")
# How each tiny family names its blocks (for the oracle's map; attnviz reads no names).
BLOCKS = {"starcoder2": "model.layers.{}", "electra": "encoder.layer.{}"}
EMBED = {"starcoder2": "model.embed_tokens", "electra": "embeddings.word_embeddings"}


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("placed")
    return {
        "starcoder2": make_tiny_starcoder2(root / "tiny-starcoder2"),
        "electra": make_tiny_electra(root / "tiny-electra"),
        "bloom": make_tiny_bloom(root / "tiny-bloom"),
    }


def accelerate_plan(folder, cpu_bytes: int) -> dict:
    """accelerate's device map for the folder's model with ``cpu_bytes`` of CPU (and the disk):
    the model built on the meta device, its weights tied, its no-split blocks kept whole."""
    from accelerate import infer_auto_device_map, init_empty_weights
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(folder)
    auto = AutoModel if config.model_type == "electra" else AutoModelForCausalLM
    with init_empty_weights():
        meta = auto.from_config(config)
    meta.tie_weights()
    return dict(
        infer_auto_device_map(
            meta, max_memory={"cpu": cpu_bytes}, no_split_module_classes=meta._no_split_modules
        )
    )


def devices_of(plan: dict, name: str) -> set[str]:
    """The devices ``plan`` puts module ``name`` on: its nearest named ancestor's, else those of
    its parts."""
    above = [k for k in plan if k == "" or name == k or name.startswith(k + ".")]
    if above:
        return {str(plan[max(above, key=len)])}
    return {str(v) for k, v in plan.items() if k.startswith(name + ".")}


# Budgets that put: everything on disk; the embedding on the CPU and the blocks on disk; a
# block split between the CPU and the disk; everything on the CPU.
@pytest.mark.parametrize(
    ("family", "cpu_bytes"),
    [("starcoder2", 60_000), ("starcoder2", 90_000), ("electra", 60_000), ("electra", 90_000),
     ("electra", 120_000)],
)  # fmt: skip
def test_placement_is_accelerates_plan(folders, tmp_path, family, cpu_bytes):
    folder = folders[family]
    m = load_bridged(folder, CPU, device_map="auto", max_memory={"cpu": cpu_bytes},
                     offload_folder=tmp_path / "offload")  # fmt: skip
    plan = accelerate_plan(folder, cpu_bytes)
    placed = m.placement
    assert len(placed["layers"]) == m.cfg.n_layers == 2
    for i, where in enumerate(placed["layers"]):
        assert set(where.split("+")) == devices_of(plan, BLOCKS[family].format(i)), (i, plan)
    assert set(placed["embed"].split("+")) == devices_of(plan, EMBED[family])
    if family == "starcoder2":
        assert set(placed["head"].split("+")) == devices_of(plan, "lm_head")
    assert m.device == input_device(placed) == CPU  # an offloaded module computes on the CPU
    if cpu_bytes == 120_000:
        assert placed == {"embed": "cpu", "layers": ["cpu", "cpu"], "head": "cpu"}


@pytest.mark.parametrize("family", ["starcoder2", "electra", "bloom"])
def test_a_trace_with_layers_on_disk_is_the_one_in_memory(folders, tmp_path, family):
    folder = folders[family]
    whole = load_bridged(folder, CPU)
    spread = load_bridged(folder, CPU, device_map="sequential", max_memory={"cpu": 60_000},
                          offload_folder=tmp_path / "offload")  # fmt: skip
    assert "disk" in "+".join(spread.placement["layers"])
    assert whole.placement == {"embed": "cpu", "layers": ["cpu", "cpu"], "head": "cpu"}
    ids = whole.tokenizer(" ".join(SENTENCES[:2])).ids
    a, b = whole.trace(ids), spread.trace(ids)
    assert (a.states - b.states).abs().max() <= 1e-6
    assert (a.embeddings - b.embeddings).abs().max() <= 1e-6
    if family == "bloom":  # no queries or keys: the forward's weights
        pairs = list(zip(a.forward_pattern, b.forward_pattern, strict=True))
    else:
        pairs = list(zip(a.q + a.k + a.v, b.q + b.k + b.v, strict=True))
        pairs += [(a.pattern(layer), b.pattern(layer)) for layer in range(a.layers)]
    assert pairs and max(float((x - y).abs().max()) for x, y in pairs) <= 1e-6
    assert all(y.device == CPU for _, y in pairs)


def test_a_model_that_fits_on_no_device_is_refused_with_the_figures(folders):
    with pytest.raises(ModelFolderError) as err:
        load_bridged(folders["starcoder2"], CPU, device_map="auto", max_memory={"cpu": 60_000})
    message = str(err.value)
    assert (
        "needs 1.1 GB" in message
        and "0.0 GB free on the devices it may use (cpu 0.0 GB)" in message
    )
    assert "--offload-folder" in message


def test_a_gpu_torch_does_not_see_is_refused(folders, tmp_path):
    gpus = torch.cuda.device_count()
    with pytest.raises(
        ValueError,
        match=rf"--max-memory \(ATTNVIZ_MAX_MEMORY\): GPU {gpus} was named, but torch sees",
    ):
        load_bridged(folders["starcoder2"], CPU, device_map="auto",
                     max_memory={gpus: 10**9, "cpu": 10**9})  # fmt: skip


def test_generation_and_knock_outs_with_layers_on_disk_are_the_ones_in_memory(folders, tmp_path):
    from attnviz.engine.ablate import HeadAblation

    folder = folders["starcoder2"]
    whole = load_bridged(folder, CPU)
    spread = load_bridged(folder, CPU, device_map="auto", max_memory={"cpu": 90_000},
                          offload_folder=tmp_path / "offload")  # fmt: skip
    assert spread.placement["layers"] == ["disk", "disk"] and spread.placement["embed"] == "cpu"
    ids = whole.tokenizer(SENTENCES[0]).ids
    assert spread.continue_ids(ids, 6) == whole.continue_ids(ids, 6)
    knocked = [HeadAblation(layer=1, head=2, mode="zero")]
    with whole.ablating(knocked), spread.ablating(knocked):
        a, b = whole.trace(ids), spread.trace(ids)
    assert (a.states - b.states).abs().max() <= 1e-6
    assert (a.states[-1] - whole.trace(ids).states[-1]).abs().max() > 1e-4  # it knocked one out


def test_a_device_map_with_room_on_the_cpu_keeps_the_model_there(folders):
    m = load_bridged(folders["electra"], CPU, device_map="auto", max_memory={"cpu": 4 * 2**30})
    assert m.device == CPU
    assert m.placement == {"embed": "cpu", "layers": ["cpu", "cpu"], "head": "cpu"}


def test_a_model_object_spread_by_its_caller_reports_its_placement(folders, tmp_path):
    from tokenizers import Tokenizer
    from transformers import AutoModel

    from attnviz.pretrained.bridge.memory import bridge_model

    folder = folders["electra"]
    hf = AutoModel.from_pretrained(folder, device_map="auto", max_memory={"cpu": 60_000},
                                   offload_folder=str(tmp_path / "offload"))  # fmt: skip
    m = bridge_model(hf, Tokenizer.from_file(str(folder / "tokenizer.json")))
    assert m.device == CPU
    assert m.placement == {"embed": "cpu", "layers": ["cpu+disk", "disk"], "head": "disk"}
    want = load_bridged(folder, CPU)
    ids = want.tokenizer(SENTENCES[0]).ids
    assert (m.trace(ids).states - want.trace(ids).states).abs().max() <= 1e-6


def test_the_placement_of_accelerates_plan_over_two_gpus(folders, monkeypatch):
    """Fake capacities of two GPUs and the CPU (none needed here): the placement read from the
    device map accelerate plans for them, balanced as transformers asks (``get_balanced_memory``)."""
    from accelerate import infer_auto_device_map, init_empty_weights
    from accelerate.utils import get_balanced_memory
    from transformers import AutoConfig, AutoModelForCausalLM

    from attnviz.pretrained.bridge.place import capacities, placement_of

    config = AutoConfig.from_pretrained(folders["starcoder2"])
    with init_empty_weights():
        meta = AutoModelForCausalLM.from_config(config)
    meta.tie_weights()
    given = {0: 80_000, 1: 40_000, "cpu": 60_000}
    no_split = meta._no_split_modules
    budget = get_balanced_memory(meta, max_memory=dict(given), no_split_module_classes=no_split)
    plan = dict(infer_auto_device_map(meta, max_memory=budget, no_split_module_classes=no_split))
    meta.hf_device_map = plan
    placed = placement_of(meta, 2, CPU)
    named = {0: "cuda:0", 1: "cuda:1"}
    for i, where in enumerate(placed["layers"]):
        want = {named.get(int(d), d) if d.isdigit() else d
                for d in devices_of(plan, f"model.layers.{i}")}  # fmt: skip
        assert set(where.split("+")) == want
    assert placed["embed"] == "cuda:0" and input_device(placed) == torch.device("cuda:0")
    assert len({*placed["layers"], placed["head"]}) > 1, plan  # spread, not all on one
    # The memory check counts the same devices: the given figures, the disk with a folder.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert capacities(given, None) == {"cuda:0": 80_000, "cuda:1": 40_000, "cpu": 60_000}
    assert capacities({**given, "disk": 5}, None) == capacities(given, None)  # no folder
    assert capacities({**given, "disk": 5}, Path("/nowhere/yet"))["disk"] == 5
