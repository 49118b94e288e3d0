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
from attnviz.engine import capture
from attnviz.pretrained import FAMILIES, ModelFolderError, TextTokenizer, load_folder, load_registry
from attnviz.pretrained.native import unknown_characters
from attnviz.training.export import char_tokenizer, save_run
from attnviz.training.tasks import CharLM, CharVocab, Induction
from attnviz.training.trainer import Architecture, Optimiser, train

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
