"""An output head config.json says is a weight of its own (``tie_word_embeddings`` false, or
absent where the family's config class defaults to false) is read from the checkpoint or the
folder is refused naming it: the token table never stands in for it (the predictions, the logit
lens, What pushed this and generation all read it). A tied head still loads, equal to
transformers. And the advice for a ``pytorch_model.bin`` folder names the class that keeps the
head: following it gives a folder that loads, where ``AutoModel``'s would not.

Every folder is a tiny random checkpoint transformers saves; a head is removed by rewriting its
model.safetensors without it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from attnviz.pretrained import ModelFolderError, load_folder
from tests.support.checkpoints import (
    make_tiny_bert_mlm,
    make_tiny_encoder,
    make_tiny_gpt2,
    make_tiny_llama,
)
from tests.support.checkpoints_decoders import make_decoder
from tests.support.checkpoints_gemma import make_tiny_gemma, make_tiny_neox
from tests.support.checkpoints_vlm import make_tiny_llava, make_tiny_qwen2_vl

CPU = torch.device("cpu")
TOL = 1e-4
TEXT = "The animal didn't cross the street because it was too tired."

# Each native family whose head can be its own: (maker of its folder, the head's tensor as
# saved, the name the refusal gives it). Each config leaves its head untied (set, or its
# config class's default).
UNTIED = {
    "llama": (lambda f: make_tiny_llama(f, "llama-gqa"), "lm_head.weight", "lm_head.weight"),
    "mistral": (lambda f: make_tiny_llama(f, "mistral"), "lm_head.weight", "lm_head.weight"),
    "qwen2": (lambda f: make_decoder(f, "qwen2-yarn"), "lm_head.weight", "lm_head.weight"),
    "qwen3": (lambda f: make_decoder(f, "qwen3-yarn"), "lm_head.weight", "lm_head.weight"),
    "olmo2": (lambda f: make_decoder(f, "olmo2"), "lm_head.weight", "lm_head.weight"),
    "phi3": (lambda f: make_decoder(f, "phi3"), "lm_head.weight", "lm_head.weight"),
    "gemma2": (lambda f: make_tiny_gemma(f, "gemma2-untied"), "lm_head.weight", "lm_head.weight"),
    "gpt_neox": (lambda f: make_tiny_neox(f, "pythia"), "embed_out.weight", "embed_out.weight"),
    "gpt2": (
        lambda f: make_tiny_gpt2(f, tie_word_embeddings=False),
        "lm_head.weight",
        "lm_head.weight",
    ),
    "llava": (make_tiny_llava, "language_model.lm_head.weight", "lm_head.weight"),
    "qwen2_vl": (make_tiny_qwen2_vl, "lm_head.weight", "lm_head.weight"),
    # Encoders: the masked-language-model head's decoder (predictions at [MASK]).
    "bert": (
        lambda f: make_tiny_bert_mlm(f, tie_word_embeddings=False),
        "cls.predictions.decoder.weight",
        "cls.predictions.decoder.weight",
    ),
    "roberta": (
        lambda f: make_tiny_encoder(f, "roberta", masked_lm=True, tie_word_embeddings=False),
        "lm_head.decoder.weight",
        "lm_head.decoder.weight",
    ),
    "distilbert": (
        lambda f: make_tiny_encoder(f, "distilbert", masked_lm=True, tie_word_embeddings=False),
        "vocab_projector.weight",
        "vocab_projector.weight",
    ),
}


def _without(folder: Path, target: Path, key: str) -> Path:
    """A copy of ``folder`` whose model.safetensors lacks tensor ``key``."""
    shutil.copytree(folder, target)
    tensors = load_file(target / "model.safetensors")
    assert key in tensors, sorted(tensors)[:5]
    del tensors[key]
    save_file(tensors, target / "model.safetensors", metadata={"format": "pt"})
    return target


def _config(folder: Path) -> dict:
    return json.loads((folder / "config.json").read_text())


@pytest.mark.parametrize("name", list(UNTIED))
def test_a_missing_untied_head_is_refused_by_name(name, tmp_path):
    make, saved, named = UNTIED[name]
    folder = make(tmp_path / name)
    assert load_folder(folder, CPU) is not None  # whole, it loads
    broken = _without(folder, tmp_path / f"{name}-headless", saved)
    with pytest.raises(ModelFolderError) as err:
        load_folder(broken, CPU)
    message = str(err.value)
    assert f"the checkpoint has no tensor '{named}'" in message, message
    assert "tie_word_embeddings" in message and "does not stand in" in message
    assert "Traceback" not in message


def test_an_untied_gpt2_head_is_read_and_its_logits_are_transformers(tmp_path):
    """GPT-2 with tie_word_embeddings false (a head of its own, perturbed apart from the token
    table): the engine reads the head, not the table, and its logits are GPT2LMHeadModel's."""
    from transformers import GPT2LMHeadModel

    folder = make_tiny_gpt2(tmp_path / "gpt2-untied", tie_word_embeddings=False)
    ours = load_folder(folder, CPU)
    head = load_file(folder / "model.safetensors")["lm_head.weight"]
    assert torch.equal(ours.model.W_U, head.T)
    assert not torch.equal(ours.model.W_U, ours.model.W_E.T)
    theirs = GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager").eval()
    ids = torch.tensor([ours.tokenizer(TEXT).ids])
    with torch.no_grad():
        assert (ours.model.logits(ours.model(ids)) - theirs(ids).logits).abs().max() < TOL


@pytest.mark.parametrize(
    ("make", "model_type"),
    [
        (lambda f: make_tiny_llama(f, "llama-tied-theta"), "llama"),
        (lambda f: make_decoder(f, "qwen3"), "qwen3"),
        (lambda f: make_tiny_gemma(f, "gemma"), "gemma"),
        (lambda f: make_tiny_neox(f, "neox-sequential"), "gpt_neox"),
        (make_tiny_gpt2, "gpt2"),
    ],
)
def test_a_tied_head_still_loads_and_equals_transformers(make, model_type, tmp_path):
    """config.json ties the head (set, or its config class's default): the checkpoint has no
    head, the token table is the unembedding, and the logits are transformers' own."""
    from transformers import AutoModelForCausalLM

    folder = make(tmp_path / model_type)
    assert _config(folder)["model_type"] == model_type
    assert not {"lm_head.weight", "embed_out.weight"} & set(load_file(folder / "model.safetensors"))
    ours = load_folder(folder, CPU)
    assert torch.equal(ours.model.W_U, ours.model.W_E.T)
    theirs = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    ids = torch.tensor([ours.tokenizer(TEXT).ids])
    with torch.no_grad():
        assert (ours.model.logits(ours.model(ids)) - theirs(ids).logits).abs().max() < TOL


def test_a_tied_encoder_head_still_loads(tmp_path):
    """BERT's masked-language-model head tied to the token table (BertConfig's default): its
    checkpoint has no decoder weight, and the head's scores are BertForMaskedLM's."""
    from transformers import BertForMaskedLM

    folder = make_tiny_bert_mlm(tmp_path / "bert")
    assert "cls.predictions.decoder.weight" not in load_file(folder / "model.safetensors")
    ours = load_folder(folder, CPU)
    assert ours.mlm is not None
    theirs = BertForMaskedLM.from_pretrained(folder, attn_implementation="eager").eval()
    ids = torch.tensor([ours.tokenizer(TEXT).ids])
    with torch.no_grad():
        got = ours.mlm(ours.model(ids))
        assert (got - theirs(ids).logits).abs().max() < TOL


def test_llava_reads_a_tie_its_text_config_states(tmp_path):
    """Older LLaVA files state the tie in text_config (LlavaConfig reads it there too): a
    checkpoint without the head then loads, the unembedding its token table."""
    folder = make_tiny_llava(tmp_path / "llava")
    tied = _without(folder, tmp_path / "llava-tied", "language_model.lm_head.weight")
    hf = _config(tied)
    hf.pop("tie_word_embeddings", None)
    hf["text_config"]["tie_word_embeddings"] = True
    (tied / "config.json").write_text(json.dumps(hf))
    ours = load_folder(tied, CPU)
    assert torch.equal(ours.model.W_U, ours.model.W_E.T)


def test_a_tie_that_is_not_true_or_false_is_refused_by_name(tmp_path):
    folder = make_tiny_llama(tmp_path / "llama", "llama-gqa")
    hf = _config(folder)
    (folder / "config.json").write_text(json.dumps({**hf, "tie_word_embeddings": "yes"}))
    with pytest.raises(ModelFolderError, match="tie_word_embeddings must be true or false"):
        load_folder(folder, CPU)


@pytest.mark.parametrize("architectures", [True, False])
def test_the_pickle_advice_keeps_the_head_and_its_folder_loads(tmp_path, architectures):
    """A causal model's weights in pytorch_model.bin only: the refusal's advice names the class
    that keeps the LM head (the one config.json's architectures names, else
    AutoModelForCausalLM); following it gives a folder that loads with the head, where
    AutoModel's conversion loses the head and is then refused naming it."""
    import transformers

    folder = make_tiny_llama(tmp_path / "llama", "llama-gqa")
    head = load_file(folder / "model.safetensors")["lm_head.weight"]
    pickled = tmp_path / "pickled"
    shutil.copytree(folder, pickled)
    torch.save(load_file(pickled / "model.safetensors"), pickled / "pytorch_model.bin")
    (pickled / "model.safetensors").unlink()
    if not architectures:
        hf = _config(pickled)
        del hf["architectures"]
        (pickled / "config.json").write_text(json.dumps(hf))
    with pytest.raises(ModelFolderError, match="has pytorch_model.bin") as err:
        load_folder(pickled, CPU)
    advice = re.search(r"([\w.]+)\.from_pretrained\(folder\)\.save_pretrained\(folder\)",
                       str(err.value))  # fmt: skip
    assert advice is not None, str(err.value)
    named = advice.group(1)
    assert named == ("transformers.LlamaForCausalLM" if architectures else "AutoModelForCausalLM")
    assert "AutoModel.from_pretrained" not in str(err.value)

    # AutoModel (the old advice) writes the body alone: the head is lost, and refused by name.
    body = tmp_path / "body"
    shutil.copytree(pickled, body)
    transformers.AutoModel.from_pretrained(body).save_pretrained(body)
    with pytest.raises(ModelFolderError, match="no tensor 'lm_head.weight'"):
        load_folder(body, CPU)

    # The advice, followed: the head is kept, and the folder loads with it.
    cls = getattr(transformers, named.removeprefix("transformers."))
    cls.from_pretrained(pickled).save_pretrained(pickled)
    ours = load_folder(pickled, CPU)
    assert torch.equal(ours.model.W_U, head.T)
