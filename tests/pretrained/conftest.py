from __future__ import annotations

import pytest
import torch

from attnviz.pretrained import PretrainedModel, load_folder


@pytest.fixture(scope="session")
def minilm(minilm_dir) -> PretrainedModel:
    return load_folder(minilm_dir, torch.device("cpu"), name="all-MiniLM-L6-v2")


@pytest.fixture(scope="session")
def tiny_gpt2(tiny_gpt2_dir) -> PretrainedModel:
    return load_folder(tiny_gpt2_dir, torch.device("cpu"))


@pytest.fixture(scope="session")
def hf_bert(minilm_dir):
    """The reference: Hugging Face's BertModel on the same folder, eager attention."""
    from transformers import BertModel

    return BertModel.from_pretrained(minilm_dir, attn_implementation="eager").eval()


@pytest.fixture(scope="session")
def hf_gpt2(tiny_gpt2_dir):
    from transformers import GPT2Model

    return GPT2Model.from_pretrained(tiny_gpt2_dir, attn_implementation="eager").eval()
