"""Loading at real sizes: weights memory-mapped and converted once, the parameters' dtype, the
refusal of a model that does not fit, and sharded folders."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from attnviz.engine import device as devices
from attnviz.engine.device import ACTIVATION_MARGIN_BYTES, resolve_dtype
from attnviz.pretrained import ModelFolderError, load_folder
from attnviz.pretrained.folder import _place
from tests.support.checkpoints import make_tiny_llama

CPU = torch.device("cpu")
GB = 1e9


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    return make_tiny_llama(tmp_path_factory.mktemp("load") / "tiny-llama", "llama-tied-theta")


@pytest.fixture
def bf16_dir(llama_dir, tmp_path):
    """The tiny Llama with its weights saved in bfloat16, as the hub ships them."""
    folder = tmp_path / "tiny-bf16"
    shutil.copytree(llama_dir, folder)
    tensors = {k: v.bfloat16() for k, v in load_file(folder / "model.safetensors").items()}
    save_file(tensors, folder / "model.safetensors")
    return folder


def _mapping(path) -> list[tuple[int, int]]:
    """The address ranges where this process maps ``path``."""
    spans = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            if line.rstrip().endswith(str(path)):
                lo, hi = line.split()[0].split("-")
                spans.append((int(lo, 16), int(hi, 16)))
    return spans


def _inside(t: torch.Tensor, spans) -> bool:
    return any(lo <= t.data_ptr() and t.data_ptr() + t.nbytes <= hi for lo, hi in spans)


def test_the_dtype_is_the_checkpoints_on_a_gpu_and_float32_on_a_cpu():
    cuda = torch.device("cuda")  # only named: nothing runs on it
    assert resolve_dtype("auto", CPU, torch.bfloat16) == torch.float32
    assert resolve_dtype("auto", cuda, torch.bfloat16) == torch.bfloat16
    assert resolve_dtype("auto", cuda, torch.float16) == torch.float16
    assert resolve_dtype("auto", cuda, torch.float32) == torch.float32
    assert resolve_dtype("bfloat16", CPU, torch.float32) == torch.bfloat16
    assert resolve_dtype("float32", cuda, torch.bfloat16) == torch.float32
    with pytest.raises(ValueError, match="dtype: 'float64' is not one of auto, float32"):
        resolve_dtype("float64", CPU, None)


def test_a_bfloat16_checkpoint_loads_as_asked(bf16_dir):
    want = load_file(bf16_dir / "model.safetensors")
    widened = load_folder(bf16_dir, CPU)  # auto on a CPU: float32, every value exactly
    assert {p.dtype for p in widened.model.parameters()} == {torch.float32}
    assert torch.equal(widened.model.W_E, want["model.embed_tokens.weight"].float())
    kept = load_folder(bf16_dir, CPU, dtype="bfloat16")
    assert {p.dtype for p in kept.model.parameters()} == {torch.bfloat16}
    w_q = want["model.layers.1.self_attn.q_proj.weight"].T
    assert torch.equal(kept.model.blocks[1].attn.W_Q, w_q)
    ids = torch.tensor([kept.tokenizer("I sat on the river bank").ids])
    with torch.no_grad():
        a = widened.model.logits(widened.model(ids))
        b = kept.model.logits(kept.model(ids))
    assert b.dtype == torch.bfloat16 and torch.allclose(a, b.float(), atol=0.05)


def test_float32_weights_are_read_in_place_from_the_files_mapping(llama_dir):
    """The token table and the norms keep their layout, so their parameters are the file's
    pages (a private mapping), not copies; a transposed tied unembedding is the same storage."""
    m = load_folder(llama_dir, CPU)
    spans = _mapping(llama_dir / "model.safetensors")
    assert spans, "the checkpoint is not mapped"
    mapped = [m.model.W_E, m.model.ln_final.w]
    for block in m.model.blocks:
        mapped += [block.ln1.w, block.ln2.w]
    assert all(_inside(t, spans) for t in mapped)
    assert not any(p.is_meta for p in m.model.parameters())
    # Converted to another dtype, nothing stays in the mapping.
    half = load_folder(llama_dir, CPU, dtype="bfloat16")
    assert not any(_inside(p, spans) for p in half.model.parameters())


def test_views_of_one_storage_are_converted_once_and_stay_views():
    table = torch.randn(50, 8)
    state = {"W_E": table, "W_U": table.T, "ln.w": torch.ones(8), "other": torch.randn(8, 3).T}
    out = _place(dict(state), torch.bfloat16, CPU)
    assert out["W_U"].data_ptr() == out["W_E"].data_ptr()  # one converted storage
    assert torch.equal(out["W_U"], table.T.bfloat16())
    assert torch.equal(out["other"], state["other"].bfloat16())
    assert {t.dtype for t in out.values()} == {torch.bfloat16}
    assert out["other"].is_contiguous()  # converted anyway: written in the engine's layout
    same = _place(dict(state), torch.float32, CPU)  # nothing to convert: nothing copied
    assert all(same[k] is state[k] for k in state)


def _weights(folder) -> int:
    m = load_folder(folder, CPU)
    return sum(p.numel() for p in m.model.parameters())


def test_a_model_that_does_not_fit_is_refused_with_the_figures(llama_dir, monkeypatch):
    n = _weights(llama_dir)
    need32 = n * 4 + ACTIVATION_MARGIN_BYTES
    need16 = n * 2 + ACTIVATION_MARGIN_BYTES
    monkeypatch.setattr(devices, "free_bytes", lambda device: need32 - 1)
    with pytest.raises(ModelFolderError) as err:
        load_folder(llama_dir, CPU)
    msg = str(err.value)
    assert msg.startswith(f"{llama_dir}: model tiny-llama needs {need32 / GB:.1f} GB (")
    assert f"{n * 4 / GB:.1f} GB of float32 weights and 1.1 GB for activations" in msg
    assert f"{(need32 - 1) / GB:.1f} GB free on cpu" in msg
    assert f"--dtype bfloat16 ({need16 / GB:.1f} GB) or --dtype float16" in msg
    assert load_folder(llama_dir, CPU, dtype="bfloat16").model.param_dtype == torch.bfloat16
    monkeypatch.setattr(devices, "free_bytes", lambda device: need16 - 1)
    with pytest.raises(ModelFolderError, match=r"a smaller model \(even --dtype bfloat16 needs"):
        load_folder(llama_dir, CPU)  # float32: even half precision would not fit
    with pytest.raises(ModelFolderError, match=r"free on cpu: a smaller model$"):
        load_folder(llama_dir, CPU, dtype="bfloat16")
    monkeypatch.setattr(devices, "free_bytes", lambda device: need32)  # just enough
    assert load_folder(llama_dir, CPU).model.param_dtype == torch.float32


def test_the_server_refuses_at_start_and_says_why(llama_dir, monkeypatch, capsys):
    from attnviz.cli import main
    from attnviz.settings import get_settings

    for key in ("ATTNVIZ_MODELS", "ATTNVIZ_DTYPE", "ATTNVIZ_DEVICE", "ATTNVIZ_BUILTIN_MODEL"):
        monkeypatch.setenv(key, "")
    monkeypatch.setenv("ATTNVIZ_BUILTIN_MODEL", "false")
    monkeypatch.delenv("ATTNVIZ_MODELS")
    monkeypatch.setattr(devices, "free_bytes", lambda device: 10**8)
    monkeypatch.setattr("attnviz.cli._malloc_settings", lambda: None)  # not this process's
    try:
        with pytest.raises(SystemExit) as exit_:
            main(["serve", "--model", str(llama_dir), "--device", "cpu", "--dtype", "float32"])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert "model tiny-llama needs 1.1 GB" in err and "0.1 GB free on cpu" in err
        assert "Traceback" not in err
        with pytest.raises(SystemExit):
            main(["serve", "--dtype", "float64"])
        assert "argument --dtype: invalid choice: 'float64'" in capsys.readouterr().err
    finally:
        get_settings.cache_clear()


def _shard(folder, parts: int) -> dict[str, torch.Tensor]:
    """Split the folder's model.safetensors into ``parts`` shards with an index."""
    tensors = load_file(folder / "model.safetensors")
    keys = sorted(tensors)
    where = {k: f"model-{i % parts + 1:05d}-of-{parts:05d}.safetensors" for i, k in enumerate(keys)}
    for shard in set(where.values()):
        save_file({k: tensors[k] for k in keys if where[k] == shard}, folder / shard)
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": where}))
    return tensors


def test_a_sharded_folder_loads_the_same_model(llama_dir, tmp_path):
    folder = tmp_path / "sharded"
    shutil.copytree(llama_dir, folder)
    whole = load_folder(llama_dir, CPU).model.state_dict()
    _shard(folder, 3)
    sharded = load_folder(folder, CPU).model.state_dict()
    assert whole.keys() == sharded.keys()
    assert all(torch.equal(whole[k], sharded[k]) for k in whole)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    index["weight_map"]["model.layers.9.mlp.up_proj.weight"] = "model-00001-of-00003.safetensors"
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ModelFolderError, match="the index lists 'model.layers.9.mlp.up_proj"):
        load_folder(folder, CPU)
    index["weight_map"] = {"x": "../elsewhere.safetensors"}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ModelFolderError, match="is not a file name in the folder"):
        load_folder(folder, CPU)
