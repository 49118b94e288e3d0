"""A trained run saved as a model folder: it loads back (load_folder, the registry) as the very
same model, with a character tokenizer whose ids are the task's; a folder that was tampered
with is refused with the reason."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from attnviz import __version__
from attnviz.engine import Transformer, TransformerConfig, capture
from attnviz.engine.positional import RopeScaling
from attnviz.pretrained import FAMILIES, ModelFolderError, TextTokenizer, load_folder, load_registry
from attnviz.pretrained.families.attnviz import _SINCE
from attnviz.pretrained.native import unknown_characters
from attnviz.training.export import char_tokenizer, save_run
from attnviz.training.tasks import CharLM, CharVocab, Induction
from attnviz.training.trainer import Architecture, Optimiser, Run, train

CPU = torch.device("cpu")
TEXT = 'The "with" statement (see PEP 343) wraps a block:\n  with open(f) as x: pass'


@pytest.fixture(scope="module")
def trained():
    task = CharLM()
    arch = Architecture(layers=2, heads=2, d_model=16, ffn=True)
    return task, train(task, arch, Optimiser(steps=10, lr=1e-2), checkpoints=1)


@pytest.fixture
def folder(trained, tmp_path):
    task, run = trained
    return save_run(run, task, tmp_path, name="charlm-run")


def test_the_folder_loads_back_as_the_same_model(trained, folder):
    task, run = trained
    assert folder.name == "charlm-run"
    assert sorted(p.name for p in folder.iterdir()) == [
        "config.json",
        "model.safetensors",
        "tokenizer.json",
    ]
    m = load_folder(folder, CPU)
    assert (m.name, m.family, m.cfg) == ("charlm-run", "attnviz", run.cfg)
    toks = m.tokenizer(TEXT)
    assert toks.ids == task.vocab.encode(TEXT)
    ids = torch.tensor([toks.ids])  # (1, T)
    names = [f"blocks.{i}.hook_resid_post" for i in range(2)] + ["blocks.0.attn.hook_pattern"]
    with torch.no_grad(), capture(run.model, names) as ours, capture(m.model, names) as theirs:
        a, b = run.model(ids), m.model(ids)
    assert torch.equal(a, b) and torch.equal(run.model.logits(a), m.model.logits(b))
    for name in names:
        assert torch.equal(ours[name], theirs[name]), name
    for name, w in run.model.state_dict().items():
        assert torch.equal(w, m.model.state_dict()[name]), name


def test_config_json_names_every_field_the_task_and_the_vocabulary(trained, folder):
    task, run = trained
    hf = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert hf["model_type"] == "attnviz" and hf["attnviz_version"] == __version__
    assert (hf["task"], hf["vocab"]) == ("charlm", task.vocab.chars)
    for key, value in dataclasses.asdict(run.cfg).items():
        assert hf[key] == value, key
    assert hf["training"] == {
        "steps": 10,
        "state": "done",
        "heldout_loss": run.checkpoints[-1].heldout,
        "heldout_step": 10,
    }
    assert FAMILIES["attnviz"].config(hf) == run.cfg


@pytest.mark.slow
def test_the_registry_serves_a_saved_run(folder):
    reg = load_registry([folder], CPU, builtin=False)
    assert list(reg.models) == ["charlm-run"] and reg.get("charlm-run").family == "attnviz"


def test_the_char_tokenizer_is_one_token_per_character():
    tok = TextTokenizer(char_tokenizer(CharVocab(" abc")))
    t = tok("ab c")
    assert t.ids == [1, 2, 0, 3]
    assert t.labels == ["a", "b", " ", "c"]
    assert t.offsets == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert t.special == [False] * 4 and t.words == [0, 0, 1, 2]
    assert tok.vocab_size == 4


def test_the_char_tokenizer_agrees_with_the_vocabulary_on_a_whole_text():
    task = CharLM()
    text = task.text[:5000]
    tok = char_tokenizer(task.vocab)
    enc = tok.encode(text)
    assert enc.ids == task.vocab.encode(text)
    assert enc.offsets == [(i, i + 1) for i in range(len(text))]
    assert tok.decode(enc.ids) == text
    labels = TextTokenizer(tok)("a\n(b)").labels
    assert labels == ["a", "\n", "(", "b", ")"]


def test_a_character_outside_the_vocabulary_is_refused_not_replaced():
    tok = char_tokenizer(CharVocab("abc"))
    with pytest.raises(Exception, match=r"Unk token `\[UNK\]` not found in the vocabulary"):
        tok.encode("abd")
    assert unknown_characters(tok, "bad cab\u00e9") == " d\u00e9"
    assert unknown_characters(tok, "cab") == ""
    with pytest.raises(ValueError, match="^vocab: characters must be distinct"):
        char_tokenizer(CharVocab("aba"))


def test_an_induction_run_saves_too(tmp_path):
    task = Induction()
    run = train(task, Architecture(layers=1, heads=1, d_model=8), Optimiser(steps=2))
    m = load_folder(save_run(run, task, tmp_path / "ind"), CPU)
    assert m.cfg == run.cfg and m.tokenizer("abz").ids == [0, 1, 25]
    with pytest.raises(ValueError, match="^name: must be a plain folder name"):
        save_run(run, task, tmp_path, name="../up")


def _tamper(folder, **changes):
    path = folder / "config.json"
    hf = json.loads(path.read_text(encoding="utf-8"))
    for key, value in changes.items():
        if value is ...:
            del hf[key]
        else:
            hf[key] = value
    path.write_text(json.dumps(hf), encoding="utf-8")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hidden_sizes": 3}, r"unknown fields 'hidden_sizes'"),
        ({"norm": ...}, r"missing fields 'norm'"),
        ({"causal": "yes"}, r"causal must be bool \(got 'yes'\)"),
        ({"positional": "alibi"}, r"positional must be one of 'none', 'sinusoidal'"),
        ({"n_heads": 3}, r"n_heads 3 does not divide d_model 16"),
        ({"d_ffn": 0}, r"d_ffn must be positive"),
        ({"vocab": "abc"}, r"vocab must be a string of vocab_size \(94\) distinct"),
        ({"d_model": 32}, r"W_E: expected shape \(94, 32\), got \(94, 16\)"),
        ({"model_type": "attnvis"}, r"model_type 'attnvis' is not supported \(supported: "),
        ({"encoder_layers": 1}, r"encoder_layers must be 0: attnviz serves models that read"),
    ],
)
def test_a_tampered_config_is_refused(folder, changes, message):
    _tamper(folder, **changes)
    with pytest.raises(ModelFolderError, match=message) as err:
        load_folder(folder, CPU)
    assert str(folder) in str(err.value)


def test_a_missing_an_extra_or_a_misshapen_tensor_is_refused(folder):
    path = folder / "model.safetensors"
    tensors = load_file(path)
    for edit, message in (
        (lambda t: t.pop("blocks.1.mlp.W_in"), r"has no tensor 'blocks.1.mlp.W_in'"),
        (lambda t: t.update(extra=torch.zeros(2)), r"unexpected tensors extra"),
        (lambda t: t.update(W_U=torch.zeros(16, 5)), r"W_U: expected shape \(16, 94\)"),
        (lambda t: t.update(W_E=t["W_E"].long()), r"W_E: expected floating-point weights"),
    ):
        edited = dict(tensors)
        edit(edited)
        save_file(edited, path)
        with pytest.raises(ModelFolderError, match=message):
            load_folder(folder, CPU)


def test_a_folder_written_before_encoder_layers_existed_still_loads(folder):
    _tamper(folder, encoder_layers=...)
    model = load_folder(folder, CPU)
    assert model.cfg.encoder_layers == 0


def test_a_folder_written_before_max_positions_was_renamed_n_ctx_still_loads(folder, trained):
    path = folder / "config.json"
    hf = json.loads(path.read_text(encoding="utf-8"))
    hf["max_positions"] = hf.pop("n_ctx")
    path.write_text(json.dumps(hf), encoding="utf-8")
    assert load_folder(folder, CPU).cfg == trained[1].cfg


# Every TransformerConfig field added with the general engine (Gemma, Qwen3, OLMo 2, GPT-NeoX,
# Llama 3's rope scaling...), each away from its default, and every field of RopeScaling set.
NEW_FIELDS = {
    "head_dim": 12,
    "rotary_dim": 8,
    "rope_scaling": RopeScaling(
        kind="yarn",
        factor=4.0,
        original_max_positions=16,
        low_freq_factor=1.0,
        high_freq_factor=4.0,
        beta_fast=16.0,
        beta_slow=2.0,
        mscale=1.0,
        mscale_all_dim=0.5,
        attention_factor=1.25,
        short_factor=(1.0, 1.5, 2.0, 2.5),
        long_factor=(3.0, 3.5, 4.0, 4.5),
        truncate=False,
        max_positions=64,
    ),
    "rope_local_base": 100.0,
    "qk_norm": "head",
    "parallel": True,
    "out_norm": True,
    "ln_offset": 1.0,
    "embed_scale": 4.0,
    "attn_scale": 0.125,
    "attn_softcap": 50.0,
    "final_softcap": 30.0,
    "sliding_window": 8,
    "layer_types": ("sliding_attention", "full_attention"),
    "rope_sections": (2, 1, 1),  # of rotary_dim / 2 = 4 pairs
    "rope_interleaved": True,
    "window_in_spans": False,
}


@pytest.fixture(scope="module")
def new_fields_run():
    task = CharLM()
    cfg = TransformerConfig(
        d_model=16,
        n_layers=2,
        n_heads=2,
        n_kv_heads=1,
        causal=True,
        positional="rope",
        rope_style="halves",
        n_ctx=64,
        residual=True,
        norm="pre",
        norm_type="rms",
        final_norm=True,
        ffn=True,
        gated=True,
        activation="silu",
        vocab_size=task.vocab.size,
        unembed=True,
        **NEW_FIELDS,
    )
    torch.manual_seed(0)
    model = Transformer(cfg).eval()
    with torch.no_grad():  # no norm weight left at its initial value
        for w in model.parameters():
            w.add_(0.1 * torch.randn_like(w))
    return task, Run(cfg, model)


# The fields the first attnviz folders named; every field since is in _SINCE, which says what a
# folder written before it means.
FIRST_FIELDS = {
    "d_model", "n_layers", "n_heads", "scale", "causal", "positional", "n_ctx", "rope_base",
    "residual", "norm", "ln_eps", "ln_affine", "embed_norm", "final_norm", "ffn", "d_ffn",
    "activation", "bias", "vocab_size", "unembed", "type_vocab_size",
}  # fmt: skip


def test_every_field_added_since_the_first_folders_has_the_value_an_older_folder_means():
    fields = {f.name for f in dataclasses.fields(TransformerConfig)}
    assert fields - set(_SINCE) == FIRST_FIELDS
    assert set(_SINCE) <= fields


def test_the_fields_under_test_are_every_field_added_since_folders_were_first_written():
    defaults = TransformerConfig(d_model=4)
    assert set(NEW_FIELDS) == set(_SINCE) - {
        "encoder_layers", "norm_type", "rope_style", "gated", "qkv_bias", "n_kv_heads"
    }  # fmt: skip
    for name, value in NEW_FIELDS.items():
        assert value != getattr(defaults, name) == _SINCE[name], name
    scaling = NEW_FIELDS["rope_scaling"]
    assert all(getattr(scaling, f.name) is not None for f in dataclasses.fields(scaling))


def test_a_config_using_every_new_field_round_trips(new_fields_run, tmp_path):
    task, run = new_fields_run
    folder = save_run(run, task, tmp_path, name="every-field")
    hf = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    # JSON's own forms: the nested configuration an object of its fields, a tuple a list.
    assert hf["rope_scaling"]["short_factor"] == [1.0, 1.5, 2.0, 2.5]
    assert hf["rope_scaling"]["kind"] == "yarn" and hf["rope_scaling"]["truncate"] is False
    assert hf["layer_types"] == ["sliding_attention", "full_attention"]
    m = load_folder(folder, CPU)
    assert m.cfg == run.cfg
    assert isinstance(m.cfg.rope_scaling, RopeScaling)
    assert isinstance(m.cfg.layer_types, tuple)
    assert isinstance(m.cfg.rope_scaling.long_factor, tuple)
    ids = torch.tensor([task.vocab.encode("the cat sat on the mat, and then it sat again")])
    with torch.no_grad():
        a, b = run.model(ids), m.model(ids)  # (1, T, C), past the sliding window of 8
    assert ids.shape[1] > 8 and torch.equal(run.model.logits(a), m.model.logits(b))


def test_each_layers_own_window_round_trips(new_fields_run, tmp_path):
    """Windows whose sizes differ from layer to layer (``sliding_window`` a list, no
    ``layer_types``): saved as a list, read back as the same tuple, the same model."""
    task, run = new_fields_run
    cfg = dataclasses.replace(run.cfg, sliding_window=(3, None), layer_types=None)
    model = Transformer(cfg).eval()
    model.load_state_dict(run.model.state_dict())
    folder = save_run(Run(cfg, model), task, tmp_path, name="own-windows")
    hf = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert hf["sliding_window"] == [3, None] and hf["layer_types"] is None
    m = load_folder(folder, CPU)
    assert m.cfg == cfg and [m.cfg.window_of(i) for i in range(2)] == [3, None]
    ids = torch.tensor([task.vocab.encode("the cat sat on the mat, and then it sat again")])
    with torch.no_grad():
        a, b = model(ids), m.model(ids)
    assert torch.equal(model.logits(a), m.model.logits(b))


def test_a_folder_written_before_the_new_fields_reads_them_as_their_defaults(folder, trained):
    _tamper(folder, **dict.fromkeys(NEW_FIELDS, ...))
    assert load_folder(folder, CPU).cfg == trained[1].cfg


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"layer_types": "sliding_attention"}, r"layer_types must be a list of \(one of "),
        ({"layer_types": ["full_attention", "local"]}, r"layer_types\[1\] must be one of 'full_"),
        ({"rope_scaling": 2.0}, r"rope_scaling must be an object \(RopeScaling: kind, factor"),
        ({"rope_scaling": {"kind": "yarn", "scale": 2}}, r"rope_scaling: unknown fields 'scale'"),
        ({"rope_scaling": {"factor": 2.0}}, r"rope_scaling: missing fields kind"),
        ({"rope_scaling": {"kind": "ntk"}}, r"rope_scaling.kind must be one of 'linear', "),
        (
            {"rope_scaling": {"kind": "linear", "factor": True}},
            r"rope_scaling.factor must be float or null \(got True\)",
        ),
        (
            {"rope_scaling": {"kind": "yarn", "long_factor": [1.0, "2"]}},
            r"rope_scaling.long_factor\[1\] must be float \(got '2'\)",
        ),
        ({"rope_scaling": {"kind": "llama3"}}, r"rope_scaling: rope scaling 'llama3' needs "),
        ({"rope_local_base": 0}, r"rope_local_base must be positive \(got 0.0\)"),
        ({"qk_norm": True}, r"qk_norm must be one of 'none', 'head', 'proj' \(got True\)"),
        (
            {"sliding_window": 2.5},
            r"sliding_window must be int or a list of \(int or null\) or null \(got 2.5\)",
        ),
        ({"sliding_window": [2, None]}, r"sliding_window names each layer's window: layer_types "),
    ],
)
def test_a_tampered_new_field_is_refused_naming_it(new_fields_run, tmp_path, changes, message):
    task, run = new_fields_run
    folder = save_run(run, task, tmp_path, name="every-field")
    _tamper(folder, **changes)
    with pytest.raises(ModelFolderError, match=message):
        load_folder(folder, CPU)
